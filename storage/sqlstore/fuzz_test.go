package sqlstore_test

import (
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlstore/sqltest"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

// FuzzMoneyInvariantsSQLite runs the money fuzz against SQLite's
// statements, each input on a new database file.
func FuzzMoneyInvariantsSQLite(f *testing.F) {
	storetest.FuzzMoneyInvariants(f, func(t *testing.T) payoutkit.Store { return openSQLite(t) })
}

// FuzzMoneyInvariantsPostgres runs the money fuzz against PostgreSQL's
// statements, each input in a schema of its own; it skips unless
// PAYOUTKIT_TEST_POSTGRES names a server.
func FuzzMoneyInvariantsPostgres(f *testing.F) {
	dsn := sqltest.PostgresServer(f)
	storetest.FuzzMoneyInvariants(f, func(t *testing.T) payoutkit.Store { return openPostgres(t, sqltest.FreshSchema(t, dsn)) })
}
