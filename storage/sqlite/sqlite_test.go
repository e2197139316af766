package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlite"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

func TestConformanceSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) payoutkit.Store { return openSQLite(t) })
}

func TestStaffConformanceSQLite(t *testing.T) {
	storetest.RunStaff(t, func(t *testing.T) storetest.StaffStore { return openSQLite(t) })
}

// openSQLite opens a store on a new database file.
func openSQLite(t testing.TB) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
