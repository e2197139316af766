package sqlite_test

import (
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlite"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

func newEngine(t testing.TB, s payoutkit.Store) *payoutkit.Engine {
	t.Helper()
	eng, err := payoutkit.New(s, &payoutkit.Config{PasswordCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

func fund(t testing.TB, eng *payoutkit.Engine, ws, id, amount string) {
	t.Helper()
	if _, _, err := eng.CreateOrder(t.Context(), ws, payoutkit.CreateOrderRequest{OrderID: id, Amount: amount}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.MarkOrderPaid(t.Context(), ws, id); err != nil {
		t.Fatal(err)
	}
}

func payoutRequest(id, amount string) payoutkit.CreatePayoutRequest {
	return payoutkit.CreatePayoutRequest{
		PayoutID: id, Amount: amount, Asset: "USDT", Network: "TRON", Address: storetest.TronAddress, PayerID: "cust-1",
	}
}

// Several stores on one database (as several instances starting at once)
// bootstrap it: one workspace is created, and one of them says so.
func TestBootstrapOnceAcrossStores(t *testing.T) {
	dsns := map[string]string{"SQLite": filepath.Join(t.TempDir(), "boot.db")}
	for name, dsn := range dsns {
		t.Run(name, func(t *testing.T) {
			stores := make([]*sqlite.Store, 4)
			for i := range stores {
				stores[i] = openAt(t, dsn)
			}
			var created atomic.Int32
			var wg sync.WaitGroup
			for _, s := range stores {
				wg.Go(func() {
					_, ok, err := newEngine(t, s).Bootstrap(t.Context())
					if err != nil {
						t.Error(err)
					}
					if ok {
						created.Add(1)
					}
				})
			}
			wg.Wait()
			if ids, _ := stores[0].WorkspaceIDs(t.Context()); created.Load() != 1 || len(ids) != 1 {
				t.Fatalf("%d bootstraps reported, workspaces %v; want 1 and 1", created.Load(), ids)
			}
		})
	}
}

func openAt(t *testing.T, dsn string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A change of the payout controls made through one store takes effect on
// another store's next create on the same database.
func TestControlsAcrossStores(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "controls.db")
	storetest.ControlsAcrossStores(t, openAt(t, dsn), openAt(t, dsn))
}
