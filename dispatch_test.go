package payoutkit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

func TestDeliversSignedEvents(t *testing.T) {
	e := newEnv(t, nil)
	r := newReceiver(t)
	ws := e.workspace(r)
	e.fund(ws.ID, "10.00")
	e.payout(ws.ID, "po-1", "4.00")
	e.complete(ws.ID, "po-1")
	e.payout(ws.ID, "po-2", "1.50")
	if _, err := e.eng.FailPayout(e.ctx, ws.ID, "po-2", "address rejected"); err != nil {
		t.Fatal(err)
	}
	e.start(payoutkit.DeliveryConfig{})
	r.waitCount(5)

	stored := map[string]payoutkit.Event{}
	for _, ev := range e.events(ws.ID) {
		stored[ev.ID] = ev
	}
	reqs := r.requests()
	for _, req := range reqs {
		ev, ok := stored[req.Event.ID]
		switch {
		case !ok:
			t.Fatalf("received unknown event %s", req.Event.ID)
		case !req.SigOK:
			t.Errorf("%s: signature %q does not verify", label(req.Event), req.Header.Get("X-Signature"))
		case req.Header.Get("X-Signature") != payoutkit.Sign(ws.WebhookSecret, req.Body):
			t.Errorf("%s: X-Signature is not the lowercase hex HMAC", label(req.Event))
		case !bytes.Equal(req.Body, ev.Body):
			t.Errorf("%s: body differs from the stored event body", label(req.Event))
		case req.Header.Get("Content-Type") != "application/json":
			t.Errorf("Content-Type = %q", req.Header.Get("Content-Type"))
		case req.Header.Get("X-Event-Id") != ev.ID || req.Header.Get("X-Event-Type") != string(ev.Type):
			t.Errorf("X-Event-Id %q, X-Event-Type %q; want %s, %s", req.Header.Get("X-Event-Id"), req.Header.Get("X-Event-Type"), ev.ID, ev.Type)
		case req.Event.WorkspaceID != ws.ID || req.Event.Type != ev.Type || !req.Event.CreatedAt.Equal(ev.CreatedAt):
			t.Errorf("body envelope %+v", req.Event)
		}
		// The envelope has exactly the contract's members.
		var members map[string]json.RawMessage
		if err := json.Unmarshal(req.Body, &members); err != nil {
			t.Fatal(err)
		}
		if keys := strings.Join(slices.Sorted(mapKeys(members)), ","); keys != "created_at,data,id,type,workspace_id" {
			t.Errorf("body members %s", keys)
		}
	}

	// Per payout, submitted before its outcome.
	got := labels(reqs)
	for _, pair := range [][2]string{
		{"payout.submitted/po-1", "payout.completed/po-1"},
		{"payout.submitted/po-2", "payout.failed/po-2"},
	} {
		if i, j := slices.Index(got, pair[0]), slices.Index(got, pair[1]); i < 0 || j < 0 || i > j {
			t.Errorf("received %v; want %s before %s", got, pair[0], pair[1])
		}
	}
	if !slices.Contains(got, "order.paid/"+e.events(ws.ID)[0].Subject[len("order:"):]) {
		t.Errorf("no order.paid in %v", got)
	}

	// Data members are the contract's objects.
	for _, req := range reqs {
		var data map[string]any
		if err := json.Unmarshal(req.Event.Data, &data); err != nil {
			t.Fatal(err)
		}
		switch label(req.Event) {
		case "payout.completed/po-1":
			if data["status"] != "completed" || data["txid"] != "tx-po-1" || data["amount"] != "4.00" ||
				data["currency"] != "USD" || data["failure_reason"] != nil || data["asset"] != "USDT" || data["network"] != "TRON" {
				t.Errorf("payout.completed data %v", data)
			}
		case "payout.failed/po-2":
			if data["status"] != "failed" || data["failure_reason"] != "address rejected" || data["txid"] != nil || data["amount"] != "1.50" {
				t.Errorf("payout.failed data %v", data)
			}
		case "payout.submitted/po-1":
			if data["status"] != "submitted" || data["txid"] != nil || data["payer_id"] != "cust-1" || data["address"] != tronAddress {
				t.Errorf("payout.submitted data %v", data)
			}
		default:
			if req.Event.Type == payoutkit.EventOrderPaid && (data["status"] != "paid" || data["amount"] != "10.00" || data["paid_at"] == nil) {
				t.Errorf("order.paid data %v", data)
			}
		}
	}

	// Every event is delivered after one attempt, which the log shows.
	waitFor(t, "all delivered", func() bool {
		for _, ev := range e.events(ws.ID) {
			if ev.State != payoutkit.DeliveryDelivered {
				return false
			}
		}
		return true
	})
	for _, ev := range e.events(ws.ID) {
		a := e.attempts(ws.ID, ev.ID)
		if ev.Attempts != 1 || len(a) != 1 || a[0].StatusCode != 200 || a[0].ResponseHead != "success" ||
			a[0].Error != "" || a[0].Latency <= 0 || !a[0].At.Equal(t0) || a[0].Attempt != 1 {
			t.Errorf("%s: state %+v, attempts %+v", ev.Type, ev.EventDelivery, a)
		}
	}
	if len(reqs) != 5 {
		t.Errorf("%d requests; want 5", len(reqs))
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// schedule is the contract's attempt times, as offsets from the first.
func schedule() []time.Duration {
	out := []time.Duration{0}
	for _, d := range payoutkit.RetryDelays() {
		out = append(out, out[len(out)-1]+d)
	}
	return out
}

func TestRetrySchedule(t *testing.T) {
	if got := schedule(); len(got) != 9 || got[8] != 10*time.Second+time.Minute+5*time.Minute+30*time.Minute+2*time.Hour+6*time.Hour+12*time.Hour+24*time.Hour {
		t.Fatalf("schedule %v", got)
	}
	blockUntilCancelled := func(hr *http.Request, _ request) (int, string) {
		select {
		case <-hr.Context().Done():
		case <-time.After(5 * time.Second):
		}
		return 200, "success"
	}
	cases := []struct {
		name      string
		respond   func(*http.Request, request) (int, string)
		refuse    bool // no server listens
		timeout   time.Duration
		status    int
		errSubstr string
	}{
		{name: "500", respond: func(*http.Request, request) (int, string) { return 500, "oops" }, status: 500, errSubstr: "HTTP 500"},
		{name: "WrongBody", respond: func(*http.Request, request) (int, string) { return 200, "ok" }, status: 200, errSubstr: `not "success"`},
		{name: "SuccessWithout2xx", respond: func(*http.Request, request) (int, string) { return 302, "success" }, status: 302, errSubstr: "HTTP 302"},
		{name: "Timeout", respond: blockUntilCancelled, timeout: 50 * time.Millisecond, errSubstr: "no answer within 50ms"},
		{name: "Refused", refuse: true, errSubstr: "refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			r := newReceiver(t)
			r.setRespond(c.respond)
			ws := e.workspace(r)
			if c.refuse {
				r.srv.Close()
			}
			e.fund(ws.ID, "10.00")
			ev := e.events(ws.ID)[0]
			d := e.start(payoutkit.DeliveryConfig{Notifier: &payoutkit.HTTPNotifier{AllowPrivate: true, Timeout: c.timeout}})

			want := schedule()
			var attempts []payoutkit.DeliveryAttempt
			for n, offset := range want {
				e.clock.Set(t0.Add(offset))
				attempts = e.waitAttempts(ws.ID, ev.ID, n+1)
				a := attempts[n]
				if !a.At.Equal(t0.Add(offset)) || a.Attempt != n+1 || a.StatusCode != c.status || !strings.Contains(a.Error, c.errSubstr) {
					t.Fatalf("attempt %d = %+v; want at +%s, status %d, error with %q", n+1, a, offset, c.status, c.errSubstr)
				}
				got, err := e.store.Event(e.ctx, ws.ID, ev.ID)
				if err != nil {
					t.Fatal(err)
				}
				if n+1 < len(want) {
					if next := t0.Add(want[n+1]); got.State != payoutkit.DeliveryPending || !got.NextAttemptAt.Equal(next) {
						t.Fatalf("after attempt %d: %+v; want pending at %s", n+1, got.EventDelivery, next)
					}
				} else if got.State != payoutkit.DeliveryFailed || got.Attempts != 9 || got.LastError != a.Error {
					t.Fatalf("after the last attempt: %+v; want failed", got.EventDelivery)
				}
			}
			if c.status == 500 && attempts[0].ResponseHead != "oops" {
				t.Errorf("response head %q", attempts[0].ResponseHead)
			}
			if !c.refuse {
				reqs := r.requests()
				// A timed-out request may be cut off before the receiver has its body.
				if len(reqs) != 9 && (c.timeout == 0 || len(reqs) == 0 || len(reqs) > 9) {
					t.Fatalf("receiver got %d requests; want 9", len(reqs))
				}
				for _, req := range reqs {
					if !bytes.Equal(req.Body, reqs[0].Body) || !req.SigOK {
						t.Fatal("a retry sent other bytes or a bad signature")
					}
				}
			}
			// A day later nothing more happens by itself.
			e.clock.Advance(48 * time.Hour)
			time.Sleep(20 * time.Millisecond)
			if n := len(e.attempts(ws.ID, ev.ID)); n != 9 {
				t.Fatalf("%d attempts after giving up", n)
			}

			// Resending a failed event gives it one more attempt.
			if c.name == "WrongBody" {
				if err := d.Resend(e.ctx, ws.ID, ev.ID); err != nil {
					t.Fatal(err)
				}
				e.waitAttempts(ws.ID, ev.ID, 10)
				got, _ := e.store.Event(e.ctx, ws.ID, ev.ID)
				if got.State != payoutkit.DeliveryFailed || got.Attempts != 10 {
					t.Fatalf("after a failed resend: %+v; want failed again", got.EventDelivery)
				}
			}
			if !c.refuse {
				r.setRespond(nil)
			} else {
				fixed := newReceiver(t)
				fixed.setSecret(ws.WebhookSecret)
				if _, err := e.eng.SetWebhookURL(e.ctx, ws.ID, fixed.srv.URL, payoutkit.ActorCLI); err != nil {
					t.Fatal(err)
				}
				r = fixed
			}
			if err := d.Resend(e.ctx, ws.ID, ev.ID); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "resent event delivered", func() bool {
				got, _ := e.store.Event(e.ctx, ws.ID, ev.ID)
				return got.State == payoutkit.DeliveryDelivered
			})
			last := e.attempts(ws.ID, ev.ID)
			if a := last[len(last)-1]; a.StatusCode != 200 || a.Error != "" {
				t.Fatalf("resend attempt %+v", a)
			}
			if reqs := r.requests(); !reqs[len(reqs)-1].SigOK || reqs[len(reqs)-1].Event.ID != ev.ID {
				t.Fatal("resent event not received intact")
			}
			if err := d.Resend(e.ctx, ws.ID, "evt_unknown"); !errors.Is(err, payoutkit.ErrNotFound) {
				t.Fatalf("resend of an unknown event: %v", err)
			}
			if err := d.Resend(e.ctx, "ws_other", ev.ID); !errors.Is(err, payoutkit.ErrNotFound) {
				t.Fatalf("resend from another workspace: %v", err)
			}
		})
	}
}

