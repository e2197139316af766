package httpserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/httpserver"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// recorder is a Processor that records what it is handed.
type recorder struct {
	mu     sync.Mutex
	handed []string
	got    chan string
}

func (r *recorder) Submit(_ context.Context, s payoutkit.Submission, _ payoutkit.Settler) error {
	r.mu.Lock()
	r.handed = append(r.handed, s.PayoutID)
	r.mu.Unlock()
	r.got <- s.PayoutID
	return nil
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.handed...)
}

// newControlsEnv is a server over an engine on clock (nil: the real clock)
// whose loops run, handing payouts to proc (nil: none).
func newControlsEnv(t *testing.T, clock *testClock, proc payoutkit.Processor) *env {
	t.Helper()
	store := memstore.New()
	cfg := &payoutkit.Config{PasswordCost: bcrypt.MinCost, Logger: discard(), Processor: proc,
		Delivery: payoutkit.DeliveryConfig{PollInterval: 10 * time.Millisecond}}
	if clock != nil {
		cfg.Now = clock.now
	}
	engine, err := payoutkit.New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Stop(context.Background()) })
	return newEnvWith(t, store, engine, engine, httpserver.Options{Sandbox: true})
}

func (e *env) setPolicy(ws string, patch payoutkit.PolicyPatch) {
	e.t.Helper()
	if _, err := e.engine.SetPayoutPolicy(context.Background(), ws, patch, payoutkit.ActorCLI); err != nil {
		e.t.Fatal(err)
	}
}

func usd(s string) *payoutkit.Limit {
	a, err := payoutkit.ParseAmount(s)
	if err != nil {
		panic(err)
	}
	l := payoutkit.LimitOf(a)
	return &l
}

func TestPayoutLimits(t *testing.T) {
	e := newControlsEnv(t, nil, nil)
	ws, key := e.workspace()
	e.fund(ws, "5000.00")
	e.do("POST", "/v1/payouts", key, payoutBody("po-early", "600.00")).wantCode(t, 0)
	e.setPolicy(ws, payoutkit.PolicyPatch{MaxPayout: usd("500"), DailyLimit: usd("1000")})

	r := e.do("POST", "/v1/payouts", key, payoutBody("po-big", "500.01")).wantCode(t, 40000)
	if r.env.Message != "amount exceeds the payout limit of 500.00" {
		t.Fatalf("message %q", r.env.Message)
	}
	e.do("POST", "/v1/payouts", key, payoutBody("po-1", "100.00")).wantCode(t, 0)
	r = e.do("POST", "/v1/payouts", key, payoutBody("po-2", "400.00")).wantCode(t, 40000)
	if r.env.Message != "amount exceeds the 24-hour payout limit of 1000.00 (300.00 left)" {
		t.Fatalf("message %q", r.env.Message)
	}
	// Replays are judged before the policy: po-early is above both limits now.
	r = e.do("POST", "/v1/payouts", key, payoutBody("po-early", "600.00")).wantCode(t, 0)
	if r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("the replay of an accepted payout was not replayed")
	}
	// A failed payout frees its share.
	e.do("POST", "/v1/sandbox/payouts/fail", key, map[string]any{"payout_id": "po-early"}).wantCode(t, 0)
	e.do("POST", "/v1/payouts", key, payoutBody("po-2", "400.00")).wantCode(t, 0)
	e.audit(ws)
}

func TestAddressAllowlist(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	e := newControlsEnv(t, clock, nil)
	ws, key := e.workspace()
	e.fund(ws, "100.00")
	on := true
	e.setPolicy(ws, payoutkit.PolicyPatch{AddressAllowlist: &on})

	r := e.do("POST", "/v1/payouts", key, payoutBody("po-1", "10.00")).wantCode(t, 40300)
	if r.env.Message != "address is not in the allowlist" {
		t.Fatalf("message %q", r.env.Message)
	}
	entry, err := e.engine.AddAddress(context.Background(), ws, "TRON", tronAddr, "treasury", payoutkit.ActorCLI)
	if err != nil {
		t.Fatal(err)
	}
	clock.set(clock.now().Add(23 * time.Hour))
	r = e.do("POST", "/v1/payouts", key, payoutBody("po-1", "10.00")).wantCode(t, 40300)
	if r.env.Message != "address is allowlisted but usable only from 2026-05-02T12:00:00Z" || !entry.UsableFrom.Equal(clock.now().Add(time.Hour)) {
		t.Fatalf("message %q, entry %+v", r.env.Message, entry)
	}
	clock.set(clock.now().Add(time.Hour))
	e.do("POST", "/v1/payouts", key, payoutBody("po-1", "10.00")).wantCode(t, 0)

	if n, err := e.engine.RemoveAddress(context.Background(), ws, "TRON", tronAddr, payoutkit.ActorCLI); err != nil || n != 1 {
		t.Fatalf("RemoveAddress = %d, %v", n, err)
	}
	e.do("POST", "/v1/payouts", key, payoutBody("po-2", "10.00")).wantCode(t, 40300).wantMessage(t, "address is not in the allowlist")
	e.wantBalanceOf(ws, "90.00")
}

