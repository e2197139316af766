package payoutkit_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
)

// TestObserveAttempt checks that every recorded attempt is reported once,
// with the event's state after it: a retry, a failure that gives up, a
// delivery.
func TestObserveAttempt(t *testing.T) {
	type observed struct {
		attempt int
		state   payoutkit.DeliveryState
	}
	seen := make(chan observed, 8)
	e := newEnv(t, nil)
	r := newReceiver(t)
	r.setRespond(func(*http.Request, request) (int, string) { return 500, "down" })
	ws := e.workspace(r)
	e.fund(ws.ID, "10.00")
	ev := e.events(ws.ID)[0]
	e.start(payoutkit.DeliveryConfig{
		RetryDelays: []time.Duration{time.Second}, // two attempts in all
		ObserveAttempt: func(a payoutkit.DeliveryAttempt, next payoutkit.EventDelivery) {
			if a.EventID == "" || next.Attempts != a.Attempt {
				t.Errorf("observed attempt %+v, next %+v", a, next)
			}
			seen <- observed{a.Attempt, next.State}
		},
	})
	// The hook runs after the attempt is recorded: wait for each report.
	next := func(want observed) {
		t.Helper()
		select {
		case got := <-seen:
			if got != want {
				t.Fatalf("observed %+v; want %+v", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no observation; want %+v", want)
		}
	}
	next(observed{1, payoutkit.DeliveryPending})
	e.clock.Advance(time.Second)
	next(observed{2, payoutkit.DeliveryFailed})
	if got, _ := e.store.Event(e.ctx, ws.ID, ev.ID); got.State != payoutkit.DeliveryFailed {
		t.Fatalf("event %+v; want failed", got.EventDelivery)
	}
	r.setRespond(nil)
	e.fund(ws.ID, "20.00")
	e.clock.Advance(time.Second) // the next poll
	next(observed{1, payoutkit.DeliveryDelivered})
	select {
	case o := <-seen:
		t.Errorf("an extra observation: %+v", o)
	default:
	}
}
