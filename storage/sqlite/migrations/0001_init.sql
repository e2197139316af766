-- The first schema of payoutkit on SQLite. Times are INTEGER microseconds
-- since the Unix epoch (UTC), NULL when unset; amounts are INTEGER cents.
-- Every listed table has seq, its rowid, which orders its rows for keyset
-- pagination; rows are never deleted, so seq only grows.

CREATE TABLE workspaces (
    id             TEXT PRIMARY KEY,
    name           TEXT NOT NULL,
    webhook_url    TEXT NOT NULL DEFAULT '',
    webhook_secret TEXT NOT NULL,
    created_at     INTEGER NOT NULL
) STRICT;

-- One row per workspace, written by every money movement: kept narrow.
CREATE TABLE balances (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces (id),
    available    INTEGER NOT NULL DEFAULT 0 CHECK (available >= 0),
    in_progress  INTEGER NOT NULL DEFAULT 0 CHECK (in_progress >= 0)
) STRICT;

CREATE TABLE staff_users (
    email         TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id),
    password_hash TEXT NOT NULL,
    created_at    INTEGER NOT NULL
) STRICT;

CREATE TABLE api_keys (
    prefix       TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    hash         BLOB NOT NULL CHECK (length(hash) = 32),
    created_at   INTEGER NOT NULL,
    revoked_at   INTEGER,
    last_used_at INTEGER
) STRICT;
CREATE INDEX api_keys_workspace ON api_keys (workspace_id, created_at DESC, prefix DESC);

CREATE TABLE payouts (
    seq                 INTEGER PRIMARY KEY,
    workspace_id        TEXT NOT NULL REFERENCES workspaces (id),
    payout_id           TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN ('submitted', 'completed', 'failed')),
    amount              INTEGER NOT NULL CHECK (amount > 0),
    asset               TEXT NOT NULL,
    network             TEXT NOT NULL,
    address             TEXT NOT NULL,
    payer_id            TEXT NOT NULL,
    txid                TEXT NOT NULL DEFAULT '',
    failure_reason      TEXT NOT NULL DEFAULT '',
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    handed_off_at       INTEGER,
    handoff_lease_until INTEGER,
    CONSTRAINT payouts_payout_id UNIQUE (workspace_id, payout_id)
) STRICT;
CREATE INDEX payouts_workspace_seq ON payouts (workspace_id, seq);
CREATE INDEX payouts_handoff_due ON payouts (seq) WHERE status = 'submitted' AND handed_off_at IS NULL;

CREATE TABLE orders (
    seq          INTEGER PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    order_id     TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'paid')),
    amount       INTEGER NOT NULL CHECK (amount > 0),
    payer_id     TEXT NOT NULL DEFAULT '',
    description  TEXT NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    paid_at      INTEGER,
    CONSTRAINT orders_order_id UNIQUE (workspace_id, order_id)
) STRICT;
CREATE INDEX orders_workspace_seq ON orders (workspace_id, seq);

-- The available balance is the sum of a workspace's entries. Each order is
-- credited once, each payout debited once and refunded at most once: the
-- UNIQUE constraint is the last line of defence against doing either twice.
CREATE TABLE ledger_entries (
    seq          INTEGER PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    kind         TEXT NOT NULL CHECK (kind IN ('order_credit', 'payout_debit', 'payout_refund')),
    amount       INTEGER NOT NULL CHECK ((kind = 'payout_debit') = (amount < 0) AND amount <> 0),
    ref          TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    CONSTRAINT ledger_entries_once UNIQUE (workspace_id, kind, ref)
) STRICT;
CREATE INDEX ledger_entries_workspace_seq ON ledger_entries (workspace_id, seq);

-- The outbox: events with their delivery state.
CREATE TABLE events (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL CONSTRAINT events_id UNIQUE,
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id),
    type            TEXT NOT NULL,
    subject         TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    body            BLOB NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER,
    last_error      TEXT NOT NULL DEFAULT '',
    lease_owner     TEXT,
    lease_until     INTEGER
) STRICT;
CREATE INDEX events_workspace_seq ON events (workspace_id, seq);
-- Claiming walks the pending events oldest first and looks for an earlier
-- pending event of the same subject; both indexes hold pending events only.
CREATE INDEX events_pending ON events (seq) WHERE state = 'pending';
CREATE INDEX events_pending_subject ON events (workspace_id, subject, seq) WHERE state = 'pending';

CREATE TABLE delivery_attempts (
    seq           INTEGER PRIMARY KEY,
    event_id      TEXT NOT NULL REFERENCES events (id),
    attempt       INTEGER NOT NULL,
    attempted_at  INTEGER NOT NULL,
    status_code   INTEGER NOT NULL,
    latency_ns    INTEGER NOT NULL,
    error_message TEXT NOT NULL,
    response_head TEXT NOT NULL
) STRICT;
CREATE INDEX delivery_attempts_event ON delivery_attempts (event_id, seq);
