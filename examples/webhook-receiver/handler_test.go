package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

const secret = "whsec_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH"

type recorder struct {
	mu   sync.Mutex
	got  []payoutkit.WebhookEvent
	fail error
}

func (r *recorder) handle(_ context.Context, ev payoutkit.WebhookEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.got = append(r.got, ev)
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func post(t *testing.T, h http.Handler, body, signature string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if signature != "" {
		req.Header.Set("X-Signature", signature)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Code, strings.TrimSpace(w.Body.String())
}

func event(id string) string {
	return `{"id":"` + id + `","type":"payout.completed","created_at":"2026-11-22T10:00:00Z","workspace_id":"ws_1","data":{"payout_id":"po-1","status":"completed"}}`
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestHandler(t *testing.T) {
	rec := &recorder{}
	h := newHandler(secret, newSeenIDs(100), quiet(), rec.handle)
	body := event("evt_1")

	if code, answer := post(t, h, body, payoutkit.Sign(secret, []byte(body))); code != 200 || answer != "success" {
		t.Fatalf("signed event: %d %q", code, answer)
	}
	if rec.count() != 1 || rec.got[0].ID != "evt_1" || rec.got[0].Type != payoutkit.EventPayoutCompleted || !strings.Contains(string(rec.got[0].Data), `"po-1"`) {
		t.Fatalf("handled %+v", rec.got)
	}
	// A redelivery is acknowledged and not handled again.
	if code, answer := post(t, h, body, payoutkit.Sign(secret, []byte(body))); code != 200 || answer != "success" || rec.count() != 1 {
		t.Fatalf("duplicate: %d %q, handled %d times", code, answer, rec.count())
	}

	for name, c := range map[string]struct {
		body, sig string
		code      int
	}{
		"NoSignature":      {event("evt_2"), "", 401},
		"WrongSecret":      {event("evt_2"), payoutkit.Sign("whsec_other", []byte(event("evt_2"))), 401},
		"TamperedBody":     {strings.Replace(event("evt_2"), "completed", "failed", 1), payoutkit.Sign(secret, []byte(event("evt_2"))), 401},
		"NotHex":           {event("evt_2"), "zz" + payoutkit.Sign(secret, []byte(event("evt_2")))[2:], 401},
		"SignedNonsense":   {"[1,2]", payoutkit.Sign(secret, []byte("[1,2]")), 400},
		"SignedEmptyEvent": {"{}", payoutkit.Sign(secret, []byte("{}")), 400},
		"TooLarge":         {strings.Repeat(" ", maxBody+1), "00", 413},
	} {
		if code, _ := post(t, h, c.body, c.sig); code != c.code {
			t.Errorf("%s: %d; want %d", name, code, c.code)
		}
	}
	if rec.count() != 1 {
		t.Fatalf("refused requests were handled: %d", rec.count())
	}

	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST" {
		t.Errorf("GET: %d", w.Code)
	}
}

func TestHandlerFailureIsRetried(t *testing.T) {
	rec := &recorder{fail: errors.New("database down")}
	h := newHandler(secret, newSeenIDs(100), quiet(), rec.handle)
	body := event("evt_1")
	sig := payoutkit.Sign(secret, []byte(body))
	if code, answer := post(t, h, body, sig); code != 500 || answer == "success" {
		t.Fatalf("failing handler: %d %q", code, answer)
	}
	rec.fail = nil
	if code, answer := post(t, h, body, sig); code != 200 || answer != "success" || rec.count() != 1 {
		t.Fatalf("retry: %d %q, handled %d", code, answer, rec.count())
	}
}

func TestHandlerConcurrentDuplicate(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	h := newHandler(secret, newSeenIDs(100), quiet(), func(context.Context, payoutkit.WebhookEvent) error {
		close(entered)
		<-release
		return nil
	})
	body := event("evt_1")
	sig := payoutkit.Sign(secret, []byte(body))
	first := make(chan int)
	go func() { code, _ := post(t, h, body, sig); first <- code }()
	<-entered
	if code, _ := post(t, h, body, sig); code != http.StatusConflict {
		t.Errorf("duplicate while the first is handled: %d; want 409", code)
	}
	close(release)
	if code := <-first; code != 200 {
		t.Errorf("first: %d", code)
	}
}

func TestSeenIDsIsBounded(t *testing.T) {
	s := newSeenIDs(2)
	for _, id := range []string{"a", "b", "c"} {
		if s.begin(id) != fresh {
			t.Fatalf("%s not fresh", id)
		}
		s.finish(id)
	}
	if s.begin("b") != alreadyDone || s.begin("c") != alreadyDone {
		t.Fatal("recent ids forgotten")
	}
	if s.begin("a") != fresh {
		t.Fatal("the oldest id is still remembered")
	}
	if len(s.state) != 3 { // b, c done; a in progress
		t.Fatalf("%d ids held", len(s.state))
	}
}

// The receiver takes real deliveries from a dispatcher, and a redelivery
// after a lost acknowledgement is handled once.
func TestReceiverWithDispatcher(t *testing.T) {
	store := memstore.New()
	// A short retry delay so that the test runs in real time.
	eng, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Logger: quiet(),
		Delivery: payoutkit.DeliveryConfig{
			Notifier: &payoutkit.HTTPNotifier{AllowPrivate: true}, PollInterval: 5 * time.Millisecond,
			RetryDelays: []time.Duration{10 * time.Millisecond}, Jitter: -1,
		}})
	if err != nil {
		t.Fatal(err)
	}
	nw, err := eng.CreateWorkspace(t.Context(), payoutkit.CreateWorkspaceRequest{Name: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	h := newHandler(nw.Workspace.WebhookSecret, newSeenIDs(100), quiet(), rec.handle)
	var mu sync.Mutex
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		n := requests
		mu.Unlock()
		if n == 1 { // handle the first, then lose the answer
			h.ServeHTTP(httptest.NewRecorder(), r)
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	if _, err := eng.SetWebhookURL(t.Context(), nw.Workspace.ID, srv.URL, payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	if _, _, err := eng.CreateOrder(t.Context(), nw.Workspace.ID, payoutkit.CreateOrderRequest{OrderID: "o-1", Amount: "5.00"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.MarkOrderPaid(t.Context(), nw.Workspace.ID, "o-1"); err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer eng.Stop(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for {
		page, err := store.Events(t.Context(), nw.Workspace.ID, payoutkit.PageRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if page.Items[0].State == payoutkit.DeliveryDelivered {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered: %+v", page.Items[0].EventDelivery)
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if rec.count() != 1 || requests != 2 {
		t.Fatalf("handled %d times in %d requests; want once in 2", rec.count(), requests)
	}
}
