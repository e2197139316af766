// Package processortest runs the engine in the tests of the processors
// (processor/evm, processor/bitcoin, processor/sandbox): a store with, on
// the same database, the *bun.DB a processor keeps its tables in; an
// engine with a funded workspace; and the engine running a processor, its
// webhooks delivered to a collector.
package processortest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/bundsn"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// OpenDB opens dsn as the processors' OpenDSN does, for their New; it is
// closed at the test's end.
func OpenDB(t testing.TB, dsn string) *bun.DB {
	t.Helper()
	db, err := bundsn.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// OpenSQLite opens a store on a new SQLite file of the test's own and the
// processor's *bun.DB on the same file, as a program would; both close at
// the test's end.
func OpenSQLite(t testing.TB, logger *slog.Logger) (payoutkit.Store, *bun.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "payoutkit.db")
	store, err := sqlite.Open(context.Background(), path, sqlite.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store, OpenDB(t, path)
}

// OpenPostgres opens a store on dsn (a schema of the test's own, such as
// pgtest.Postgres makes) and the processor's *bun.DB on it; both close at
// the test's end. Two calls on one dsn are two instances on one database.
func OpenPostgres(t testing.TB, dsn string, logger *slog.Logger) (payoutkit.Store, *bun.DB) {
	t.Helper()
	store, err := postgres.Open(context.Background(), dsn, postgres.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store, OpenDB(t, dsn)
}

// FundedEngine returns an engine over store with cfg, and the id of a new
// workspace named name with amount (a decimal such as "100.00") available:
// a top-up order, marked paid.
func FundedEngine(t testing.TB, store payoutkit.Store, cfg *payoutkit.Config, name, amount string) (*payoutkit.Engine, string) {
	t.Helper()
	ctx := context.Background()
	eng, err := payoutkit.New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	ws := nw.Workspace.ID
	if _, _, err := eng.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "top-up", Amount: amount}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.MarkOrderPaid(ctx, ws, "top-up"); err != nil {
		t.Fatal(err)
	}
	return eng, ws
}

// Processor is a processor with a background loop of its own, as both
// processors have.
type Processor interface {
	payoutkit.Processor
	Start(ctx context.Context, settler payoutkit.Settler) error
	Stop(ctx context.Context) error
}

// Run starts an engine over store with cfg and proc as its processor, its
// loops and the processor's running, and the webhooks of workspace ws
// delivered to the returned collector; all stop at the test's end. It
// sets cfg's Processor and Delivery (a private-address notifier, a short
// lease, so that a test sees its webhooks soon).
func Run(t testing.TB, store payoutkit.Store, ws string, cfg *payoutkit.Config, proc Processor) *Webhooks {
	t.Helper()
	ctx := context.Background()
	hooks := &Webhooks{events: map[string][]string{}}
	srv := httptest.NewServer(hooks)
	t.Cleanup(srv.Close)
	cfg.Processor = proc
	cfg.Delivery = payoutkit.DeliveryConfig{Notifier: &payoutkit.HTTPNotifier{AllowPrivate: true, Timeout: time.Second}, Lease: 2 * time.Second}
	eng, err := payoutkit.New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.SetWebhookURL(ctx, ws, srv.URL, payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(ctx, eng); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		proc.Stop(ctx)
		eng.Stop(ctx)
	})
	return hooks
}

// Webhooks collects the event types delivered to a workspace's webhook
// URL, by payout id.
type Webhooks struct {
	mu     sync.Mutex
	events map[string][]string
}

// ServeHTTP records the event's type under its payout id and answers
// "success", as a receiver must.
func (w *Webhooks) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var ev struct {
		Type string `json:"type"`
		Data struct {
			PayoutID string `json:"payout_id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&ev); err == nil {
		w.mu.Lock()
		w.events[ev.Data.PayoutID] = append(w.events[ev.Data.PayoutID], ev.Type)
		w.mu.Unlock()
	}
	io.WriteString(rw, "success")
}

// Has reports whether an event of type typ about the payout has arrived.
func (w *Webhooks) Has(payoutID, typ string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.events[payoutID], typ)
}
