-- PostgreSQL's migration 0017 drops the balance row's foreign key, which
-- it checked on nearly every debit of a group commit (an update of a row
-- the same transaction wrote). SQLite checks a foreign key on an update
-- only when the key's columns change, so it keeps it. This migration keeps
-- the two schemas' versions in step.
SELECT 1;
