-- A delivered event keeps its successful attempt on its own row, in the
-- update that marks it delivered, instead of in a row of delivery_attempts
-- with its index entries, which the writer would otherwise write for every
-- event it delivers. Failed attempts stay rows of delivery_attempts;
-- a resend moves the delivered attempt there before it clears these.
ALTER TABLE events ADD COLUMN delivered_at INTEGER;
ALTER TABLE events ADD COLUMN delivered_status INTEGER;
ALTER TABLE events ADD COLUMN delivered_latency_ns INTEGER;
ALTER TABLE events ADD COLUMN delivered_head TEXT;
