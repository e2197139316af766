-- PostgreSQL's migration 0015 drops the foreign keys to workspaces of the
-- tables every payout writes: each check there is a query of its own that
-- locks the workspace's row. SQLite's check is a look-up in the writer's
-- own connection, and a writer without them executed the same instructions
-- per payout (docs/PERFORMANCE.md), so SQLite keeps them. This migration
-- keeps the two schemas' versions in step.
SELECT 1;
