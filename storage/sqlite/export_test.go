package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// BatchStats returns how many transactions the committer has run and how
// many writes they carried.
func BatchStats(s *Store) (batches, writes int64) {
	if s.d.batch == nil {
		return 0, 0
	}
	return s.d.batch.Batches.Load(), s.d.batch.Writes.Load()
}

// Migrations returns how many migrations the store has.
func Migrations() int {
	ms, err := loadMigrations()
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

// TS is t as the store stores it.
func TS(s *Store, t time.Time) any { return s.ts(t) }

// writer runs single statements on the store's writer.
func (s *Store) writer() sqlcore.Querier {
	d := s.w.(*db)
	d.claimWrite()
	return d.wdb
}

// reader runs reads on the store's read pool.
func (s *Store) reader() sqlcore.Querier { return s.w.Reader() }

// ts is t as the store stores it.
func (*Store) ts(t time.Time) any { return ts(t) }

// Query runs a read on the store's reader.
func Query(ctx context.Context, s *Store, query string) (*sql.Rows, error) {
	return s.reader().QueryContext(ctx, query)
}
