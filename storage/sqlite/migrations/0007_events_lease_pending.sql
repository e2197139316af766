-- PostgreSQL's 0007 adds a constraint that recording a delivery attempt
-- relies on there. SQLite's recording keeps the event's state in its
-- condition (SQLite plans it by the unique id whatever its statistics), so
-- its schema is unchanged; the version keeps both dialects in step.
SELECT 1;
