-- The outbox claim reads the pending events that are due, soonest first,
-- through an index on when they are due: events waiting for a retry (a
-- receiver that is down can leave tens of thousands) are not read at all.
-- It replaces the index of pending events by seq, so the write path keeps
-- the same number of indexes.
-- A pending event without a due time (none is written so) would never be
-- claimed: make it due now.
UPDATE events SET next_attempt_at = created_at WHERE state = 'pending' AND next_attempt_at IS NULL;
DROP INDEX events_pending;
CREATE INDEX events_due ON events (next_attempt_at, seq) WHERE state = 'pending';