func TestJitterOnlyDelays(t *testing.T) {
	e := newEnv(t, nil)
	r := newReceiver(t)
	r.setRespond(func(*http.Request, request) (int, string) { return 503, "" })
	ws := e.workspace(r)
	e.fund(ws.ID, "1.00")
	ev := e.events(ws.ID)[0]
	e.start(payoutkit.DeliveryConfig{Jitter: 0.5})
	e.waitAttempts(ws.ID, ev.ID, 1)
	got, _ := e.store.Event(e.ctx, ws.ID, ev.ID)
	if next := got.NextAttemptAt.Sub(t0); next < 10*time.Second || next > 15*time.Second {
		t.Fatalf("next attempt after %s; want within [10s, 15s]", next)
	}
}

// TestNoWebhookURL: a workspace without a URL keeps its events but nothing
// is attempted or retried; a URL set later does not send older events, a
// resend does; a URL removed while events are pending ends their retries.
func TestNoWebhookURL(t *testing.T) {
	e := newEnv(t, nil)
	ws := e.workspace(nil)
	e.fund(ws.ID, "1.00")
	old := e.events(ws.ID)[0]
	if old.State != payoutkit.DeliveryFailed || old.LastError != payoutkit.NoWebhookURLError {
		t.Fatalf("event without a URL: %+v", old.EventDelivery)
	}
	if st := old.EventState(); st != payoutkit.EventStateNotSent {
		t.Fatalf("event without a URL shown %q; want not_sent", st)
	}
	e.start(payoutkit.DeliveryConfig{})
	r := newReceiver(t)
	r.setSecret(ws.WebhookSecret)
	if _, err := e.eng.SetWebhookURL(e.ctx, ws.ID, r.srv.URL, payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	// A new event goes out; the older one, claimed first if it were due,
	// does not.
	// polled moves the clock a second at a time until n requests arrived,
	// so that the dispatcher's next poll comes whenever it waits for one.
	polled := func(n int) {
		t.Helper()
		waitFor(t, "webhook requests", func() bool {
			e.clock.Advance(time.Second)
			return len(r.requests()) >= n
		})
	}
	e.fund(ws.ID, "2.00")
	polled(1)
	e.clock.Advance(48 * time.Hour)
	e.fund(ws.ID, "3.00")
	polled(2)
	for _, req := range r.requests() {
		if req.Event.ID == old.ID {
			t.Fatal("setting a URL sent an event recorded before it")
		}
	}
	if a, _ := e.store.DeliveryAttempts(e.ctx, ws.ID, old.ID); len(a) != 0 {
		t.Fatalf("attempts of an event recorded without a URL: %+v", a)
	}
	if err := e.eng.ResendEvent(e.ctx, ws.ID, old.ID); err != nil {
		t.Fatal(err)
	}
	polled(3)
	if a := e.waitAttempts(ws.ID, old.ID, 1); a[0].StatusCode != 200 {
		t.Fatalf("resent attempt %+v", a[0])
	}
	waitFor(t, "the resent event to be delivered", func() bool {
		ev, err := e.store.Event(e.ctx, ws.ID, old.ID)
		return err == nil && ev.EventState() == payoutkit.EventStateDelivered
	})

	// The URL removed while an event waits for its retry: the retry gives
	// up at once instead of running the schedule.
	r.setRespond(func(*http.Request, request) (int, string) { return 500, "down" })
	e.fund(ws.ID, "4.00")
	polled(4)
	evs := e.events(ws.ID)
	pending := evs[len(evs)-1]
	if _, err := e.eng.SetWebhookURL(e.ctx, ws.ID, "", payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the event to fail", func() bool {
		e.clock.Advance(10 * time.Second)
		ev, err := e.store.Event(e.ctx, ws.ID, pending.ID)
		return err == nil && ev.State == payoutkit.DeliveryFailed
	})
	a := e.attempts(ws.ID, pending.ID)
	if last := a[len(a)-1]; len(a) < 2 || a[0].StatusCode != 500 || last.Error != payoutkit.NoWebhookURLError || last.StatusCode != 0 {
		t.Fatalf("attempts after the URL was removed: %+v", a)
	}
	if ev, _ := e.store.Event(e.ctx, ws.ID, pending.ID); ev.EventState() != payoutkit.EventStateNotSent {
		t.Fatalf("event given up on after the URL was removed shown %q; want not_sent", ev.EventState())
	}
	e.clock.Advance(48 * time.Hour)
	time.Sleep(20 * time.Millisecond)
	if n := len(e.attempts(ws.ID, pending.ID)); n != len(a) {
		t.Fatalf("%d attempts after giving up; want %d", n, len(a))
	}
}

