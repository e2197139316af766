package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/payoutkit/payoutkit"
)

// Race runs n copies of f at once, released together, and waits for them:
// the harness of the suite's races, for a store's own race tests.
func Race(n int, f func(i int)) {
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Go(func() {
			start.Wait()
			f(i)
		})
	}
	start.Done()
	done.Wait()
}

func testRaces(t *testing.T, open Open) {
	t.Run("NoOverdraft", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "100.00")
		var mu sync.Mutex
		accepted, refused := 0, 0
		Race(1000, func(i int) {
			_, _, err := e.payout(ws, fmt.Sprintf("po-%d", i), "1.00")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				accepted++
			case errors.Is(err, payoutkit.ErrInsufficientBalance):
				refused++
			default:
				t.Errorf("payout %d: %v", i, err)
			}
		})
		if accepted != 100 || refused != 900 {
			t.Fatalf("accepted %d, refused %d; want 100, 900", accepted, refused)
		}
		e.wantBalance(ws, "0.00", "100.00")
	})

	t.Run("IdenticalCreates", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "100.00")
		var mu sync.Mutex
		created, replayed := 0, 0
		Race(50, func(int) {
			_, r, err := e.payout(ws, "po-same", "10.00")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("create: %v", err)
			case r:
				replayed++
			default:
				created++
			}
		})
		if created != 1 || replayed != 49 {
			t.Fatalf("created %d, replayed %d; want 1, 49", created, replayed)
		}
		e.wantBalance(ws, "90.00", "10.00")
		if n := countLedger(t, e, ws, payoutkit.LedgerPayoutDebit); n != 1 {
			t.Fatalf("%d debits; want 1", n)
		}
	})

	t.Run("FailTwice", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "10.00")
		must[payoutkit.Payout](t)(first(e.payout(ws, "po-1", "10.00")))
		var mu sync.Mutex
		ok, conflicts := 0, 0
		Race(20, func(i int) {
			var err error
			if i%2 == 0 {
				_, err = e.eng.FailPayout(e.ctx, ws, "po-1", "down")
			} else {
				_, err = e.eng.CompletePayout(e.ctx, ws, "po-1", payoutkit.Completion{TxID: "tx"})
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, payoutkit.ErrConflict):
				conflicts++
			default:
				t.Errorf("settle: %v", err)
			}
		})
		if ok != 1 || conflicts != 19 {
			t.Fatalf("%d settled, %d conflicts; want 1, 19", ok, conflicts)
		}
		p := must[payoutkit.Payout](t)(e.eng.Payout(e.ctx, ws, "po-1"))
		if p.Status == payoutkit.PayoutFailed {
			e.wantBalance(ws, "10.00", "0.00")
		} else {
			e.wantBalance(ws, "0.00", "0.00")
		}
		if n := countLedger(t, e, ws, payoutkit.LedgerPayoutRefund); (n == 1) != (p.Status == payoutkit.PayoutFailed) || n > 1 {
			t.Fatalf("%d refunds for a %s payout", n, p.Status)
		}
	})

	t.Run("PayOrderTwice", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		must[payoutkit.Order](t)(first(e.eng.CreateOrder(e.ctx, ws, payoutkit.CreateOrderRequest{OrderID: "o1", Amount: "7.00"})))
		Race(20, func(int) {
			o, err := e.eng.MarkOrderPaid(e.ctx, ws, "o1")
			if err != nil || o.Status != payoutkit.OrderPaid {
				t.Errorf("MarkOrderPaid = %+v, %v", o, err)
			}
		})
		e.wantBalance(ws, "7.00", "0.00")
		if n := countLedger(t, e, ws, payoutkit.LedgerOrderCredit); n != 1 {
			t.Fatalf("%d credits; want 1", n)
		}
	})

	t.Run("Mixed", func(t *testing.T) {
		// Credits, payouts and settlements interleaved across two workspaces:
		// the invariants hold in both, and neither sees the other's money.
		e := newEnv(t, open)
		a, b := e.workspace().Workspace.ID, e.workspace().Workspace.ID
		e.fund(a, "50.00")
		e.fund(b, "50.00")
		Race(200, func(i int) {
			ws := a
			if i%2 == 1 {
				ws = b
			}
			id := fmt.Sprintf("p%d", i)
			switch i % 5 {
			case 0:
				oid := fmt.Sprintf("o%d", i)
				if _, _, err := e.eng.CreateOrder(e.ctx, ws, payoutkit.CreateOrderRequest{OrderID: oid, Amount: "2.00"}); err == nil {
					_, _ = e.eng.MarkOrderPaid(e.ctx, ws, oid)
				}
			default:
				if _, _, err := e.payout(ws, id, "3.00"); err == nil && i%3 == 0 {
					_, _ = e.eng.FailPayout(e.ctx, ws, id, "x")
				} else if err == nil && i%3 == 1 {
					_, _ = e.eng.CompletePayout(e.ctx, ws, id, payoutkit.Completion{TxID: "tx"})
				}
			}
		})
		e.audit(a)
		e.audit(b)
	})
}

func countLedger(t *testing.T, e *env, ws string, kind payoutkit.LedgerKind) int {
	t.Helper()
	n := 0
	req := payoutkit.PageRequest{Limit: 500}
	for {
		page := must[payoutkit.Page[payoutkit.LedgerEntry]](t)(e.store.Ledger(e.ctx, ws, req))
		for _, l := range page.Items {
			if l.Kind == kind {
				n++
			}
		}
		if page.Next == "" {
			return n
		}
		req.Cursor = page.Next
	}
}
