package sqlite_test

import (
	"testing"

	"github.com/payoutkit/payoutkit/storage/internal/sqltest"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// forEachDialect runs f on a fresh SQLite store, as storage/postgres's
// tests run it on a fresh PostgreSQL one.
func forEachDialect(t *testing.T, f func(t *testing.T, s *sqlite.Store)) {
	t.Run("SQLite", func(t *testing.T) {
		s := openSQLite(t)
		t.Cleanup(func() { s.Close() })
		f(t, s)
	})
}

// Values come back exactly as written: times in UTC at microsecond
// precision, zero times as zero, bytes as bytes.
func TestRoundTrip(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *sqlite.Store) { sqltest.RoundTrip(t, s) })
}

// What the suite does not reach through the engine.
func TestStoreEdges(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *sqlite.Store) { sqltest.StoreEdges(t, s) })
}