func TestFailingPayoutHoldsBackOnlyItself(t *testing.T) {
	e := newEnv(t, nil)
	r1, r2 := newReceiver(t), newReceiver(t)
	ws1, ws2 := e.workspace(r1), e.workspace(r2)
	// ws1's receiver refuses po-1's submission until told otherwise.
	var accept atomic.Bool
	r1.setRespond(func(_ *http.Request, req request) (int, string) {
		if label(req.Event) == "payout.submitted/po-1" && !accept.Load() {
			return 500, "not now"
		}
		return 200, "success"
	})
	for _, ws := range []string{ws1.ID, ws2.ID} {
		e.fund(ws, "10.00")
		for _, id := range []string{"po-1", "po-2"} {
			e.payout(ws, id, "1.00")
			e.complete(ws, id)
		}
	}
	e.start(payoutkit.DeliveryConfig{})
	// Everything but po-1's events in ws1 goes out at once; ws2's po-1 too.
	sub := e.event(ws1.ID, payoutkit.EventPayoutSubmitted, "payout:po-1")
	done := e.event(ws1.ID, payoutkit.EventPayoutCompleted, "payout:po-1")
	e.waitAttempts(ws1.ID, sub.ID, 1)
	e.waitDelivered(ws1.ID, sub.ID, done.ID)
	e.waitDelivered(ws2.ID)
	for n, offset := range schedule()[1:4] {
		e.clock.Set(t0.Add(offset))
		e.waitAttempts(ws1.ID, sub.ID, n+2)
		if a := e.attempts(ws1.ID, done.ID); len(a) != 0 {
			t.Fatalf("po-1's completion attempted while its submission is pending: %+v", a)
		}
	}
	if got := labels(r1.requests()); slices.Contains(got, "payout.completed/po-1") {
		t.Fatalf("ws1 received %v", got)
	}
	// Once the submission goes through, the completion follows at once.
	accept.Store(true)
	e.clock.Set(t0.Add(schedule()[4]))
	waitFor(t, "po-1 completed delivered", func() bool { return slices.Contains(labels(r1.requests()), "payout.completed/po-1") })
	got := labels(r1.requests())
	if slices.Index(got, "payout.completed/po-1") < len(got)-1 || got[len(got)-2] != "payout.submitted/po-1" {
		t.Fatalf("ws1 received %v", got)
	}
	if a := e.waitAttempts(ws1.ID, done.ID, 1); !a[0].At.Equal(t0.Add(schedule()[4])) {
		t.Fatalf("completion attempts %+v", a)
	}
	// Every other event went out on its first attempt, at t0.
	for _, ws := range []string{ws1.ID, ws2.ID} {
		for _, ev := range e.events(ws) {
			if ev.ID == sub.ID || ev.ID == done.ID {
				continue
			}
			if a := e.attempts(ws, ev.ID); len(a) != 1 || !a[0].At.Equal(t0) || a[0].StatusCode != 200 {
				t.Errorf("%s %s attempts %+v", ws, ev.Type, a)
			}
		}
	}
	if r2.count() != 5 {
		t.Errorf("ws2 received %d requests; want 5", r2.count())
	}
}

