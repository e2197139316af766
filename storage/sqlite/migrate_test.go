package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/payoutkit/payoutkit/storage/internal/sqltest"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// Migration 0002 fills customers from the rows an older binary wrote: the
// totals it computes are the ones the audit recomputes, customers are
// numbered in order of their first movement, and the money paths carry on
// from there.
func TestMigrationBackfillsCustomers(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		testBackfill(t, filepath.Join(t.TempDir(), "m.db"))
	})
}

// db is what sqltest's shared tests need of this package beyond its Store.
var db = sqltest.DB[*sqlite.Store]{
	Open:          func(ctx context.Context, dsn string) (*sqlite.Store, error) { return sqlite.Open(ctx, dsn) },
	OpenAtVersion: sqlite.OpenAtVersion,
	Exec:          sqlite.Exec,
	TS:            sqlite.TS,
}

func testBackfill(t *testing.T, dsn string) { sqltest.MigrationBackfill(t, dsn, db) }

// Migration 0014 gives a workspace with a daily limit its 24-hour window.
func TestMigrationFillsWindow(t *testing.T) {
	sqltest.MigrationWindow(t, filepath.Join(t.TempDir(), "w.db"), db)
}
