-- Fenced payout hand-off: each claim records its owner and a fencing token
-- that grows with every claim of the payout; recording the hand-off
-- succeeds only for the latest claim, so a dispatcher whose lease ran out
-- while its processor call was slow cannot record over the claim that took
-- the payout over.
ALTER TABLE payouts ADD COLUMN handoff_owner TEXT;
ALTER TABLE payouts ADD COLUMN handoff_token INTEGER NOT NULL DEFAULT 0;
