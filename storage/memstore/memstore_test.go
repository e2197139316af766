package memstore_test

import (
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/memstore"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) payoutkit.Store { return memstore.New() })
}

func TestStaffConformance(t *testing.T) {
	storetest.RunStaff(t, func(*testing.T) storetest.StaffStore { return memstore.New() })
}
