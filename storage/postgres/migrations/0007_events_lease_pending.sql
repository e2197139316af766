-- Only a pending event is ever leased: a claim leases pending events, and
-- recording an attempt or resending clears the lease with the state change.
-- Recording an attempt relies on it to find the event by its id alone: with
-- the state in its condition, PostgreSQL may plan it as a walk of the due
-- events' partial index (whose predicate is that state), which the
-- statistics show as nearly empty whenever they were taken without a
-- backlog, and a backlog then makes every record read all of it.
ALTER TABLE events ADD CONSTRAINT events_lease_pending CHECK (lease_owner IS NULL OR state = 'pending');
