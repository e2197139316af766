-- PostgreSQL's 0008 leaves room on the pages of events and payouts for
-- their claims' row versions. SQLite updates a row in place, so its schema
-- is unchanged; the version keeps both dialects in step.
SELECT 1;
