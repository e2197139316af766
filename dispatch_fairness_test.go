package payoutkit_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/memstore"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// A workspace whose receiver hangs, with hundreds of events due, never keeps
// another workspace's new event waiting (contract section 5): once the
// hanging workspace has its share of workers, claims pass over its events.
func TestBacklogDoesNotDelayOtherWorkspaces(t *testing.T) {
	stores := map[string]func(t *testing.T) payoutkit.Store{
		"memory": func(*testing.T) payoutkit.Store { return memstore.New() },
		"sqlite": func(t *testing.T) payoutkit.Store {
			return openStore(t, filepath.Join(t.TempDir(), "fair.db"))
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			e := newEnvOn(t, open(t), newFakeClock(), nil)
			hanging, fast := newReceiver(t), newReceiver(t)
			hanging.setRespond(func(hr *http.Request, _ request) (int, string) {
				<-hr.Context().Done()
				return 200, "success"
			})
			wsA, wsB := e.workspace(hanging), e.workspace(fast)
			e.fund(wsA.ID, "1000.00")
			for i := range 300 {
				e.payout(wsA.ID, fmt.Sprint("a-", i), "1.00")
			}
			e.start(payoutkit.DeliveryConfig{Concurrency: 4}) // two workers per workspace
			hanging.waitCount(2)

			start := time.Now()
			order := e.fund(wsB.ID, "10.00") // B's event, after all of A's
			// The dispatcher's next poll. The fund's wake-up may reach the
			// dispatcher just after an Advance, when it sets its next poll a
			// second past the new time, so the clock moves a second at a
			// time until B's event arrives, far inside the leases.
			for deadline := time.Now().Add(2 * time.Second); fast.count() == 0 && time.Now().Before(deadline); {
				e.clock.Advance(time.Second)
				time.Sleep(100 * time.Millisecond)
			}
			fast.waitCount(1)
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("workspace B's order.paid arrived after %s behind A's backlog; want within 2s", took)
			}
			if got, want := label(fast.requests()[0].Event), "order.paid/"+order.OrderID; got != want {
				t.Errorf("B received %s, want %s", got, want)
			}
			if n := hanging.count(); n != 2 {
				t.Errorf("%d requests at the hanging receiver; want its share, 2", n)
			}
		})
	}
}

// The module's stores are Stores, and so claim fairly (ClaimEvents with except).
var (
	_ payoutkit.Store = (*memstore.Store)(nil)
	_ payoutkit.Store = (*sqlite.Store)(nil)
	_ payoutkit.Store = (*postgres.Store)(nil)
)