func TestGivingUpReleasesTheNextEvent(t *testing.T) {
	e := newEnv(t, nil)
	r := newReceiver(t)
	r.setRespond(func(_ *http.Request, req request) (int, string) {
		if req.Event.Type == payoutkit.EventPayoutSubmitted {
			return 500, ""
		}
		return 200, "success"
	})
	ws := e.workspace(r)
	e.fund(ws.ID, "10.00")
	e.payout(ws.ID, "po-1", "1.00")
	e.complete(ws.ID, "po-1")
	sub := e.event(ws.ID, payoutkit.EventPayoutSubmitted, "payout:po-1")
	done := e.event(ws.ID, payoutkit.EventPayoutCompleted, "payout:po-1")
	e.start(payoutkit.DeliveryConfig{})
	for n, offset := range schedule() {
		e.clock.Set(t0.Add(offset))
		e.waitAttempts(ws.ID, sub.ID, n+1)
	}
	a := e.waitAttempts(ws.ID, done.ID, 1)
	if !a[0].At.Equal(t0.Add(schedule()[8])) || a[0].StatusCode != 200 {
		t.Fatalf("completion attempt %+v", a[0])
	}
}

func TestRestartDeliversEverything(t *testing.T) {
	e := newEnv(t, nil)
	r := newReceiver(t)
	// The receiver hangs on completions until the sender gives up.
	var hang atomic.Bool
	hang.Store(true)
	r.setRespond(func(hr *http.Request, req request) (int, string) {
		if req.Event.Type == payoutkit.EventPayoutCompleted && hang.Load() {
			<-hr.Context().Done()
		}
		return 200, "success"
	})
	ws := e.workspace(r)
	e.fund(ws.ID, "10.00")
	for _, id := range []string{"po-1", "po-2", "po-3"} {
		e.payout(ws.ID, id, "1.00")
		e.complete(ws.ID, id)
	}
	a := e.start(payoutkit.DeliveryConfig{Owner: "A"})
	r.waitCount(7) // order.paid, three submissions, three completions in flight
	var completions []string
	for _, ev := range e.events(ws.ID) {
		if ev.Type == payoutkit.EventPayoutCompleted {
			completions = append(completions, ev.ID)
		}
	}
	e.waitDelivered(ws.ID, completions...)
	a.stop() // returns at once: in-flight attempts are abandoned, not recorded
	for _, ev := range e.events(ws.ID) {
		n := len(e.attempts(ws.ID, ev.ID))
		if want := map[bool]int{true: 0, false: 1}[ev.Type == payoutkit.EventPayoutCompleted]; n != want {
			t.Fatalf("%s has %d attempts after the stop; want %d", ev.Type, n, want)
		}
	}

	hang.Store(false)
	b := e.start(payoutkit.DeliveryConfig{Owner: "B"})
	time.Sleep(20 * time.Millisecond) // B polls, but A's leases still hold
	if r.count() != 7 {
		t.Fatalf("B delivered before A's leases expired: %d requests", r.count())
	}
	e.clock.Advance(time.Minute) // A's leases (1 min) expire
	waitFor(t, "all delivered", func() bool {
		for _, ev := range e.events(ws.ID) {
			if ev.State != payoutkit.DeliveryDelivered {
				return false
			}
		}
		return true
	})
	// Duplicates are exactly the attempts whose outcome was unknown.
	seen := map[string]int{}
	for _, id := range r.ids() {
		seen[id]++
	}
	for _, ev := range e.events(ws.ID) {
		want := 1
		if ev.Type == payoutkit.EventPayoutCompleted {
			want = 2
		}
		if seen[ev.ID] != want {
			t.Errorf("%s received %d times; want %d", ev.Type, seen[ev.ID], want)
		}
		if at := e.attempts(ws.ID, ev.ID); len(at) != 1 {
			t.Errorf("%s has %d recorded attempts; want 1", ev.Type, len(at))
		}
	}
	if len(seen) != 7 || r.count() != 10 {
		t.Errorf("%d distinct events in %d requests; want 7 in 10", len(seen), r.count())
	}
	b.stop()
}

