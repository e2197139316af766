package bitcoin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/address"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testEngine is an engine over a real store with a funded workspace, and
// the same database as a *bun.DB for the processor.
type testEngine struct {
	*payoutkit.Engine
	ws    string
	db    *bun.DB
	store payoutkit.Store
}

// engineCfg is an engine's configuration taking regtest BTC addresses as
// well as mainnet's (which a regtest processor then refuses).
func engineCfg() *payoutkit.Config {
	regtest := AddressValidator(&chaincfg.RegressionNetParams)
	return &payoutkit.Config{Logger: quiet, AddressValidators: map[string]func(string) error{"BTC": func(a string) error {
		if err := regtest(a); err != nil {
			return address.Bitcoin(a)
		}
		return nil
	}}}
}

// eachEngine runs f on an engine over SQLite and, with
// PAYOUTKIT_TEST_POSTGRES, over PostgreSQL.
func eachEngine(t *testing.T, f func(t *testing.T, e *testEngine)) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "payoutkit.db")
		store, err := sqlite.Open(context.Background(), path, sqlite.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		db, err := OpenDSN(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		f(t, fundedEngine(t, store, db))
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := postgresDSN(t)
		store, err := postgres.Open(context.Background(), dsn, postgres.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		db, err := OpenDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		f(t, fundedEngine(t, store, db))
	})
}

func fundedEngine(t testing.TB, store payoutkit.Store, db *bun.DB) *testEngine {
	t.Helper()
	ctx := context.Background()
	eng, err := payoutkit.New(store, engineCfg())
	if err != nil {
		t.Fatal(err)
	}
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Bitcoin test"})
	if err != nil {
		t.Fatal(err)
	}
	ws := nw.Workspace.ID
	if _, _, err := eng.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "top-up", Amount: "10000000.00"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.MarkOrderPaid(ctx, ws, "top-up"); err != nil {
		t.Fatal(err)
	}
	return &testEngine{Engine: eng, ws: ws, db: db, store: store}
}

// payout creates a BTC payout and returns its Submission as the hand-off
// loop would give it.
func (e *testEngine) payout(t testing.TB, id, amount, to string) payoutkit.Submission {
	t.Helper()
	ctx := context.Background()
	p, _, err := e.CreatePayout(ctx, e.ws, payoutkit.CreatePayoutRequest{PayoutID: id, Amount: amount, Asset: "BTC", Network: "BTC", Address: to, PayerID: "cust-1"})
	if err != nil {
		t.Fatal(err)
	}
	return payoutkit.Submission{Payout: p, Coin: payoutkit.Coin{Ticker: "BTC", Network: "BTC", Decimals: 8}, IdempotencyKey: payoutkit.IdempotencyKey(e.ws, id)}
}

func (e *testEngine) status(t testing.TB, id string) payoutkit.Payout {
	t.Helper()
	p, err := e.Payout(context.Background(), e.ws, id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// webhooks collects the event types delivered to the workspace's webhook
// URL, by payout id.
type webhooks struct {
	mu     sync.Mutex
	events map[string][]string
}

func (w *webhooks) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
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

func (w *webhooks) has(payoutID, typ string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.events[payoutID], typ)
}

// run starts an engine over e's store with proc as its processor, its
// loops and the processor's running, and webhooks delivered to the
// returned collector; all stop at the test's end.
func (e *testEngine) run(t testing.TB, proc *Processor) *webhooks {
	t.Helper()
	ctx := context.Background()
	hooks := &webhooks{events: map[string][]string{}}
	srv := httptest.NewServer(hooks)
	t.Cleanup(srv.Close)
	if _, err := e.SetWebhookURL(ctx, e.ws, srv.URL, payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	cfg := engineCfg()
	cfg.Processor = proc
	cfg.Delivery = payoutkit.DeliveryConfig{Notifier: &payoutkit.HTTPNotifier{AllowPrivate: true, Timeout: time.Second}, Lease: 2 * time.Second}
	eng, err := payoutkit.New(e.store, cfg)
	if err != nil {
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

// eachDB runs f on a fresh SQLite database and, with
// PAYOUTKIT_TEST_POSTGRES, on a fresh PostgreSQL schema.
func eachDB(t *testing.T, f func(t *testing.T, db *bun.DB)) {
	t.Run("sqlite", func(t *testing.T) { f(t, sqliteDB(t)) })
	t.Run("postgres", func(t *testing.T) { f(t, postgresDB(t)) })
}

func sqliteDB(t testing.TB) *bun.DB {
	t.Helper()
	db, err := OpenDSN(filepath.Join(t.TempDir(), "payoutkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// postgresDB opens a schema of the test's own (postgresDSN).
func postgresDB(t testing.TB) *bun.DB {
	t.Helper()
	db, err := OpenDSN(postgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// postgresDSN makes a schema of the test's own in the database of
// PAYOUTKIT_TEST_POSTGRES and returns a DSN using it, or skips without it
// (fails under CI=true).
func postgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("PAYOUTKIT_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("PAYOUTKIT_TEST_POSTGRES is not set")
		}
		t.Skip("PAYOUTKIT_TEST_POSTGRES is not set")
	}
	ctx := context.Background()
	var b [6]byte
	rand.Read(b[:])
	schema := "btc_" + hex.EncodeToString(b[:])
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// payoutSubmission is the Submission of an existing payout.
func (e *testEngine) payoutSubmission(t testing.TB, id string) payoutkit.Submission {
	t.Helper()
	return payoutkit.Submission{Payout: e.status(t, id), Coin: payoutkit.Coin{Ticker: "BTC", Network: "BTC", Decimals: 8}, IdempotencyKey: payoutkit.IdempotencyKey(e.ws, id)}
}
