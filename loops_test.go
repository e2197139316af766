package payoutkit_test

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/seal"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// startedEngine is an engine over a memstore, on a fake clock for its
// loops, that may reach the test's receivers on 127.0.0.1.
func startedEngine(t *testing.T, cfg payoutkit.Config) (*payoutkit.Engine, payoutkit.Store, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	store := memstore.New()
	cfg.PasswordCost, cfg.Now, cfg.Logger = bcrypt.MinCost, clock.Now, testLogger(t)
	cfg.Delivery.Clock, cfg.Delivery.Jitter = clock, -1
	cfg.Delivery.Notifier = &payoutkit.HTTPNotifier{AllowPrivate: true}
	eng, err := payoutkit.New(store, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := eng.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return eng, store, clock
}

// New, Start, Stop: the engine's own loops hand each payout to its
// processor and send each event, signed with the secret it opens; Start
// refuses while running and runs again after Stop.
func TestEngineRunsItsLoops(t *testing.T) {
	key := make([]byte, seal.KeySize)
	rand.Read(key)
	ring, err := seal.NewKeyRing(seal.Key{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	proc := newRecordingProcessor(t)
	eng, store, clock := startedEngine(t, payoutkit.Config{Processor: proc, SecretKeys: ring})
	e := &env{t: t, ctx: t.Context(), clock: clock, store: store, eng: eng}
	r := newReceiver(t)
	ws := e.workspace(r)
	if stored, err := store.Workspace(e.ctx, ws.ID); err != nil || !seal.IsSealed(stored.WebhookSecret) {
		t.Fatalf("stored secret %q, %v; want it sealed", stored.WebhookSecret, err)
	}
	e.fund(ws.ID, "10.00")
	e.payout(ws.ID, "po-1", "1.00")
	waitFor(t, "po-1 handed over", func() bool { return proc.count("po-1") == 1 })
	r.waitCount(2)
	// Recorded before the stop: an attempt cut short by it would hold its
	// lease, and the fake clock never lets a lease run out.
	e.waitDelivered(ws.ID)
	for _, req := range r.requests() {
		if !req.SigOK {
			t.Fatalf("%s signed with another secret", label(req.Event))
		}
	}

	if err := eng.Start(e.ctx); err == nil {
		t.Fatal("a second Start while running did not fail")
	}
	if err := eng.Stop(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := eng.Stop(e.ctx); err != nil {
		t.Fatalf("Stop when stopped: %v", err)
	}
	e.complete(ws.ID, "po-1")
	time.Sleep(20 * time.Millisecond)
	if n := r.count(); n != 2 {
		t.Fatalf("%d webhooks sent while stopped; want none beyond the 2 before", n)
	}
	if err := eng.Start(e.ctx); err != nil {
		t.Fatalf("Start after Stop: %v", err)
	}
	r.waitCount(3)
	e.waitDelivered(ws.ID)
}

// Without a processor the engine hands nothing over: payouts stay
// submitted and waiting for a hand-off, while webhooks still go out.
func TestEngineWithoutProcessorHandsNothingOver(t *testing.T) {
	eng, store, clock := startedEngine(t, payoutkit.Config{})
	e := &env{t: t, ctx: t.Context(), clock: clock, store: store, eng: eng}
	r := newReceiver(t)
	ws := e.workspace(r)
	e.fund(ws.ID, "10.00")
	e.payout(ws.ID, "po-1", "1.00")
	r.waitCount(2)
	e.waitDelivered(ws.ID)
	leases, err := store.ClaimPayoutHandoffs(e.ctx, "test", clock.Now(), clock.Now().Add(time.Minute), 10)
	if err != nil || len(leases) != 1 || leases[0].PayoutID != "po-1" {
		t.Fatalf("hand-offs due = %+v, %v; want po-1's, untouched", leases, err)
	}
}

// Stop waits for the loops' in-flight work, or returns ctx's error when
// ctx ends first; cancelling Start's ctx stops the loops too.
func TestEngineStopAndStartContexts(t *testing.T) {
	clock := newFakeClock()
	eng, err := payoutkit.New(memstore.New(), &payoutkit.Config{
		PasswordCost: bcrypt.MinCost, Now: clock.Now, Logger: testLogger(t),
		Delivery: payoutkit.DeliveryConfig{Clock: clock},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	waitFor(t, "the loops stopped by Start's context", func() bool {
		err := eng.Start(t.Context())
		return err == nil
	})
	done, stop := context.WithCancel(t.Context())
	stop()
	if err := eng.Stop(done); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop with an ended context: %v", err)
	}
	waitFor(t, "the loops stopped", func() bool {
		return eng.Stop(t.Context()) == nil
	})
}

// An engine from WithStore (a caller's transaction) runs no loops; the
// engine it came from does.
func TestWithStoreEngineRunsNoLoops(t *testing.T) {
	store := memstore.New()
	eng, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.WithStore(store).Start(t.Context()); err == nil {
		t.Fatal("Start on an engine from WithStore did not fail")
	}
	if err := eng.WithStore(store).Stop(t.Context()); err != nil {
		t.Fatalf("Stop on an engine from WithStore: %v", err)
	}
}
