package postgres_test

import (
	"context"
	"testing"

	"github.com/payoutkit/payoutkit/storage/internal/sqltest"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// Migration 0002 fills customers from the rows an older binary wrote: the
// totals it computes are the ones the audit recomputes, customers are
// numbered in order of their first movement, and the money paths carry on
// from there.
func TestMigrationBackfillsCustomers(t *testing.T) {
	t.Run("Postgres", func(t *testing.T) {
		testBackfill(t, pgtest.Postgres(t))
	})
}

// db is what sqltest's shared tests need of this package beyond its Store.
var db = sqltest.DB[*postgres.Store]{
	Open:          func(ctx context.Context, dsn string) (*postgres.Store, error) { return postgres.Open(ctx, dsn) },
	OpenAtVersion: postgres.OpenAtVersion,
	Exec:          postgres.Exec,
	TS:            postgres.TS,
}

func testBackfill(t *testing.T, dsn string) { sqltest.MigrationBackfill(t, dsn, db) }

// Migration 0014 gives a workspace with a daily limit its 24-hour window.
func TestMigrationFillsWindow(t *testing.T) {
	sqltest.MigrationWindow(t, pgtest.Postgres(t), db)
}
