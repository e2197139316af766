-- The 24-hour window moves onto the balance row that every create already
-- writes (sqlcore/controls.go): a create whose policy and address the
-- store knows (controls_version unchanged) is judged by its debit alone,
-- without reading the policy, the window or the address book. No index
-- holds these columns, so the balance's updates stay HOT.

-- A new random value with every change of the policy or the address book.
ALTER TABLE balances ADD COLUMN controls_version BIGINT NOT NULL DEFAULT 0;
-- While the workspace has a daily limit: window_spent is the sum of its
-- payouts created after window_pos that have not failed; no payout was
-- created after window_pos and before window_next (NULL: none after it).
-- window_pos is NULL without a daily limit.
ALTER TABLE balances ADD COLUMN window_pos TIMESTAMPTZ;
ALTER TABLE balances ADD COLUMN window_spent BIGINT NOT NULL DEFAULT 0;
ALTER TABLE balances ADD COLUMN window_next TIMESTAMPTZ;

-- The state of each workspace with a daily limit, from its payouts of the
-- last 24 hours.
UPDATE balances SET window_pos = date_trunc('milliseconds', now()) - interval '24 hours'
    WHERE workspace_id IN (SELECT workspace_id FROM payout_policies WHERE daily_limit IS NOT NULL);
UPDATE balances SET
    window_spent = (SELECT COALESCE(SUM(x.amount), 0) FROM payouts x
        WHERE x.workspace_id = balances.workspace_id AND x.created_at > balances.window_pos AND x.status <> 'failed'),
    window_next = (SELECT MIN(x.created_at) FROM payouts x
        WHERE x.workspace_id = balances.workspace_id AND x.created_at > balances.window_pos)
    WHERE window_pos IS NOT NULL;

DROP TABLE payout_spend;
ALTER TABLE payout_policies DROP COLUMN spend_hour, DROP COLUMN spend_pos, DROP COLUMN spend_expired;
