-- The claim passes over the workspaces whose share of delivery workers is
-- busy (a receiver that hangs, with thousands of events due). With the
-- workspace in the index of due events, passing over one of its events is
-- an index read, not a read of the event's row.
DROP INDEX events_due;
CREATE INDEX events_due ON events (next_attempt_at, workspace_id, seq) WHERE state = 'pending';
