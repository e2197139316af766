-- Contract section 9: settlement details of completed payouts, and the
-- list endpoints' filters.

-- The amount sent and the network fee, in the asset's units, as the
-- processor reported them with the completion: exact decimal text, NULL
-- until reported.
ALTER TABLE payouts ADD COLUMN asset_amount TEXT;
ALTER TABLE payouts ADD COLUMN network_fee TEXT;

-- Listings run newest first by (created_at, seq), so that a created_at
-- range and the page position are one index range. They replace the
-- indexes by seq, so payouts keep the same number of indexes; orders gain
-- the status and payer ones the payout listings already had.
DROP INDEX payouts_workspace_seq;
DROP INDEX payouts_workspace_status_seq;
DROP INDEX payouts_workspace_payer_seq;
CREATE INDEX payouts_workspace_created ON payouts (workspace_id, created_at, seq);
CREATE INDEX payouts_workspace_status_created ON payouts (workspace_id, status, created_at, seq);
CREATE INDEX payouts_workspace_payer_created ON payouts (workspace_id, payer_id, created_at, seq);

DROP INDEX orders_workspace_seq;
CREATE INDEX orders_workspace_created ON orders (workspace_id, created_at, seq);
CREATE INDEX orders_workspace_status_created ON orders (workspace_id, status, created_at, seq);
CREATE INDEX orders_workspace_payer_created ON orders (workspace_id, payer_id, created_at, seq);