func TestConcurrencyBoundsSlowReceivers(t *testing.T) {
	e := newEnv(t, nil)
	slow, fast := newReceiver(t), newReceiver(t)
	release := make(chan struct{})
	slow.setRespond(func(hr *http.Request, _ request) (int, string) {
		select {
		case <-release:
		case <-hr.Context().Done():
		}
		return 200, "success"
	})
	wsSlow, wsFast := e.workspace(slow), e.workspace(fast)
	e.fund(wsSlow.ID, "10.00")
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		e.payout(wsSlow.ID, id, "1.00")
	}
	e.fund(wsFast.ID, "10.00")
	e.start(payoutkit.DeliveryConfig{Concurrency: 3, MaxPerWorkspace: 3})
	slow.waitCount(3) // three workers stuck on the slow receiver
	time.Sleep(20 * time.Millisecond)
	if n := slow.count(); n != 3 {
		t.Fatalf("%d requests in flight at the slow receiver; want 3", n)
	}
	if fast.count() != 0 {
		t.Fatal("a fourth delivery ran with Concurrency 3")
	}
	close(release)
	fast.waitCount(1)
	slow.waitCount(6)
}

func TestHangingReceiverLeavesWorkersToOthers(t *testing.T) {
	e := newEnv(t, nil)
	hanging, fast := newReceiver(t), newReceiver(t)
	hanging.setRespond(func(hr *http.Request, _ request) (int, string) {
		<-hr.Context().Done()
		return 200, "success"
	})
	wsHanging := e.workspace(hanging)
	e.fund(wsHanging.ID, "10.00")
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		e.payout(wsHanging.ID, id, "1.00")
	}
	wsFast := e.workspace(fast)
	e.fund(wsFast.ID, "10.00")
	e.payout(wsFast.ID, "a", "1.00")
	e.start(payoutkit.DeliveryConfig{Concurrency: 4}) // two per workspace
	e.waitDelivered(wsFast.ID)
	hanging.waitCount(2)
	time.Sleep(20 * time.Millisecond)
	if n := hanging.count(); n != 2 {
		t.Fatalf("%d requests in flight at the hanging receiver; want 2", n)
	}
}

