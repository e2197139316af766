package postgres_test

import (
	"testing"

	"github.com/payoutkit/payoutkit/storage/internal/sqltest"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// forEachDialect runs f on a fresh PostgreSQL store, when configured, as
// storage/sqlite's tests run it on a fresh SQLite one.
func forEachDialect(t *testing.T, f func(t *testing.T, s *postgres.Store)) {
	t.Run("Postgres", func(t *testing.T) {
		s := openPostgres(t, pgtest.Postgres(t))
		t.Cleanup(func() { s.Close() })
		f(t, s)
	})
}

// Values come back exactly as written: times in UTC at microsecond
// precision, zero times as zero, bytes as bytes.
func TestRoundTrip(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *postgres.Store) { sqltest.RoundTrip(t, s) })
}

// What the suite does not reach through the engine.
func TestStoreEdges(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *postgres.Store) { sqltest.StoreEdges(t, s) })
}
