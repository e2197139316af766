package sqlstore

// BatchStats returns how many transactions SQLite's committer has run and
// how many writes they carried (zeros on PostgreSQL).
func BatchStats(s *Store) (batches, writes int64) {
	if s.batch == nil {
		return 0, 0
	}
	return s.batch.batches.Load(), s.batch.writes.Load()
}
