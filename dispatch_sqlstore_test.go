package payoutkit_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sync/errgroup"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// Two dispatchers, each with its own store and engine as two server
// instances would have, share one PostgreSQL database. Payouts are created
// while they run; the processor behind the hand-off loops completes each
// one, which records its payout.completed event. Every event reaches the
// receiver exactly once, each payout's in order, and each payout is handed
// over exactly once.
func TestTwoDispatchersOnPostgres(t *testing.T) { twoInstancesOnPostgres(t, false) }

// TestTwoEnginesOnPostgres is TestTwoDispatchersOnPostgres with each
// engine running its own loops (Engine.Start): the payouts it creates are
// leased to them in the create and given to them without a claim, while
// their payout.completed events are claimed, in order after them.
func TestTwoEnginesOnPostgres(t *testing.T) { twoInstancesOnPostgres(t, true) }

func twoInstancesOnPostgres(t *testing.T, engineLoops bool) {
	dsn := pgtest.Postgres(t)
	const workspaces, payoutsPer = 8, 63 // 8 × (1 order.paid + 63 × 2) = 1016 events

	var stores [2]payoutkit.Store
	var engines [2]*payoutkit.Engine
	proc := &settlingProcessor{calls: map[string]int{}}
	for i := range stores {
		s := openStore(t, dsn)
		stores[i] = s
		var err error
		if engines[i], err = payoutkit.New(s, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Processor: proc, Logger: testLogger(t)}); err != nil {
			t.Fatal(err)
		}
	}

	r := newReceiver(t)
	secrets := map[string]string{}
	var wsIDs []string
	for range workspaces {
		nw, err := engines[0].CreateWorkspace(t.Context(), payoutkit.CreateWorkspaceRequest{Name: "Acme", WebhookURL: r.srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		secrets[nw.Workspace.ID] = nw.Workspace.WebhookSecret
		wsIDs = append(wsIDs, nw.Workspace.ID)
	}

	var sent [2]atomic.Int64
	for i := range 2 {
		cfg := payoutkit.DeliveryConfig{
			Owner:        fmt.Sprintf("instance-%d", i),
			Notifier:     &countingNotifier{Notifier: &payoutkit.HTTPNotifier{AllowPrivate: true}, n: &sent[i]},
			PollInterval: 20 * time.Millisecond,
			Logger:       testLogger(t),
		}
		if engineLoops {
			var err error
			if engines[i], err = payoutkit.New(stores[i], &payoutkit.Config{PasswordCost: bcrypt.MinCost, Processor: proc, Logger: testLogger(t), Delivery: cfg}); err != nil {
				t.Fatal(err)
			}
			if err := engines[i].Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { engines[i].Stop(context.Background()) })
			continue
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		d, err := payoutkit.NewDispatcher(stores[i], &cfg, engines[i], stores[i])
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- d.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}

	// Create the payouts while the dispatchers run, from both instances.
	began := time.Now()
	var g errgroup.Group
	for w, ws := range wsIDs {
		g.Go(func() error {
			eng := engines[w%2]
			id := "fund-" + ws
			if _, _, err := eng.CreateOrder(t.Context(), ws, payoutkit.CreateOrderRequest{OrderID: id, Amount: "1000.00"}); err != nil {
				return err
			}
			if _, err := eng.MarkOrderPaid(t.Context(), ws, id); err != nil {
				return err
			}
			for p := range payoutsPer {
				if _, _, err := eng.CreatePayout(t.Context(), ws, payoutkit.CreatePayoutRequest{
					PayoutID: fmt.Sprintf("po-%d", p), Amount: "1.00", Asset: "USDT", Network: "TRON", Address: tronAddress, PayerID: "cust-1",
				}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("created in %s", time.Since(began))
	const total = workspaces * (1 + 2*payoutsPer)
	deadline := time.Now().Add(60 * time.Second)
	for r.count() < total && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	// The receiver has them all; wait for the last attempts to be recorded.
	for time.Now().Before(deadline) && !allDelivered(t, stores[0], wsIDs) {
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("delivered in %s", time.Since(began))

	// Every stored event delivered, with one attempt, received once.
	received := map[string]int{}
	var order []string
	for _, req := range r.requests() {
		received[req.Event.ID]++
		order = append(order, req.Event.WorkspaceID+"/"+label(req.Event))
		if !payoutkit.VerifySignature(secrets[req.Event.WorkspaceID], req.Body, req.Header.Get(payoutkit.HeaderSignature)) {
			t.Fatalf("bad signature on %s", req.Event.ID)
		}
	}
	stored := 0
	for _, ws := range wsIDs {
		var page payoutkit.Page[payoutkit.Event]
		for first := true; first || page.Next != ""; first = false {
			var err error
			if page, err = stores[0].Events(t.Context(), ws, payoutkit.PageRequest{Limit: 500, Cursor: page.Next}); err != nil {
				t.Fatal(err)
			}
			for _, ev := range page.Items {
				stored++
				if received[ev.ID] != 1 {
					t.Errorf("event %s (%s) received %d times", ev.ID, ev.Type, received[ev.ID])
				}
				if ev.State != payoutkit.DeliveryDelivered || ev.Attempts != 1 {
					t.Errorf("event %s: %+v", ev.ID, ev.EventDelivery)
				}
			}
		}
	}
	if stored != total || len(received) != total || r.count() != total {
		t.Fatalf("%d events stored, %d distinct received in %d requests; want %d", stored, len(received), r.count(), total)
	}
	// Per payout, submitted before completed.
	pos := map[string]int{}
	for i, l := range order {
		pos[l] = i
	}
	for _, ws := range wsIDs {
		for p := range payoutsPer {
			sub, done := pos[fmt.Sprintf("%s/payout.submitted/po-%d", ws, p)], pos[fmt.Sprintf("%s/payout.completed/po-%d", ws, p)]
			if sub > done {
				t.Fatalf("%s po-%d completed arrived before submitted", ws, p)
			}
		}
	}
	// Each payout handed over once, and both instances worked.
	if n := proc.count(); n != workspaces*payoutsPer {
		t.Errorf("%d payouts handed over; want %d", n, workspaces*payoutsPer)
	}
	for k, n := range proc.snapshot() {
		if n != 1 {
			t.Errorf("payout %s handed over %d times", k, n)
		}
	}
	if sent[0].Load() == 0 || sent[1].Load() == 0 {
		t.Errorf("deliveries per instance %d and %d; want both at work", sent[0].Load(), sent[1].Load())
	}
	t.Logf("deliveries per instance: %d, %d", sent[0].Load(), sent[1].Load())
}

func allDelivered(t *testing.T, s payoutkit.Store, wsIDs []string) bool {
	for _, ws := range wsIDs {
		var page payoutkit.Page[payoutkit.Event]
		for first := true; first || page.Next != ""; first = false {
			var err error
			if page, err = s.Events(t.Context(), ws, payoutkit.PageRequest{Limit: 500, Cursor: page.Next}); err != nil {
				t.Fatal(err)
			}
			for _, ev := range page.Items {
				if ev.State != payoutkit.DeliveryDelivered {
					return false
				}
			}
		}
	}
	return true
}

// settlingProcessor completes each payout it is given, counting the calls.
type settlingProcessor struct {
	mu    sync.Mutex
	calls map[string]int
}

func (p *settlingProcessor) Submit(ctx context.Context, sub payoutkit.Submission, settler payoutkit.Settler) error {
	po := sub.Payout
	p.mu.Lock()
	p.calls[po.WorkspaceID+"/"+po.PayoutID]++
	p.mu.Unlock()
	_, err := settler.CompletePayout(ctx, po.WorkspaceID, po.PayoutID, payoutkit.Completion{TxID: "tx-" + po.PayoutID})
	return err
}

func (p *settlingProcessor) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

func (p *settlingProcessor) snapshot() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.calls))
	for k, v := range p.calls {
		out[k] = v
	}
	return out
}

type countingNotifier struct {
	payoutkit.Notifier
	n *atomic.Int64
}

func (c *countingNotifier) Notify(ctx context.Context, ws payoutkit.Workspace, ev payoutkit.Event) (payoutkit.DeliveryResult, error) {
	c.n.Add(1)
	return c.Notifier.Notify(ctx, ws, ev)
}

// The retry schedule and a restart hold on SQLite too, times and all.
func TestScheduleOnSQLite(t *testing.T) {
	e := newEnvOn(t, openStore(t, filepath.Join(t.TempDir(), "payoutkit.db")), newFakeClock(), nil)
	r := newReceiver(t)
	var fail atomic.Bool
	fail.Store(true)
	r.setRespond(func(*http.Request, request) (int, string) {
		if fail.Load() {
			return 500, "down"
		}
		return 200, "success"
	})
	ws := e.workspace(r)
	e.fund(ws.ID, "10.00")
	ev := e.events(ws.ID)[0]
	a := e.start(payoutkit.DeliveryConfig{Owner: "A"})
	want := schedule()
	for n, offset := range want[:5] {
		e.clock.Set(t0.Add(offset))
		got := e.waitAttempts(ws.ID, ev.ID, n+1)
		if !got[n].At.Equal(t0.Add(offset)) || got[n].StatusCode != 500 || got[n].ResponseHead != "down" {
			t.Fatalf("attempt %d = %+v", n+1, got[n])
		}
	}
	a.stop()
	fail.Store(false)
	e.start(payoutkit.DeliveryConfig{Owner: "B"})
	e.clock.Set(t0.Add(want[5]))
	got := e.waitAttempts(ws.ID, ev.ID, 6)
	if !got[5].At.Equal(t0.Add(want[5])) || got[5].StatusCode != 200 {
		t.Fatalf("attempt 6 = %+v", got[5])
	}
	e.waitDelivered(ws.ID)
}

// openStore opens a store on dsn, closed at the test's end: a
// "postgres://" URL with storage/postgres, a file path with storage/sqlite.
func openStore(t *testing.T, dsn string) payoutkit.Store {
	t.Helper()
	var s payoutkit.Store
	var err error
	if strings.HasPrefix(dsn, "postgres://") {
		s, err = postgres.Open(t.Context(), dsn)
	} else {
		s, err = sqlite.Open(t.Context(), dsn)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
