package payoutkit_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/processor/sandbox"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// recordingProcessor counts Submit calls per payout and fails the first
// fail[id] of them.
type recordingProcessor struct {
	t     *testing.T
	mu    sync.Mutex
	calls map[string]int
	fail  map[string]int
}

func newRecordingProcessor(t *testing.T) *recordingProcessor {
	return &recordingProcessor{t: t, calls: map[string]int{}, fail: map[string]int{}}
}

func (p *recordingProcessor) Submit(_ context.Context, sub payoutkit.Submission, _ payoutkit.Settler) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	po := sub.Payout
	if want := payoutkit.IdempotencyKey(po.WorkspaceID, po.PayoutID); sub.IdempotencyKey != want {
		p.t.Errorf("Submit of %s with idempotency key %q; want %q", po.PayoutID, sub.IdempotencyKey, want)
	}
	if po.Status != payoutkit.PayoutSubmitted {
		p.t.Errorf("processor got payout %s in status %s", po.PayoutID, po.Status)
	}
	p.calls[po.PayoutID]++
	if p.fail[po.PayoutID] > 0 {
		p.fail[po.PayoutID]--
		return errors.New("rail unavailable")
	}
	return nil
}

func (p *recordingProcessor) count(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[id]
}

func (p *recordingProcessor) counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.calls {
		out[k] = v
	}
	return out
}

func TestHandOff(t *testing.T) {
	proc := newRecordingProcessor(t)
	proc.fail["po-2"] = 1
	e := newEnv(t, proc)
	ws := e.workspace(newReceiver(t))
	e.fund(ws.ID, "10.00")
	for _, id := range []string{"po-1", "po-2", "po-3"} {
		e.payout(ws.ID, id, "1.00")
	}
	e.complete(ws.ID, "po-3") // settled before any hand-off: never handed over
	if n := len(proc.counts()); n != 0 {
		t.Fatalf("the engine called the processor inline: %v", proc.counts())
	}
	e.startWith(payoutkit.DeliveryConfig{}, e.eng, nil)
	waitFor(t, "first hand-offs", func() bool { return proc.count("po-1") == 1 && proc.count("po-2") == 1 })

	// A new payout is handed over at once: the store says it has new work.
	e.payout(ws.ID, "po-4", "1.00")
	waitFor(t, "po-4 handed over", func() bool { return proc.count("po-4") == 1 })

	// The failed hand-off is retried once its lease expires, and then no more.
	e.clock.Set(t0.Add(time.Minute))
	waitFor(t, "po-2 retried", func() bool { return proc.count("po-2") == 2 })
	for range 5 {
		e.clock.Advance(time.Minute)
		time.Sleep(5 * time.Millisecond)
	}
	if got := proc.counts(); got["po-1"] != 1 || got["po-2"] != 2 || got["po-3"] != 0 || got["po-4"] != 1 || len(got) != 3 {
		t.Fatalf("processor calls %v; want po-1 1, po-2 2, po-4 1", got)
	}
}

func TestHandOffPayoutSkipsSettled(t *testing.T) {
	proc := newRecordingProcessor(t)
	e := newEnv(t, proc)
	ws := e.workspace(nil)
	e.fund(ws.ID, "10.00")
	stale := e.payout(ws.ID, "po-1", "1.00") // as a claim returned it
	if _, err := e.eng.FailPayout(e.ctx, ws.ID, "po-1", "cancelled"); err != nil {
		t.Fatal(err)
	}
	if err := e.eng.HandOffPayout(e.ctx, payoutkit.PayoutLease{Payout: stale, Owner: "A", Token: 1}); err != nil || proc.count("po-1") != 0 {
		t.Fatalf("HandOffPayout of a settled payout: %v, %d calls", err, proc.count("po-1"))
	}
	// A lease whose copy was read a second or more ago is read again too:
	// a processor that said "not due" is asked again with the same lease.
	readAt := e.clock.Now()
	e.clock.Advance(time.Second)
	if err := e.eng.HandOffPayout(e.ctx, payoutkit.PayoutLease{Payout: stale, Owner: "A", Token: 1, ReadAt: readAt}); err != nil || proc.count("po-1") != 0 {
		t.Fatalf("HandOffPayout of a settled payout read a second ago: %v, %d calls", err, proc.count("po-1"))
	}
}

