package postgres_test

import (
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

// FuzzMoneyInvariantsPostgres runs the money fuzz against PostgreSQL's
// statements, each input in a schema of its own; it skips unless
// PAYOUTKIT_TEST_POSTGRES names a server.
func FuzzMoneyInvariantsPostgres(f *testing.F) {
	dsn := pgtest.PostgresServer(f)
	storetest.FuzzMoneyInvariants(f, func(t *testing.T) payoutkit.Store { return openPostgres(t, pgtest.FreshSchema(t, dsn)) })
}
