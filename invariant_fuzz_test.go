package payoutkit_test

import (
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/memstore"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

// FuzzMoneyInvariants runs the conformance suite's money fuzz
// (storetest.FuzzMoneyInvariants) against the memory store; the SQL
// stores' tests run it against SQLite and PostgreSQL.
func FuzzMoneyInvariants(f *testing.F) {
	storetest.FuzzMoneyInvariants(f, func(*testing.T) payoutkit.Store { return memstore.New() })
}
