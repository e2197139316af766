package payoutkit_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
)

// A receiver that is down for 30 hours (of a fake clock) loses nothing:
// every event is attempted exactly on the published schedule, none is given
// up while its schedule lasts (the ninth attempt comes 44 h 36 min after the
// first), and once the receiver is back every event arrives, each payout's
// in order. On SQLite, as the standalone server runs by default.
func TestReceiverDownThirtyHours(t *testing.T) {
	store := openStore(t, filepath.Join(t.TempDir(), "outage.db"))
	e := newEnvOn(t, store, newFakeClock(), nil)

	var down atomic.Bool
	down.Store(true)
	r := newReceiver(t)
	r.setRespond(func(*http.Request, request) (int, string) {
		if down.Load() {
			return http.StatusServiceUnavailable, "down for maintenance"
		}
		return http.StatusOK, "success"
	})
	ws := e.workspace(r)
	e.fund(ws.ID, "100.00")
	const payouts = 6
	for i := range payouts {
		id := fmt.Sprint("po-", i)
		e.payout(ws.ID, id, "1.00")
		if i%2 == 0 {
			e.complete(ws.ID, id) // a payout.completed behind its payout.submitted
		}
	}
	events := e.events(ws.ID)
	var heads []payoutkit.Event // the first pending event of each subject
	seen := map[string]bool{}
	for _, ev := range events {
		if !seen[ev.Subject] {
			seen[ev.Subject] = true
			heads = append(heads, ev)
		}
	}
	e.start(payoutkit.DeliveryConfig{})

	const outage = 30 * time.Hour
	offsets := schedule()
	for n, offset := range offsets {
		if offset >= outage {
			break
		}
		e.clock.Set(t0.Add(offset))
		for _, ev := range heads {
			a := e.waitAttempts(ws.ID, ev.ID, n+1)[n]
			if !a.At.Equal(t0.Add(offset)) || a.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("%s attempt %d: %+v; want HTTP 503 at +%s", label(toWebhook(ev)), n+1, a, offset)
			}
		}
	}

	// Back after 30 hours. Nothing is given up, and nothing is attempted
	// off the schedule.
	e.clock.Set(t0.Add(outage))
	down.Store(false)
	time.Sleep(50 * time.Millisecond)
	for _, ev := range events {
		got, err := e.store.Event(e.ctx, ws.ID, ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != payoutkit.DeliveryPending {
			t.Fatalf("%s is %s at +30h; want pending", label(toWebhook(ev)), got.State)
		}
	}
	before := r.count()

	// The next scheduled attempt delivers everything.
	next := offsets[slices.IndexFunc(offsets, func(o time.Duration) bool { return o >= outage })]
	e.clock.Set(t0.Add(next))
	e.waitDelivered(ws.ID)
	reqs := r.requests()[before:]
	if len(reqs) != len(events) {
		t.Errorf("%d deliveries after the outage; want one per event, %d", len(reqs), len(events))
	}
	// Each payout's submitted arrived before its completed.
	pos := map[string]int{}
	for i, req := range reqs {
		if !req.SigOK {
			t.Fatalf("%s arrived with a bad signature", label(req.Event))
		}
		pos[label(req.Event)] = i
	}
	for i := 0; i < payouts; i += 2 {
		sub, com := fmt.Sprint("payout.submitted/po-", i), fmt.Sprint("payout.completed/po-", i)
		if pos[sub] >= pos[com] {
			t.Errorf("%s arrived before %s", com, sub)
		}
	}
	for _, ev := range heads {
		a := e.attempts(ws.ID, ev.ID)
		if last := a[len(a)-1]; len(a) != slices.Index(offsets, next)+1 || !last.At.Equal(t0.Add(next)) || last.StatusCode != http.StatusOK {
			t.Errorf("%s: %d attempts, the last %+v; want the scheduled one at +%s to succeed", label(toWebhook(ev)), len(a), last, next)
		}
	}
}

// toWebhook is the event as a receiver sees it, for labels.
func toWebhook(ev payoutkit.Event) payoutkit.WebhookEvent {
	var w payoutkit.WebhookEvent
	_ = json.Unmarshal(ev.Body, &w)
	return w
}

// syncWriter is a bytes.Buffer safe for the logger's goroutines.
type syncWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestReceiverDownLogsBoundedLines: a receiver that fails every one of 60
// events logs one retry line for the workspace, not 60.
func TestReceiverDownLogsBoundedLines(t *testing.T) {
	e := newEnv(t, nil)
	r := newReceiver(t)
	r.setRespond(func(*http.Request, request) (int, string) { return 503, "down" })
	ws := e.workspace(r)
	for range 60 {
		e.fund(ws.ID, "1.00")
		e.clock.Advance(time.Microsecond) // distinct order ids
	}
	var out syncWriter
	e.start(payoutkit.DeliveryConfig{Logger: slog.New(slog.NewTextHandler(&out, nil))})
	r.waitCount(60)
	for _, ev := range e.events(ws.ID) {
		e.waitAttempts(ws.ID, ev.ID, 1)
	}
	if n := strings.Count(out.String(), "will retry"); n != 1 {
		t.Fatalf("%d retry lines for 60 failed events; want 1:\n%s", n, out.String())
	}
}
