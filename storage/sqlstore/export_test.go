package sqlstore

import (
	"context"
	"time"
)

// BatchStats returns how many transactions SQLite's committer has run and
// how many writes they carried (zeros on PostgreSQL).
func BatchStats(s *Store) (batches, writes int64) {
	if s.batch == nil {
		return 0, 0
	}
	return s.batch.batches.Load(), s.batch.writes.Load()
}

// Migrations returns how many migrations the dialect has.
func Migrations(dialect string) int {
	ms, err := loadMigrations(dialect)
	if err != nil {
		panic(err)
	}
	return len(ms)
}

// OpenAtVersion opens the database named by dsn and migrates it up to
// version only, so that a test can write rows as an older binary did and
// then check the later migrations against them. The store is good for Exec,
// TS and Close only: its statements are not prepared, and may not match
// the older schema.
func OpenAtVersion(ctx context.Context, dsn string, version int) (*Store, error) {
	s, err := open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if err := s.migrateTo(ctx, version); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Exec runs one statement on the store's writer.
func Exec(ctx context.Context, s *Store, query string, args ...any) error {
	_, err := s.writer().ExecContext(ctx, query, args...)
	return err
}

// TS is t as the store's dialect stores it.
func TS(s *Store, t time.Time) any { return s.ts(t) }
