package sqlite_test

import (
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

// FuzzMoneyInvariantsSQLite runs the money fuzz against SQLite's
// statements, each input on a new database file.
func FuzzMoneyInvariantsSQLite(f *testing.F) {
	storetest.FuzzMoneyInvariants(f, func(t *testing.T) payoutkit.Store { return openSQLite(t) })
}
