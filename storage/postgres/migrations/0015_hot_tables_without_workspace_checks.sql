-- The tables every payout writes (payouts, its ledger entry, its event,
-- its customer and its day's counters) no longer check their workspace_id
-- against workspaces with a foreign key. Each such check is a query of its
-- own that locks the workspace's row FOR KEY SHARE, several a payout, and
-- on many workspaces at once a MultiXact per busy row
-- (docs/PERFORMANCE.md). Their rows are written only in the statement that
-- moves the same workspace's balance row (the debit, the settlement, the
-- credit), which is inserted with its workspace (its own foreign key went
-- too, in migration 0017), and workspaces are never deleted: the statement
-- that could write a row of an unknown workspace writes nothing else and is
-- refused. server audit counts any row whose workspace is missing
-- (docs/STORAGE.md). SQLite keeps its checks: they cost it nothing
-- measurable.
ALTER TABLE payouts DROP CONSTRAINT IF EXISTS payouts_workspace_id_fkey;
ALTER TABLE ledger_entries DROP CONSTRAINT IF EXISTS ledger_entries_workspace_id_fkey;
ALTER TABLE events DROP CONSTRAINT IF EXISTS events_workspace_id_fkey;
ALTER TABLE customers DROP CONSTRAINT IF EXISTS customers_workspace_id_fkey;
ALTER TABLE payout_days DROP CONSTRAINT IF EXISTS payout_days_workspace_id_fkey;