// countingHandOff counts hand-off calls through to the engine.
type countingHandOff struct {
	payoutkit.PayoutHandOff
	mu    sync.Mutex
	calls int
}

func (c *countingHandOff) HandOffPayout(ctx context.Context, p payoutkit.PayoutLease) error {
	err := c.PayoutHandOff.HandOffPayout(ctx, p)
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return err
}

func (c *countingHandOff) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func TestSandboxSettleAfterSurvivesRestart(t *testing.T) {
	clock := newFakeClock()
	rail := &sandbox.Processor{SettleAfter: 5 * time.Minute, Now: clock.Now}
	e := newEnvOn(t, memstore.New(), clock, rail)
	r := newReceiver(t)
	ws := e.workspace(r)
	e.fund(ws.ID, "10.00")
	e.payout(ws.ID, "po-1", "4.00")

	h := &countingHandOff{PayoutHandOff: e.eng}
	a := e.startWith(payoutkit.DeliveryConfig{Owner: "A"}, h, nil)
	waitFor(t, "A's hand-off", func() bool { return h.count() == 1 })
	a.stop()
	if p, _ := e.eng.Payout(e.ctx, ws.ID, "po-1"); p.Status != payoutkit.PayoutSubmitted {
		t.Fatalf("settled before SettleAfter: %+v", p)
	}

	// A new process, two minutes later.
	e.clock.Set(t0.Add(2 * time.Minute))
	e.startWith(payoutkit.DeliveryConfig{Owner: "B"}, e.eng, nil)
	var p payoutkit.Payout
	for step := 0; p.Status != payoutkit.PayoutCompleted; step++ {
		if step == 20 {
			t.Fatal("not settled ten minutes after creation")
		}
		e.clock.Advance(30 * time.Second)
		time.Sleep(5 * time.Millisecond)
		p, _ = e.eng.Payout(e.ctx, ws.ID, "po-1")
	}
	if settled := p.UpdatedAt.Sub(t0); settled < 5*time.Minute || settled > 6*time.Minute || !strings.HasPrefix(p.TxID, "sandbox-") {
		t.Fatalf("settled %s after creation with txid %q", settled, p.TxID)
	}
	waitFor(t, "payout.completed received", func() bool {
		for _, l := range labels(r.requests()) {
			if l == "payout.completed/po-1" {
				return true
			}
		}
		return false
	})
	if b, _ := e.eng.Balance(e.ctx, ws.ID); b.InProgress != 0 || b.Available.String() != "6.00" {
		t.Fatalf("balance %+v", b)
	}
}

func TestSandboxSettlesOnTimeWithinLease(t *testing.T) {
	clock := newFakeClock()
	e := newEnvOn(t, memstore.New(), clock, &sandbox.Processor{SettleAfter: 10 * time.Second, Now: clock.Now})
	ws := e.workspace(nil)
	e.fund(ws.ID, "10.00")
	e.payout(ws.ID, "po-1", "4.00")
	h := &countingHandOff{PayoutHandOff: e.eng}
	e.startWith(payoutkit.DeliveryConfig{}, h, nil)
	waitFor(t, "first hand-off", func() bool { return h.count() == 1 })
	e.clock.Set(t0.Add(10 * time.Second))
	waitFor(t, "settled", func() bool {
		p, _ := e.eng.Payout(e.ctx, ws.ID, "po-1")
		return p.Status == payoutkit.PayoutCompleted
	})
	if p, _ := e.eng.Payout(e.ctx, ws.ID, "po-1"); !p.UpdatedAt.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("settled at %s; want exactly 10 s after creation", p.UpdatedAt)
	}
	if h.count() != 2 {
		t.Fatalf("%d hand-off calls; want 2", h.count())
	}
}

