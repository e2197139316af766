-- A delivered event keeps its successful attempt on its own row, in the
-- update that marks it delivered, instead of in a row of delivery_attempts
-- with its index entries and its foreign key check. Failed attempts stay
-- rows of delivery_attempts; a resend moves the delivered attempt there
-- before it clears these. Nullable columns without defaults: adding them
-- rewrites nothing.
ALTER TABLE events ADD COLUMN delivered_at TIMESTAMPTZ;
ALTER TABLE events ADD COLUMN delivered_status INTEGER;
ALTER TABLE events ADD COLUMN delivered_latency_ns BIGINT;
ALTER TABLE events ADD COLUMN delivered_head TEXT;
