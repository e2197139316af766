-- The dashboard's chart: per workspace and UTC day of creation (days since
-- the Unix epoch), how many payouts are in progress (submitted, held or
-- not), completed and failed. A create adds 1 to submitted; a settlement
-- moves 1 from submitted to completed or failed; both in the statement
-- that makes the change, so the counters always equal a count over the
-- payouts. The chart reads at most one row a day.
CREATE TABLE payout_days (
    workspace_id TEXT   NOT NULL REFERENCES workspaces (id), -- foreign key dropped by 0015
    day          BIGINT NOT NULL,
    submitted    BIGINT NOT NULL DEFAULT 0 CHECK (submitted >= 0),
    completed    BIGINT NOT NULL DEFAULT 0 CHECK (completed >= 0),
    failed       BIGINT NOT NULL DEFAULT 0 CHECK (failed >= 0),
    PRIMARY KEY (workspace_id, day)
);

INSERT INTO payout_days (workspace_id, day, submitted, completed, failed)
SELECT workspace_id, ((created_at AT TIME ZONE 'UTC')::date - date '1970-01-01')::bigint,
    count(*) FILTER (WHERE status = 'submitted'),
    count(*) FILTER (WHERE status = 'completed'),
    count(*) FILTER (WHERE status = 'failed')
FROM payouts GROUP BY 1, 2;
