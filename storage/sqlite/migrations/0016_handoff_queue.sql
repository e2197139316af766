-- PostgreSQL's migration 0016 moves the payouts waiting for their hand-off
-- from a partial index of payouts to a table of their own, so that recording
-- a hand-off is a HOT update there instead of a new version of the payout in
-- every index. SQLite rewrites a row in place and removes one entry of the
-- partial index, so it keeps payouts_handoff_due. This migration keeps the
-- two schemas' versions in step.
SELECT 1;
