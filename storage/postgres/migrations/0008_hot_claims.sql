-- Claiming an event or a payout's hand-off rewrites only its lease columns,
-- which no index holds, so PostgreSQL can keep the new version on the row's
-- own page without touching an index (a HOT update), when the page has
-- room. Rows were inserted into full pages, so nearly every claim moved its
-- row to another page and wrote an entry into each of the table's five or
-- six indexes. Pages kept half empty at insert leave room for the claim's
-- version; HOT pruning reclaims the dead versions on the page, so the tables
-- grow no larger per payout, and a claim writes fewer WAL records and takes
-- less of the database's time (docs/PERFORMANCE.md). Pages already written
-- keep their fill; only new pages get the room.
ALTER TABLE events SET (fillfactor = 50);
ALTER TABLE payouts SET (fillfactor = 50);
