package payoutkit_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// fakeClock is a payoutkit.Clock that moves only when told to.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func newFakeClock() *fakeClock { return &fakeClock{now: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) At(t time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.now) {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{t, ch})
	return ch
}

// Set moves the clock to t (never backwards) and fires the waiters it reached.
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
	c.waiters = slices.DeleteFunc(c.waiters, func(w fakeWaiter) bool {
		if w.at.After(c.now) {
			return false
		}
		w.ch <- c.now
		return true
	})
}

func (c *fakeClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// env is one test's engine over a memstore, on a fake clock.
type env struct {
	t     *testing.T
	ctx   context.Context
	clock *fakeClock
	store payoutkit.Store
	eng   *payoutkit.Engine
}

func newEnv(t *testing.T, processor payoutkit.Processor) *env {
	t.Helper()
	return newEnvOn(t, memstore.New(), newFakeClock(), processor)
}

func newEnvOn(t *testing.T, store payoutkit.Store, clock *fakeClock, processor payoutkit.Processor) *env {
	t.Helper()
	eng, err := payoutkit.New(store, &payoutkit.Config{
		PasswordCost: bcrypt.MinCost, Now: clock.Now, Processor: processor, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: t.Context(), clock: clock, store: store, eng: eng}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// workspace creates a workspace whose webhooks go to r (none when r is nil).
func (e *env) workspace(r *receiver) payoutkit.Workspace {
	e.t.Helper()
	nw, err := e.eng.CreateWorkspace(e.ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme"})
	if err != nil {
		e.t.Fatal(err)
	}
	ws := nw.Workspace
	if r != nil {
		r.setSecret(ws.WebhookSecret)
		if ws, err = e.eng.SetWebhookURL(e.ctx, ws.ID, r.srv.URL, payoutkit.ActorCLI); err != nil {
			e.t.Fatal(err)
		}
	}
	return ws
}

func (e *env) fund(wsID, amount string) payoutkit.Order {
	e.t.Helper()
	id := "ord-" + amount + "-" + e.clock.Now().Format("150405.000000")
	if _, _, err := e.eng.CreateOrder(e.ctx, wsID, payoutkit.CreateOrderRequest{OrderID: id, Amount: amount}); err != nil {
		e.t.Fatal(err)
	}
	o, err := e.eng.MarkOrderPaid(e.ctx, wsID, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return o
}

func (e *env) payout(wsID, id, amount string) payoutkit.Payout {
	e.t.Helper()
	p, _, err := e.eng.CreatePayout(e.ctx, wsID, payoutkit.CreatePayoutRequest{
		PayoutID: id, Amount: amount, Asset: "USDT", Network: "TRON", Address: tronAddress, PayerID: "cust-1",
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) complete(wsID, id string) {
	e.t.Helper()
	if _, err := e.eng.CompletePayout(e.ctx, wsID, id, payoutkit.Completion{TxID: "tx-" + id}); err != nil {
		e.t.Fatal(err)
	}
}

// events returns the workspace's events, oldest first.
func (e *env) events(wsID string) []payoutkit.Event {
	e.t.Helper()
	page, err := e.store.Events(e.ctx, wsID, payoutkit.PageRequest{Limit: 500})
	if err != nil {
		e.t.Fatal(err)
	}
	slices.Reverse(page.Items)
	return page.Items
}

func (e *env) event(wsID string, typ payoutkit.EventType, subject string) payoutkit.Event {
	e.t.Helper()
	for _, ev := range e.events(wsID) {
		if ev.Type == typ && ev.Subject == subject {
			return ev
		}
	}
	e.t.Fatalf("no %s event of %s", typ, subject)
	return payoutkit.Event{}
}

func (e *env) attempts(wsID, eventID string) []payoutkit.DeliveryAttempt {
	e.t.Helper()
	a, err := e.store.DeliveryAttempts(e.ctx, wsID, eventID)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// waitAttempts waits until the event has n recorded attempts.
func (e *env) waitAttempts(wsID, eventID string, n int) []payoutkit.DeliveryAttempt {
	e.t.Helper()
	var a []payoutkit.DeliveryAttempt
	waitFor(e.t, "attempts recorded", func() bool { a = e.attempts(wsID, eventID); return len(a) >= n })
	if len(a) != n {
		e.t.Fatalf("%d attempts; want %d", len(a), n)
	}
	return a
}

// waitDelivered waits until every event of the workspace but those named is
// delivered (and so recorded).
func (e *env) waitDelivered(wsID string, except ...string) {
	e.t.Helper()
	waitFor(e.t, "events delivered", func() bool {
		for _, ev := range e.events(wsID) {
			if ev.State != payoutkit.DeliveryDelivered && !slices.Contains(except, ev.ID) {
				return false
			}
		}
		return true
	})
}

// dispatcher is a running payoutkit.Dispatcher.
type dispatcher struct {
	*payoutkit.Dispatcher
	stop func()
}

// start runs a dispatcher on the env's store and clock until stop or the
// end of the test, handing no payouts over and reading workspaces from the
// store. Unless cfg says otherwise it has no jitter and may reach the
// test's receivers on 127.0.0.1.
func (e *env) start(cfg payoutkit.DeliveryConfig) *dispatcher {
	e.t.Helper()
	return e.startWith(cfg, nil, nil)
}

// startWith is start with the parts the engine supplies to its own loops
// replaced: handOff receives the payouts to hand over (none when nil), and
// workspaces reads each event's workspace (the store when nil).
func (e *env) startWith(cfg payoutkit.DeliveryConfig, handOff payoutkit.PayoutHandOff, workspaces payoutkit.WorkspaceSource) *dispatcher {
	e.t.Helper()
	if workspaces == nil {
		workspaces = e.store
	}
	cfg.Clock = e.clock
	if cfg.Jitter == 0 {
		cfg.Jitter = -1
	}
	if cfg.Notifier == nil {
		cfg.Notifier = &payoutkit.HTTPNotifier{AllowPrivate: true}
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(e.t)
	}
	d, err := payoutkit.NewDispatcher(e.store, &cfg, handOff, workspaces)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				e.t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			e.t.Error("Run did not return within 5 s of cancellation")
		}
	})
	e.t.Cleanup(stop)
	return &dispatcher{Dispatcher: d, stop: stop}
}

// waitFor polls cond in real time until it holds, failing after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// receiver is a webhook receiver on a real HTTP server. It records every
// request, checks its signature, and answers with respond (success by
// default).
type receiver struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	secret  string
	reqs    []request
	respond func(r *http.Request, req request) (int, string)
}

type request struct {
	Event  payoutkit.WebhookEvent
	Header http.Header
	Body   []byte
	SigOK  bool
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) setSecret(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret = s
}

// setRespond replaces how the receiver answers; nil answers success.
func (r *receiver) setRespond(f func(hr *http.Request, req request) (int, string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.respond = f
}

func (r *receiver) serve(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(hr.Body)
	if err != nil {
		return
	}
	r.mu.Lock()
	req := request{Header: hr.Header.Clone(), Body: body, SigOK: payoutkit.VerifySignature(r.secret, body, hr.Header.Get(payoutkit.HeaderSignature))}
	if err := json.Unmarshal(body, &req.Event); err != nil {
		r.t.Errorf("receiver got a body that is not an event: %q", body)
	}
	r.reqs = append(r.reqs, req)
	respond := r.respond
	r.mu.Unlock()
	status, answer := http.StatusOK, "success"
	if respond != nil {
		status, answer = respond(hr, req)
	}
	w.WriteHeader(status)
	io.WriteString(w, answer)
}

func (r *receiver) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// ids returns the event ids received, in arrival order, duplicates included.
func (r *receiver) ids() []string {
	var ids []string
	for _, req := range r.requests() {
		ids = append(ids, req.Event.ID)
	}
	return ids
}

func (r *receiver) count() int { return len(r.requests()) }

// waitCount waits until the receiver has had n requests.
func (r *receiver) waitCount(n int) {
	r.t.Helper()
	waitFor(r.t, "webhook requests", func() bool { return r.count() >= n })
}

// label names an event in test messages: "payout.completed/po-1".
func label(ev payoutkit.WebhookEvent) string {
	var d struct {
		PayoutID string `json:"payout_id"`
		OrderID  string `json:"order_id"`
	}
	_ = json.Unmarshal(ev.Data, &d)
	return string(ev.Type) + "/" + d.PayoutID + d.OrderID
}

func labels(reqs []request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, label(r.Event))
	}
	return out
}
