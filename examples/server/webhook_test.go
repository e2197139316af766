package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/payoutkit/payoutkit"
)

// payOrderDirectly records an order.paid event through another engine on the
// same database, as an embedding program or a second instance would.
func payOrderDirectly(t *testing.T, db, ws string) {
	t.Helper()
	ctx := context.Background()
	engine, done, err := adminEngine(ctx, db, &syncBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if _, _, err := engine.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "o1", Amount: "10"}); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.MarkOrderPaid(ctx, ws, "o1"); err != nil {
		t.Fatal(err)
	}
}

// Outside the sandbox, webhooks to loopback are refused unless the operator
// allows them with -webhook-allow-private; webhook events shows why, and
// webhook resend makes an event due again.
func TestWebhookPrivateDestinationsAndResend(t *testing.T) {
	for _, allow := range []bool{false, true} {
		var hits atomic.Int32
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			w.Write([]byte("success"))
		}))
		defer receiver.Close()
		db := filepath.Join(t.TempDir(), "payoutkit.db")
		ws := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "hooks", "-webhook-url", receiver.URL))
		wsID := ws["workspace_id"].(string)
		args := []string{"-db", db, "-sandbox=false"}
		if allow {
			args = append(args, "-webhook-allow-private")
		}
		startServer(t, args...)
		payOrderDirectly(t, db, wsID)

		var events []eventJSON
		waitFor(t, func() bool {
			if err := json.Unmarshal([]byte(mustCommand(t, "webhook", "events", "-db", db, "-workspace", wsID)), &events); err != nil {
				t.Fatal(err)
			}
			return len(events) == 1 && events[0].Attempts > 0
		})
		ev := events[0]
		if ev.Type != "order.paid" || !strings.HasPrefix(ev.ID, "evt_") {
			t.Fatalf("event %+v", ev)
		}
		if allow {
			if ev.State != "delivered" || hits.Load() != 1 {
				t.Fatalf("allowed: event %+v, %d requests", ev, hits.Load())
			}
			continue
		}
		if ev.State != "pending" || ev.LastError == nil || hits.Load() != 0 {
			t.Fatalf("refused: event %+v, %d requests", ev, hits.Load())
		}
		out := decodeObject(t, mustCommand(t, "webhook", "resend", "-db", db, "-workspace", wsID, "-event", ev.ID))
		if out["event_id"] != ev.ID || out["state"] != "pending" {
			t.Fatalf("resend printed %v", out)
		}
		if _, err := command(t, "webhook", "resend", "-db", db, "-workspace", wsID, "-event", "evt_missing"); err == nil {
			t.Fatal("resending an unknown event succeeded")
		}
	}
}
