-- Contract section 10: the workspace's payout policy, its address book,
-- approval holds, and the security log of section 11.

-- A payout above the workspace's approval_over is held ('pending') until
-- staff approve or reject it; the hand-off's index leaves held payouts out,
-- so that the claim never walks them.
ALTER TABLE payouts ADD COLUMN approval TEXT NOT NULL DEFAULT 'none'
    CHECK (approval IN ('none', 'pending', 'approved', 'rejected'));
DROP INDEX payouts_handoff_due;
CREATE INDEX payouts_handoff_due ON payouts (seq)
    WHERE status = 'submitted' AND handed_off_at IS NULL AND approval <> 'pending';

-- Whether the workspace's policy can refuse or hold a payout, next to the
-- balance that every create debits: a create reads the policy only when it
-- is set (the debit carries "NOT controls"). No index holds it, so the
-- balance's updates stay HOT.
ALTER TABLE balances ADD COLUMN controls BOOLEAN NOT NULL DEFAULT false;

-- Limits in cents, NULL when unset; cooling_off in microseconds. spend_*
-- is the state of the 24-hour window's boundary hour (sqlcore/controls.go).
CREATE TABLE payout_policies (
    workspace_id      TEXT PRIMARY KEY REFERENCES workspaces (id),
    max_payout        BIGINT CHECK (max_payout > 0),
    daily_limit       BIGINT CHECK (daily_limit > 0),
    approval_over     BIGINT CHECK (approval_over > 0),
    address_allowlist BOOLEAN NOT NULL,
    cooling_off       BIGINT NOT NULL CHECK (cooling_off >= 0),
    spend_hour        BIGINT NOT NULL,
    spend_pos         TIMESTAMPTZ,
    spend_expired     BIGINT NOT NULL
);

-- The sums of a workspace's payouts that have not failed, per hour of
-- their creation, while it has a daily limit.
CREATE TABLE payout_spend (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    hour         BIGINT NOT NULL,
    amount       BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, hour)
);

CREATE TABLE address_book (
    seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    network      TEXT NOT NULL,
    address      TEXT NOT NULL,
    -- The address as its network reads it (address.Normalize).
    address_key  TEXT NOT NULL,
    label        TEXT NOT NULL,
    added_at     TIMESTAMPTZ NOT NULL,
    usable_from  TIMESTAMPTZ NOT NULL,
    CONSTRAINT address_book_entry UNIQUE (workspace_id, network, address_key)
);

-- Append-only: nothing updates or deletes a row.
CREATE TABLE security_log (
    seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    at           TIMESTAMPTZ NOT NULL,
    action       TEXT NOT NULL,
    actor        TEXT NOT NULL,
    client_addr  TEXT NOT NULL,
    details      TEXT NOT NULL
);
CREATE INDEX security_log_workspace_seq ON security_log (workspace_id, seq);
