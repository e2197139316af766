package memstore_test

import (
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/memstore"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

// FuzzMoneyInvariantsMemstore runs the money fuzz, one operation at a
// time, against memstore.
func FuzzMoneyInvariantsMemstore(f *testing.F) {
	storetest.FuzzMoneyInvariants(f, func(*testing.T) payoutkit.Store { return memstore.New() })
}

// FuzzMoneyPathsMemstore runs the money fuzz with concurrent callers
// against memstore, which has no WithTx: its caller's transactions run as
// concurrent callers.
func FuzzMoneyPathsMemstore(f *testing.F) {
	storetest.FuzzMoneyPaths(f, func(*testing.T) storetest.PathsStore { return storetest.PathsStore{Store: memstore.New()} })
}
