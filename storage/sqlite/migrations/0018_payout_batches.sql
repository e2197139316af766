-- Mass payouts (contract, section 12). A batch is its record and one item
-- per payout it was asked for, in request order, with the answer that item
-- got (code 0 for an accepted one) and what it asked for, by which a replay
-- of the batch is compared. An accepted item's payout is a payouts row like
-- any other, which names the batch that created it (NULL for a payout
-- created alone).
ALTER TABLE payouts ADD COLUMN batch_id TEXT;

CREATE TABLE payout_batches (
    seq             INTEGER PRIMARY KEY,
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id),
    batch_id        TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    all_or_nothing  INTEGER NOT NULL,
    accepted        INTEGER NOT NULL,
    refused         INTEGER NOT NULL,
    accepted_amount INTEGER NOT NULL,
    CONSTRAINT payout_batches_batch_id UNIQUE (workspace_id, batch_id)
) STRICT;

CREATE TABLE payout_batch_items (
    batch_seq INTEGER NOT NULL REFERENCES payout_batches (seq),
    position  INTEGER NOT NULL,
    payout_id TEXT NOT NULL,
    amount    INTEGER NOT NULL,
    asset     TEXT NOT NULL,
    network   TEXT NOT NULL,
    address   TEXT NOT NULL,
    payer_id  TEXT NOT NULL,
    code      INTEGER NOT NULL,
    message   TEXT NOT NULL,
    created   INTEGER NOT NULL,
    PRIMARY KEY (batch_seq, position)
) STRICT, WITHOUT ROWID;