func (e *env) wantBalanceOf(ws, available string) {
	e.t.Helper()
	b, err := e.engine.Balance(context.Background(), ws)
	if err != nil || b.Available.String() != available {
		e.t.Fatalf("available = %v, %v; want %s", b.Available, err, available)
	}
	e.audit(ws)
}

func TestApprovalHold(t *testing.T) {
	proc := &recorder{got: make(chan string, 16)}
	e := newControlsEnv(t, nil, proc)
	ws, key := e.workspace()
	e.fund(ws, "1000.00")
	e.setPolicy(ws, payoutkit.PolicyPatch{ApprovalOver: usd("250")})

	r := e.do("POST", "/v1/payouts", key, payoutBody("po-held", "300.00")).wantCode(t, 0)
	if !strings.Contains(string(r.env.Data), `"approval":"pending"`) || !strings.Contains(string(r.env.Data), `"status":"submitted"`) {
		t.Fatalf("held payout = %s", r.env.Data)
	}
	e.do("POST", "/v1/payouts", key, payoutBody("po-reject", "400.00")).wantCode(t, 0)
	e.do("POST", "/v1/payouts", key, payoutBody("po-small", "250.00")).wantCode(t, 0)
	e.wantBalanceOf(ws, "50.00")
	// The payout not held is handed over; the held ones are not.
	if got := <-proc.got; got != "po-small" {
		t.Fatalf("handed %s first; want po-small", got)
	}
	select {
	case id := <-proc.got:
		t.Fatalf("handed %s while held", id)
	case <-time.After(200 * time.Millisecond):
	}
	e.do("POST", "/v1/sandbox/payouts/complete", key, map[string]any{"payout_id": "po-held"}).wantCode(t, 40900)
	r = e.do("POST", "/v1/payouts/list", key, map[string]any{"approval": "pending"}).wantCode(t, 0)
	if !strings.Contains(string(r.env.Data), "po-held") || !strings.Contains(string(r.env.Data), "po-reject") || strings.Contains(string(r.env.Data), "po-small") {
		t.Fatalf("pending list = %s", r.env.Data)
	}

	p, err := e.engine.ApprovePayout(context.Background(), ws, "po-held", payoutkit.StaffActor("admin@acme.test", "192.0.2.1"))
	if err != nil || p.Approval != payoutkit.ApprovalApproved {
		t.Fatalf("ApprovePayout = %+v, %v", p, err)
	}
	select {
	case got := <-proc.got:
		if got != "po-held" {
			t.Fatalf("handed %s; want po-held", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the approved payout was not handed over")
	}

	p, err = e.engine.RejectPayout(context.Background(), ws, "po-reject", "unknown customer", payoutkit.ActorCLI)
	if err != nil || p.Status != payoutkit.PayoutFailed || p.FailureReason != "rejected: unknown customer" || p.Approval != payoutkit.ApprovalRejected {
		t.Fatalf("RejectPayout = %+v, %v", p, err)
	}
	e.wantBalanceOf(ws, "450.00")
	evs, err := e.store.SubjectEvents(context.Background(), ws, "payout:po-reject")
	if err != nil || len(evs) != 2 || evs[1].Type != payoutkit.EventPayoutFailed || !strings.Contains(string(evs[1].Body), `"approval":"rejected"`) {
		t.Fatalf("events = %+v, %v", evs, err)
	}
	r = e.do("POST", "/v1/payouts/info", key, map[string]any{"payout_id": "po-reject"}).wantCode(t, 0)
	if !strings.Contains(string(r.env.Data), `"failure_reason":"rejected: unknown customer"`) {
		t.Fatalf("rejected payout = %s", r.env.Data)
	}
	if seen := proc.seen(); len(seen) != 2 {
		t.Fatalf("handed %v; want po-small and po-held only", seen)
	}
	e.do("POST", "/v1/payouts/list", key, map[string]any{"approval": ""}).wantCode(t, 40000)
	e.do("POST", "/v1/payouts/list", key, map[string]any{"approval": "maybe"}).wantCode(t, 40000)
}