func TestConfig(t *testing.T) {
	store := memstore.New()
	d1, err := payoutkit.NewDispatcher(store, nil, nil, store)
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := payoutkit.NewDispatcher(store, nil, nil, store)
	if d1.Owner() == "" || d1.Owner() == d2.Owner() {
		t.Errorf("owners %q and %q", d1.Owner(), d2.Owner())
	}
	if c := d1.Config(); c.Lease != time.Minute || c.PollInterval != time.Second || c.Concurrency != 256 || c.MaxPerWorkspace != 128 || c.BatchSize != 100 ||
		c.Jitter != 0.1 || len(c.RetryDelays) != 8 || c.Notifier.(*payoutkit.HTTPNotifier).AllowPrivate {
		t.Errorf("defaults %+v", c)
	}
	for _, bad := range []payoutkit.DeliveryConfig{
		{Lease: 15 * time.Second}, // under twice the 10 s timeout
		{Concurrency: -1},
		{MaxPerWorkspace: -1},
		{RetryDelays: []time.Duration{0}},
		{Jitter: 2},
	} {
		if _, err := payoutkit.NewDispatcher(store, &bad, nil, store); err == nil {
			t.Errorf("NewDispatcher accepted %+v", bad)
		}
		// The engine refuses it too, in New rather than at Start.
		if _, err := payoutkit.New(store, &payoutkit.Config{Delivery: bad}); err == nil {
			t.Errorf("payoutkit.New accepted Delivery %+v", bad)
		}
	}
	if _, err := payoutkit.NewDispatcher(nil, nil, nil, nil); err == nil {
		t.Error("NewDispatcher accepted a nil store")
	}
}

