package payoutkit_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/memstore"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

var (
	_ payoutkit.Store = (*memstore.Store)(nil)
	_ payoutkit.Store = (*sqlite.Store)(nil)
	_ payoutkit.Store = (*postgres.Store)(nil)
)

// Work committed while the dispatcher runs is claimed at once, without a
// poll: the clock never moves, so no poll after the first ever comes. A
// payout is handed over and its webhook sent; settling it (through the
// engine, as the processor or an operator would) sends the next; an event
// sent again goes out again. Each on every store of this module.
func TestNewWorkClaimedAtOnce(t *testing.T) {
	stores := map[string]func(t *testing.T) payoutkit.Store{
		"memstore": func(*testing.T) payoutkit.Store { return memstore.New() },
		"sqlite": func(t *testing.T) payoutkit.Store {
			return openStore(t, filepath.Join(t.TempDir(), "payoutkit.db"))
		},
		"postgres": func(t *testing.T) payoutkit.Store {
			return openStore(t, pgtest.Postgres(t))
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			proc := newRecordingProcessor(t)
			e := newEnvOn(t, open(t), newFakeClock(), proc)
			r := newReceiver(t)
			ws := e.workspace(r)
			d := e.startWith(payoutkit.DeliveryConfig{}, e.eng, nil)

			o := e.fund(ws.ID, "10.00")
			r.waitCount(1)
			e.payout(ws.ID, "po-1", "1.00")
			waitFor(t, "po-1 handed over", func() bool { return proc.count("po-1") == 1 })
			r.waitCount(2)
			e.complete(ws.ID, "po-1")
			r.waitCount(3)
			e.waitDelivered(ws.ID) // recorded: a resend of an event in flight changes nothing
			completed := e.event(ws.ID, payoutkit.EventPayoutCompleted, "payout:po-1")
			if err := d.Resend(e.ctx, ws.ID, completed.ID); err != nil {
				t.Fatal(err)
			}
			r.waitCount(4)

			want := []string{"order.paid/" + o.OrderID, "payout.submitted/po-1", "payout.completed/po-1", "payout.completed/po-1"}
			if got := labels(r.requests()); !slices.Equal(got, want) {
				t.Fatalf("receiver got %v; want %v", got, want)
			}
			if !e.clock.Now().Equal(t0) {
				t.Fatalf("the clock moved to %s: a poll could have claimed the work", e.clock.Now())
			}
		})
	}
}
