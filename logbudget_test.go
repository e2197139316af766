package payoutkit_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
)

func TestLogBudget(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b := payoutkit.NewLogBudgetAt(func() time.Time { return now })
	if ok, n := b.Allow("a"); !ok || n != 0 {
		t.Fatalf("first line: %v %d", ok, n)
	}
	for range 5 {
		if ok, _ := b.Allow("a"); ok {
			t.Fatal("a repeat within the window was allowed")
		}
	}
	if ok, _ := b.Allow("b"); !ok {
		t.Fatal("another kind was held back")
	}
	now = now.Add(payoutkit.LogWindow)
	if ok, n := b.Allow("a"); !ok || n != 5 {
		t.Fatalf("after the window: %v, %d suppressed; want true, 5", ok, n)
	}
	if ok, n := b.Allow("b"); !ok || n != 0 {
		t.Fatalf("b after the window: %v %d", ok, n)
	}
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
