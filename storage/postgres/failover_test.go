package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// A store given both servers of a cluster keeps working through a
// failover: the primary killed, the standby promoted. Every payout
// acknowledged before, during or after exists on the new primary, none
// twice, and its money is exact. A write whose outcome the store cannot
// know answers ErrUnavailable, and the same payout_id again settles it.
func TestFailover(t *testing.T) {
	c := pgtest.StartCluster(t, pgtest.ClusterOptions{})
	c.CreateDatabase("payoutkit")
	ctx := t.Context()
	store, err := postgres.Open(ctx, c.MultiHostDSN("payoutkit"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if d, err := store.Durability(ctx); err != nil || !d.Replicated() || d.SynchronousStandbysReady != 1 {
		t.Fatalf("Durability = %+v, %v; want commits waiting for the one synchronous standby", d, err)
	}
	eng, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Failover"})
	if err != nil {
		t.Fatal(err)
	}
	ws := nw.Workspace.ID
	if _, _, err := eng.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "fund", Amount: "100000.00"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.MarkOrderPaid(ctx, ws, "fund"); err != nil {
		t.Fatal(err)
	}

	const clients = 8
	var (
		next, acked, unavailable atomic.Int64
		stop                     atomic.Bool
		wg                       sync.WaitGroup
		mu                       sync.Mutex
		other                    []error
	)
	for range clients {
		wg.Go(func() {
			for !stop.Load() {
				id := fmt.Sprint("po-", next.Add(1))
				// Retried with the same payout_id until it succeeds.
				for {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					_, _, err := eng.CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{
						PayoutID: id, Amount: "1.00", Asset: "USDT", Network: "TRON", Address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", PayerID: "c",
					})
					cancel()
					if err == nil {
						acked.Add(1)
						break
					}
					if errors.Is(err, payoutkit.ErrUnavailable) {
						unavailable.Add(1)
					} else {
						mu.Lock()
						other = append(other, err)
						mu.Unlock()
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
	waitAcked := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for acked.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("only %d payouts acknowledged; waited for %d", acked.Load(), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitAcked(200)
	c.KillPrimary()
	killed := time.Now()
	before := acked.Load()
	c.Promote()
	waitAcked(before + 200)
	t.Logf("the first payouts after the kill were acknowledged within %v", time.Since(killed))
	stop.Store(true)
	wg.Wait()

	t.Logf("%d payouts acknowledged, %d answers ErrUnavailable, %d other errors", acked.Load(), unavailable.Load(), len(other))
	for i, err := range other {
		if i < 5 {
			t.Logf("other error: %v", err)
		}
	}
	a, err := store.Audit(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Check(); err != nil {
		t.Error(err)
	}
	if got := a.PayoutCounts[0]; got != acked.Load() {
		t.Errorf("%d payouts on the new primary; %d were acknowledged (each id retried until acknowledged once)", got, acked.Load())
	}
	if want := payoutkit.Amount(100000_00) - payoutkit.Amount(acked.Load()*100); a.Available != want {
		t.Errorf("available %v; want %v", a.Available, want)
	}
}
