-- A payout waiting for its hand-off to the processor is a row of
-- payout_handoffs (its seq) instead of an entry of the partial index
-- payouts_handoff_due. The record of a hand-off changed handed_off_at, a
-- column of that index's condition, so every record wrote a new version of
-- the payout into each of its five other indexes as well; now it
-- deletes the queue's row and updates no indexed column of the payout, a
-- HOT update on the room fillfactor 50 keeps (migration 0008). A create
-- inserts the row with the payout; a settlement deletes it with the
-- payout's move, so a payout settled before its hand-off leaves none
-- behind. The claim reads the queue in order and judges each payout by its
-- own row as before (submitted, not handed off, not held, lease free). No
-- foreign key: each check would be a query of its own, and the row is
-- written only beside its payout's.
CREATE TABLE payout_handoffs (
    seq BIGINT PRIMARY KEY
);

INSERT INTO payout_handoffs (seq)
SELECT seq FROM payouts WHERE status = 'submitted' AND handed_off_at IS NULL;

DROP INDEX payouts_handoff_due;
