package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
)

// An admin store opened beside a store under a heavy write load (as `server
// keys revoke` runs beside a busy server) gets SQLite's write lock within
// its busy timeout every time: the busy store's committer pauses while the
// admin store opens and while its write waits for the lock. Without WithPriorityWrites the admin waits for a gap
// between two commits, which under this load rarely comes in time.
func TestPriorityWritesBesideLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	e := newBatchEnvAt(t, path, 100_000_000)
	ctx, stop := context.WithCancel(t.Context())
	var load sync.WaitGroup
	var created atomic.Int64
	for g := range 64 {
		load.Go(func() {
			at := time.Now().UTC()
			for i := 0; ctx.Err() == nil; i++ {
				id := fmt.Sprintf("po-%d-%d", g, i)
				p := payoutkit.Payout{
					WorkspaceID: e.ws, PayoutID: id, Status: payoutkit.PayoutSubmitted, Amount: 1,
					Asset: "USDT", Network: "TRON", Address: "T...", PayerID: "cust-1", CreatedAt: at, UpdatedAt: at,
				}
				ev := payoutkit.Event{
					ID: fmt.Sprintf("evt_load_%d_%d", g, i), WorkspaceID: e.ws, Type: payoutkit.EventPayoutSubmitted,
					Subject: "payout:" + id, CreatedAt: at, Body: []byte(`{}`),
					EventDelivery: payoutkit.EventDelivery{State: payoutkit.DeliveryPending, NextAttemptAt: at},
				}
				if _, _, err := e.s.CreatePayout(ctx, p, ev, payoutkit.Lease{}); err != nil && ctx.Err() == nil {
					t.Errorf("create payout: %v", err)
					return
				}
				created.Add(1)
			}
		})
	}
	t.Cleanup(func() { stop(); load.Wait() })
	waitFor(t, "the load to start", func() bool { return created.Load() > 200 })

	for i := range 10 {
		before := created.Load()
		admin, err := Open(t.Context(), path, WithPriorityWrites(), WithBusyTimeout(500*time.Millisecond))
		if err != nil {
			t.Fatalf("round %d: opening the admin store: %v", i, err)
		}
		// Opened, and not writing: it holds nobody back (an audit reads
		// beside a busy server without pausing it).
		if _, err := os.Stat(priorityFile(path)); !os.IsNotExist(err) {
			t.Fatalf("round %d: a priority file while the admin store is idle: %v", i, err)
		}
		err = admin.SetWebhook(t.Context(), e.ws, fmt.Sprintf("https://hooks.example/%d", i), "whsec_"+fmt.Sprint(i), webhookLog(e.ws))
		admin.Close()
		if err != nil {
			t.Fatalf("round %d: the admin write beside the load: %v", i, err)
		}
		if _, err := os.Stat(priorityFile(path)); !os.IsNotExist(err) {
			t.Fatalf("round %d: the priority file outlived the admin write: %v", i, err)
		}
		// The load goes on after the admin store closes.
		waitFor(t, "the load to resume", func() bool { return created.Load() > before+50 })
	}
	ws, err := e.s.Workspace(t.Context(), e.ws)
	if err != nil {
		t.Fatal(err)
	}
	if ws.WebhookURL != "https://hooks.example/9" {
		t.Fatalf("webhook URL %q after the last admin write", ws.WebhookURL)
	}
}

// A priority file left by a process that died stops delaying others once it
// is stale.
func TestPriorityFileStale(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stale.db")
	e := newBatchEnvAt(t, path, 1000)
	old := time.Now().Add(-2 * priorityStale)
	if err := os.WriteFile(priorityFile(path), []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(priorityFile(path), old, old); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- e.s.SetWebhook(t.Context(), e.ws, "https://hooks.example/x", "whsec_x", webhookLog(e.ws))
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(priorityStale):
		t.Fatal("a stale priority file held a write back")
	}
}

// webhookLog is the security log entry of a webhook change by the command
// line.
func webhookLog(ws string) payoutkit.SecurityLogEntry {
	return payoutkit.SecurityLogEntry{WorkspaceID: ws, At: time.Now().UTC(), Action: payoutkit.ActionWebhookURLSet, Actor: "cli"}
}