func TestSandboxWithoutSettleAfterWaitsForHand(t *testing.T) {
	e := newEnv(t, &sandbox.Processor{})
	ws := e.workspace(nil)
	e.fund(ws.ID, "10.00")
	e.payout(ws.ID, "po-1", "4.00")
	h := &countingHandOff{PayoutHandOff: e.eng}
	e.startWith(payoutkit.DeliveryConfig{}, h, nil)
	waitFor(t, "hand-off", func() bool { return h.count() == 1 })
	e.clock.Advance(time.Hour)
	time.Sleep(10 * time.Millisecond)
	if p, _ := e.eng.Payout(e.ctx, ws.ID, "po-1"); p.Status != payoutkit.PayoutSubmitted || h.count() != 1 {
		t.Fatalf("payout %s after %d hand-offs", p.Status, h.count())
	}
}

// slowProcessor's first Submit takes until release is closed, longer than
// the lease; every call is recorded with its idempotency key.
type slowProcessor struct {
	mu      sync.Mutex
	keys    []string
	release chan struct{}
}

func (p *slowProcessor) Submit(_ context.Context, sub payoutkit.Submission, _ payoutkit.Settler) error {
	p.mu.Lock()
	p.keys = append(p.keys, sub.IdempotencyKey)
	first := len(p.keys) == 1
	p.mu.Unlock()
	if first {
		<-p.release // a rail that answers late, whatever the context says
	}
	return nil
}

func (p *slowProcessor) calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.keys)
}

// resultHandOff records the result of every hand-off call.
type resultHandOff struct {
	payoutkit.PayoutHandOff
	mu   sync.Mutex
	errs []error
}

func (r *resultHandOff) HandOffPayout(ctx context.Context, l payoutkit.PayoutLease) error {
	err := r.PayoutHandOff.HandOffPayout(ctx, l)
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
	return err
}

func (r *resultHandOff) results() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

// TestSlowSubmitFencedHandOff: a Submit slower than its lease, with two
// dispatchers. The payout is claimed again when the lease runs out and
// submitted again with the same idempotency key; the late first call cannot
// record the hand-off over the newer claim, so exactly one hand-off is
// recorded.
func TestSlowSubmitFencedHandOff(t *testing.T) {
	proc := &slowProcessor{release: make(chan struct{})}
	e := newEnv(t, proc)
	ws := e.workspace(nil)
	e.fund(ws.ID, "10.00")
	e.payout(ws.ID, "po-1", "1.00")
	h := &resultHandOff{PayoutHandOff: e.eng}
	e.startWith(payoutkit.DeliveryConfig{Owner: "A"}, h, nil)
	waitFor(t, "A's slow Submit", func() bool { return len(proc.calls()) == 1 })
	e.startWith(payoutkit.DeliveryConfig{Owner: "B"}, h, nil)

	// A's lease (1 min) runs out while its Submit still runs.
	waitFor(t, "the payout claimed again", func() bool {
		e.clock.Advance(10 * time.Second)
		return len(proc.calls()) == 2
	})
	close(proc.release)
	waitFor(t, "both hand-off calls returned", func() bool { return len(h.results()) == 2 })
	for range 10 { // later polls find nothing left to hand over
		e.clock.Advance(2 * time.Minute)
		time.Sleep(2 * time.Millisecond)
	}
	keys, results := proc.calls(), h.results()
	want := payoutkit.IdempotencyKey(ws.ID, "po-1")
	if len(keys) != 2 || keys[0] != want || keys[1] != want {
		t.Fatalf("Submit keys %q; want two calls with %q", keys, want)
	}
	recorded, refused := 0, 0
	for _, err := range results {
		switch {
		case err == nil:
			recorded++
		case errors.Is(err, payoutkit.ErrConflict):
			refused++
		default:
			t.Fatalf("hand-off error %v", err)
		}
	}
	if recorded != 1 || refused != 1 || len(results) != 2 {
		t.Fatalf("hand-off results %v; want one recorded, one refused as taken over", results)
	}
}
