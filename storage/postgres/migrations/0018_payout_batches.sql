-- Mass payouts (contract, section 12). A batch is one row: its record and
-- its items, one per payout it was asked for, in request order, with the
-- answer each got (code 0 for an accepted one) and what it asked for, by
-- which a replay of the batch is compared. The items are one JSON array
-- (sqlcore's batchItem): written once, never changed and read whole, they
-- cost one row instead of a thousand. An accepted item's payout is a
-- payouts row like any other, which names the batch that created it (NULL
-- for a payout created alone: adding a column without a default rewrites nothing).
-- Like the other tables a create writes, it does not check its workspace
-- with a foreign key (migration 0015).
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
    items           BYTEA NOT NULL,
    CONSTRAINT payout_batches_batch_id UNIQUE (workspace_id, batch_id)
);
