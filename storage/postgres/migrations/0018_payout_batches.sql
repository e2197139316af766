-- Mass payouts (contract, section 12). A batch is its record and one item
-- per payout it was asked for, in request order, with the answer that item
-- got (code 0 for an accepted one) and what it asked for, by which a replay
-- of the batch is compared. An accepted item's payout is a payouts row like
-- any other, which names the batch that created it (NULL for a payout
-- created alone: adding a column without a default rewrites nothing).
-- Like the other tables a create writes, neither checks its workspace with
-- a foreign key (migration 0015); the items check their batch, which the
-- same statement inserts.
ALTER TABLE payouts ADD COLUMN batch_id TEXT;

CREATE TABLE payout_batches (
    seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id    TEXT NOT NULL,
    batch_id        TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    all_or_nothing  BOOLEAN NOT NULL,
    accepted        INTEGER NOT NULL,
    refused         INTEGER NOT NULL,
    accepted_amount BIGINT NOT NULL,
    CONSTRAINT payout_batches_batch_id UNIQUE (workspace_id, batch_id)
);

CREATE TABLE payout_batch_items (
    batch_seq BIGINT NOT NULL REFERENCES payout_batches (seq),
    position  INTEGER NOT NULL,
    payout_id TEXT NOT NULL,
    amount    BIGINT NOT NULL,
    asset     TEXT NOT NULL,
    network   TEXT NOT NULL,
    address   TEXT NOT NULL,
    payer_id  TEXT NOT NULL,
    code      INTEGER NOT NULL,
    message   TEXT NOT NULL,
    created   BOOLEAN NOT NULL,
    PRIMARY KEY (batch_seq, position)
);
