-- The staff portal: per-customer totals, portal sessions, the sign-in
-- throttle, and the indexes behind filtered listings.

-- One row per payer_id that money moved for, with its totals, changed in the
-- same transaction as the payout or order that moves them. seq (an identity)
-- orders customers by their first movement, for keyset pagination.
CREATE TABLE customers (
    seq           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id), -- foreign key dropped by 0015
    payer_id      TEXT NOT NULL,
    paid_in       BIGINT NOT NULL DEFAULT 0 CHECK (paid_in >= 0),
    paid_out      BIGINT NOT NULL DEFAULT 0 CHECK (paid_out >= 0),
    in_progress   BIGINT NOT NULL DEFAULT 0 CHECK (in_progress >= 0),
    first_seen_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT customers_payer UNIQUE (workspace_id, payer_id)
);
CREATE INDEX customers_workspace_seq ON customers (workspace_id, seq);

-- The customers of the rows written before this migration: every payout
-- (from its creation, as the store does), and every paid order that names a
-- payer, numbered in order of their first movement.
INSERT INTO customers (workspace_id, payer_id, paid_in, paid_out, in_progress, first_seen_at)
SELECT workspace_id, payer_id, SUM(paid_in), SUM(paid_out), SUM(in_progress), MIN(at)
FROM (
    SELECT workspace_id, payer_id, 0 AS paid_in,
        CASE WHEN status = 'completed' THEN amount ELSE 0 END AS paid_out,
        CASE WHEN status = 'submitted' THEN amount ELSE 0 END AS in_progress,
        created_at AS at
    FROM payouts
    UNION ALL
    SELECT workspace_id, payer_id, amount, 0, 0, paid_at
    FROM orders WHERE status = 'paid' AND payer_id <> ''
) AS movements
GROUP BY workspace_id, payer_id
ORDER BY MIN(at), workspace_id, payer_id;

-- Portal sessions, by the SHA-256 of their token. A removed user's sessions
-- are deleted with them, explicitly, in the same transaction.
CREATE TABLE staff_sessions (
    token_hash   BYTEA PRIMARY KEY CHECK (length(token_hash) = 32),
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    staff_email  TEXT NOT NULL REFERENCES staff_users (email),
    created_at   TIMESTAMPTZ NOT NULL,
    last_seen_at TIMESTAMPTZ NOT NULL
);
-- Purging looks for idle and for old sessions; removing a user or changing
-- a password for a user's sessions.
CREATE INDEX staff_sessions_last_seen ON staff_sessions (last_seen_at);
CREATE INDEX staff_sessions_created ON staff_sessions (created_at);
CREATE INDEX staff_sessions_email ON staff_sessions (staff_email);

-- Failed sign-ins per e-mail in the current window.
CREATE TABLE signin_failures (
    email        TEXT PRIMARY KEY,
    failures     INTEGER NOT NULL CHECK (failures > 0),
    window_start TIMESTAMPTZ NOT NULL
);

-- Filtered payout listings, newest first, without a scan of the workspace.
CREATE INDEX payouts_workspace_status_seq ON payouts (workspace_id, status, seq);
CREATE INDEX payouts_workspace_payer_seq ON payouts (workspace_id, payer_id, seq);

-- A subject's events, for SubjectEvents and for the claim's look for an
-- earlier pending event of the same subject: a subject has two or three
-- events, so one full index serves both, and an event's delivery state
-- changes no longer touch it.
DROP INDEX events_pending_subject;
CREATE INDEX events_subject ON events (workspace_id, subject, seq);
