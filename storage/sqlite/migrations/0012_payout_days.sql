-- The dashboard's chart: per workspace and UTC day of creation (days since
-- the Unix epoch), how many payouts are in progress (submitted, held or
-- not), completed and failed. A create adds 1 to submitted; a settlement
-- moves 1 from submitted to completed or failed; both in the transaction
-- that makes the change, so the counters always equal a count over the
-- payouts. The chart reads at most one row a day.
CREATE TABLE payout_days (
    workspace_id TEXT    NOT NULL REFERENCES workspaces (id),
    day          INTEGER NOT NULL,
    submitted    INTEGER NOT NULL DEFAULT 0 CHECK (submitted >= 0),
    completed    INTEGER NOT NULL DEFAULT 0 CHECK (completed >= 0),
    failed       INTEGER NOT NULL DEFAULT 0 CHECK (failed >= 0),
    PRIMARY KEY (workspace_id, day)
) STRICT, WITHOUT ROWID;

INSERT INTO payout_days (workspace_id, day, submitted, completed, failed)
SELECT workspace_id, created_at / 86400000000,
    sum(status = 'submitted'), sum(status = 'completed'), sum(status = 'failed')
FROM payouts GROUP BY workspace_id, created_at / 86400000000;
