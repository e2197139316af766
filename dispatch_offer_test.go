package payoutkit_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/memstore"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// claimCounter is a store that counts the payouts its hand-off claims
// return and the payout events its event claims return.
type claimCounter struct {
	payoutkit.Store
	handOffs, payoutEvents atomic.Int64
}

func (c *claimCounter) ClaimPayoutHandoffs(ctx context.Context, owner string, now, leaseUntil time.Time, limit int) ([]payoutkit.PayoutLease, error) {
	ls, err := c.Store.ClaimPayoutHandoffs(ctx, owner, now, leaseUntil, limit)
	c.handOffs.Add(int64(len(ls)))
	return ls, err
}

func (c *claimCounter) ClaimEvents(ctx context.Context, owner string, now, leaseUntil time.Time, limit int, except []string) ([]payoutkit.Event, error) {
	return c.countEvents(c.Store.ClaimEvents(ctx, owner, now, leaseUntil, limit, except))
}

func (c *claimCounter) countEvents(evs []payoutkit.Event, err error) ([]payoutkit.Event, error) {
	for _, ev := range evs {
		if strings.HasPrefix(ev.Subject, "payout:") {
			c.payoutEvents.Add(1)
		}
	}
	return evs, err
}

// startEngine runs an engine with its own loops over store, on clock, with
// processor behind its hand-off loop, until the end of the test.
func startEngine(t *testing.T, store payoutkit.Store, clock *fakeClock, owner string, processor payoutkit.Processor) *payoutkit.Engine {
	t.Helper()
	eng, err := payoutkit.New(store, &payoutkit.Config{
		PasswordCost: bcrypt.MinCost, Now: clock.Now, Logger: testLogger(t), Processor: processor,
		Delivery: payoutkit.DeliveryConfig{Owner: owner, Clock: clock, Jitter: -1, Notifier: &payoutkit.HTTPNotifier{AllowPrivate: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Stop(context.Background()) })
	return eng
}

// A payout created while the engine's loops run is handed to the processor
// and its event delivered without either being claimed from the store: the
// create leased both to the loops. The clock never moves, so no poll finds
// them either. Each is handed over and delivered once.
func TestCreatedPayoutsNeedNoClaim(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) payoutkit.Store{
		"memstore": func(*testing.T) payoutkit.Store { return memstore.New() },
		"sqlite": func(t *testing.T) payoutkit.Store {
			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "p.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	} {
		t.Run(name, func(t *testing.T) {
			store := &claimCounter{Store: open(t)}
			proc := newRecordingProcessor(t)
			clock := newFakeClock()
			eng := startEngine(t, store, clock, "A", proc)
			e := &env{t: t, ctx: t.Context(), clock: clock, store: store, eng: eng}
			r := newReceiver(t)
			ws := e.workspace(r)
			e.fund(ws.ID, "100.00")
			const n = 40
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { e.payout(ws.ID, fmt.Sprintf("po-%d", i), "1.00") })
			}
			wg.Wait()
			waitFor(t, "every payout handed over", func() bool { return len(proc.counts()) == n })
			e.waitDelivered(ws.ID)
			for id, calls := range proc.counts() {
				if calls != 1 {
					t.Errorf("%s handed over %d times", id, calls)
				}
			}
			seen := map[string]int{}
			for _, req := range r.requests() {
				if seen[req.Event.ID]++; seen[req.Event.ID] > 1 || !req.SigOK {
					t.Errorf("%s received %d times, signature ok %v", label(req.Event), seen[req.Event.ID], req.SigOK)
				}
			}
			if len(seen) != n+1 { // and the funding order's
				t.Errorf("%d events received; want %d", len(seen), n+1)
			}
			if h, ev := store.handOffs.Load(), store.payoutEvents.Load(); h != 0 || ev != 0 {
				t.Errorf("claims returned %d payouts and %d payout events; want none", h, ev)
			}
		})
	}
}

// An engine that stops with a payout it created still to hand over leaves
// it leased: another engine does not take it before the lease ends, and
// takes it, once, after.
func TestCreatedPayoutTakenOverAfterLease(t *testing.T) {
	store := memstore.New()
	clockA, clockB := newFakeClock(), newFakeClock()
	stuck := &blockingProcessor{entered: make(chan string, 1)}
	a := startEngine(t, store, clockA, "A", stuck)
	e := &env{t: t, ctx: t.Context(), clock: clockA, store: store, eng: a}
	ws := e.workspace(nil)
	e.fund(ws.ID, "10.00")
	e.payout(ws.ID, "po-1", "1.00")
	if id := <-stuck.entered; id != "po-1" {
		t.Fatalf("processor got %s", id)
	}
	if err := a.Stop(t.Context()); err != nil { // cuts the hand-off short: not recorded
		t.Fatal(err)
	}

	proc := newRecordingProcessor(t)
	startEngine(t, store, clockB, "B", proc)
	clockB.Advance(59 * time.Second) // A's lease (1 min) still holds
	if ls, err := store.ClaimPayoutHandoffs(t.Context(), "C", clockB.Now(), clockB.Now().Add(time.Minute), 10); err != nil || len(ls) != 0 {
		t.Fatalf("claimed within the lease: %+v, %v", ls, err)
	}
	if n := proc.count("po-1"); n != 0 {
		t.Fatalf("B handed po-1 over %d times within A's lease", n)
	}
	clockB.Advance(2 * time.Second)
	waitFor(t, "B hands po-1 over", func() bool { return proc.count("po-1") == 1 })
	p, err := store.Payout(t.Context(), ws.ID, "po-1")
	if err != nil || p.Status != payoutkit.PayoutSubmitted {
		t.Fatalf("po-1 = %+v, %v", p, err)
	}
	clockB.Advance(2 * time.Minute)
	time.Sleep(20 * time.Millisecond)
	if n := proc.count("po-1"); n != 1 {
		t.Fatalf("po-1 handed over %d times; want once, its hand-off recorded", n)
	}
}

// blockingProcessor reports each payout it is given on entered and holds
// it until its context ends.
type blockingProcessor struct{ entered chan string }

func (p *blockingProcessor) Submit(ctx context.Context, sub payoutkit.Submission, _ payoutkit.Settler) error {
	p.entered <- sub.Payout.PayoutID
	<-ctx.Done()
	return ctx.Err()
}