func TestRunTwice(t *testing.T) {
	e := newEnv(t, nil)
	d := e.start(payoutkit.DeliveryConfig{})
	waitFor(t, "running", d.Running)
	if err := d.Run(e.ctx); err == nil {
		t.Fatal("second Run did not fail")
	}
}

// Events from a real server's request path reach a receiver that checks
// them with the same library call merchants use.
func TestReceiverVerifiesWithLibrary(t *testing.T) {
	e := newEnv(t, nil)
	var got atomic.Int32
	var secret atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := new(bytes.Buffer)
		body.ReadFrom(r.Body)
		if !payoutkit.VerifySignature(secret.Load().(string), body.Bytes(), r.Header.Get(payoutkit.HeaderSignature)) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		got.Add(1)
		w.Write([]byte("  success\n"))
	}))
	defer srv.Close()
	nw, err := e.eng.CreateWorkspace(e.ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme", WebhookURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	secret.Store(nw.Workspace.WebhookSecret)
	e.fund(nw.Workspace.ID, "1.00")
	e.start(payoutkit.DeliveryConfig{})
	waitFor(t, "delivery", func() bool { return got.Load() == 1 })
	waitFor(t, "delivered", func() bool { return e.events(nw.Workspace.ID)[0].State == payoutkit.DeliveryDelivered })
}

// TestRetention: delivered events go after the retention, in the
// background; failed ones stay.
func TestRetention(t *testing.T) {
	e := newEnv(t, nil)
	r := newReceiver(t)
	ws := e.workspace(r)
	quiet := e.workspace(nil) // no URL: its events are failed, and kept
	e.fund(ws.ID, "1.00")
	e.fund(quiet.ID, "1.00")
	e.start(payoutkit.DeliveryConfig{})
	e.waitDelivered(ws.ID)
	delivered := e.events(ws.ID)[0]

	e.clock.Advance(29 * 24 * time.Hour)
	time.Sleep(20 * time.Millisecond)
	if len(e.events(ws.ID)) != 1 {
		t.Fatal("an event was pruned before the retention")
	}
	waitFor(t, "the delivered event pruned", func() bool {
		e.clock.Advance(time.Hour)
		return len(e.events(ws.ID)) == 0
	})
	if len(e.events(quiet.ID)) != 1 {
		t.Fatal("a failed event was pruned")
	}
	if _, err := e.store.Event(e.ctx, ws.ID, delivered.ID); !errors.Is(err, payoutkit.ErrNotFound) {
		t.Fatalf("the pruned event: %v", err)
	}
	if b, _ := e.eng.Balance(e.ctx, ws.ID); b.Available.String() != "1.00" {
		t.Fatalf("balance after pruning: %v", b)
	}
}
