package sqlstore_test

import (
	"path/filepath"
	"testing"

	"github.com/payoutkit/payoutkit/storage/sqlstore/sqltest"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlstore"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

func TestConformanceSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) payoutkit.Store { return openSQLite(t) })
}

func TestConformancePostgres(t *testing.T) {
	dsn := sqltest.PostgresServer(t)
	storetest.Run(t, func(t *testing.T) payoutkit.Store { return openPostgres(t, sqltest.FreshSchema(t, dsn)) })
}

// openSQLite opens a store on a new database file.
func openSQLite(t testing.TB) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(t.Context(), filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openPostgres(t testing.TB, dsn string) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
