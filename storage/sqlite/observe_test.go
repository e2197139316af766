package sqlite

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

func TestCommitObserverSQLite(t *testing.T) {
	testCommitObserver(t, filepath.Join(t.TempDir(), "observe.db"))
}

// testCommitObserver checks that WithCommitObserver is told of every
// group-commit transaction, with the writes it carried, as the committers
// count them.
func testCommitObserver(t *testing.T, dsn string) {
	var mu sync.Mutex
	var calls, writes int
	var zero bool
	s, err := Open(t.Context(), dsn, WithCommitObserver(func(n int, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		writes += n
		zero = zero || n < 1 || n > sqlcore.MaxBatch || d <= 0
	}))
	if err != nil {
		t.Fatal(err)
	}
	closeStore := sync.OnceValue(s.Close)
	defer closeStore()
	eng, err := payoutkit.New(s, &payoutkit.Config{PasswordCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	nw, err := eng.CreateWorkspace(t.Context(), payoutkit.CreateWorkspaceRequest{Name: "Observed"})
	if err != nil {
		t.Fatal(err)
	}
	ws := nw.Workspace.ID
	if _, _, err := eng.CreateOrder(t.Context(), ws, payoutkit.CreateOrderRequest{OrderID: "fund", Amount: "1000.00"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.MarkOrderPaid(t.Context(), ws, "fund"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			_, _, err := eng.CreatePayout(t.Context(), ws, payoutkit.CreatePayoutRequest{
				PayoutID: fmt.Sprintf("po-%d", i), Amount: "1.00", Asset: "USDT", Network: "TRON",
				Address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", PayerID: "cust-1",
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// Close waits for the committers, and so for their last observation.
	if err := closeStore(); err != nil {
		t.Fatal(err)
	}
	var wantCalls, wantWrites int64
	for _, c := range []*committer{s.d.batch} {
		wantCalls += c.Batches.Load()
		wantWrites += c.Writes.Load()
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d writes in %d transactions", writes, calls)
	switch {
	case zero:
		t.Error("an observation without writes or without a duration")
	case writes < 41: // the order's credit and the 40 payouts at least
		t.Errorf("%d writes observed; want at least 41", writes)
	case int64(calls) != wantCalls || int64(writes) != wantWrites:
		t.Errorf("observed %d writes in %d transactions; the committers counted %d in %d", writes, calls, wantWrites, wantCalls)
	}
}
