-- The first schema of payoutkit on PostgreSQL. Times are TIMESTAMPTZ
-- (microseconds), NULL when unset; amounts are BIGINT cents. Every listed
-- table has seq, an identity column, which orders its rows for keyset
-- pagination. Migrations 0015 and 0017 drop the foreign keys to workspaces
-- of balances, payouts, ledger_entries and events (and of customers and
-- payout_days, from 0002 and 0012); the others hold (docs/STORAGE.md).

CREATE TABLE workspaces (
    id             TEXT PRIMARY KEY,
    name           TEXT NOT NULL,
    webhook_url    TEXT NOT NULL DEFAULT '',
    webhook_secret TEXT NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL
);

-- One row per workspace, written by every money movement: kept narrow.
CREATE TABLE balances (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces (id), -- foreign key dropped by 0017
    available    BIGINT NOT NULL DEFAULT 0 CHECK (available >= 0),
    in_progress  BIGINT NOT NULL DEFAULT 0 CHECK (in_progress >= 0)
) WITH (fillfactor = 50); -- room for HOT updates of the hot row

CREATE TABLE staff_users (
    email         TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id),
    password_hash TEXT NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL
);

CREATE TABLE api_keys (
    prefix       TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    hash         BYTEA NOT NULL CHECK (length(hash) = 32),
    created_at   TIMESTAMPTZ NOT NULL,
    revoked_at   TIMESTAMPTZ,
    last_used_at TIMESTAMPTZ
);
CREATE INDEX api_keys_workspace ON api_keys (workspace_id, created_at DESC, prefix DESC);

CREATE TABLE payouts (
    seq                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id        TEXT NOT NULL REFERENCES workspaces (id), -- foreign key dropped by 0015
    payout_id           TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN ('submitted', 'completed', 'failed')),
    amount              BIGINT NOT NULL CHECK (amount > 0),
    asset               TEXT NOT NULL,
    network             TEXT NOT NULL,
    address             TEXT NOT NULL,
    payer_id            TEXT NOT NULL,
    txid                TEXT NOT NULL DEFAULT '',
    failure_reason      TEXT NOT NULL DEFAULT '',
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL,
    handed_off_at       TIMESTAMPTZ,
    handoff_lease_until TIMESTAMPTZ,
    CONSTRAINT payouts_payout_id UNIQUE (workspace_id, payout_id)
);
CREATE INDEX payouts_workspace_seq ON payouts (workspace_id, seq);
CREATE INDEX payouts_handoff_due ON payouts (seq) WHERE status = 'submitted' AND handed_off_at IS NULL;

CREATE TABLE orders (
    seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    order_id     TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'paid')),
    amount       BIGINT NOT NULL CHECK (amount > 0),
    payer_id     TEXT NOT NULL DEFAULT '',
    description  TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    paid_at      TIMESTAMPTZ,
    CONSTRAINT orders_order_id UNIQUE (workspace_id, order_id)
);
CREATE INDEX orders_workspace_seq ON orders (workspace_id, seq);

-- The available balance is the sum of a workspace's entries. Each order is
-- credited once, each payout debited once and refunded at most once: the
-- UNIQUE constraint is the last line of defence against doing either twice.
CREATE TABLE ledger_entries (
    seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id), -- foreign key dropped by 0015
    kind         TEXT NOT NULL CHECK (kind IN ('order_credit', 'payout_debit', 'payout_refund')),
    amount       BIGINT NOT NULL CHECK ((kind = 'payout_debit') = (amount < 0) AND amount <> 0),
    ref          TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    CONSTRAINT ledger_entries_once UNIQUE (workspace_id, kind, ref)
);
CREATE INDEX ledger_entries_workspace_seq ON ledger_entries (workspace_id, seq);

-- The outbox: events with their delivery state.
CREATE TABLE events (
    seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              TEXT NOT NULL CONSTRAINT events_id UNIQUE,
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id), -- foreign key dropped by 0015
    type            TEXT NOT NULL,
    subject         TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    body            BYTEA NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ,
    last_error      TEXT NOT NULL DEFAULT '',
    lease_owner     TEXT,
    lease_until     TIMESTAMPTZ
);
CREATE INDEX events_workspace_seq ON events (workspace_id, seq);
-- Claiming walks the pending events oldest first and looks for an earlier
-- pending event of the same subject; both indexes hold pending events only.
CREATE INDEX events_pending ON events (seq) WHERE state = 'pending';
CREATE INDEX events_pending_subject ON events (workspace_id, subject, seq) WHERE state = 'pending';

CREATE TABLE delivery_attempts (
    seq           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id      TEXT NOT NULL REFERENCES events (id),
    attempt       INTEGER NOT NULL,
    attempted_at  TIMESTAMPTZ NOT NULL,
    status_code   INTEGER NOT NULL,
    latency_ns    BIGINT NOT NULL,
    error_message TEXT NOT NULL,
    response_head TEXT NOT NULL
);
CREATE INDEX delivery_attempts_event ON delivery_attempts (event_id, seq);
