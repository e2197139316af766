package sqltest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
)

// TxStore is what the caller's-database tests need of a package's Store:
// the store, joined to a transaction of the caller's, and its schema check.
type TxStore[S any] interface {
	payoutkit.Store
	// WithTx returns the store running its calls in tx.
	WithTx(tx bun.Tx) S
	// Ready reports whether the schema is current.
	Ready(ctx context.Context) error
}

// CallerDB is how a package opens its store on a program's own *bun.DB
// and adds its migrations to the program's bun migrator.
type CallerDB[S any] struct {
	// New opens the store on db, closing it when t ends.
	New func(t testing.TB, db *bun.DB) S
	// AddMigrations adds the package's schema to ms.
	AddMigrations func(ms *migrate.Migrations) error
}

// TransactionalCalls checks that a program writes its own row and a payout in one transaction of its own
// *bun.DB: rolled back, neither exists (nor the debit, the ledger entry or
// the event); committed, both do, and the payout's event is delivered. A
// refused payout inside the transaction leaves it usable.
func TransactionalCalls[S TxStore[S]](t *testing.T, db *bun.DB, c CallerDB[S]) {
	ctx := t.Context()
	if _, err := db.ExecContext(ctx, `CREATE TABLE crm_withdrawals (id TEXT PRIMARY KEY, note TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	store := c.New(t, db)
	engine, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Logger: slog.New(slog.DiscardHandler),
		Delivery: payoutkit.DeliveryConfig{Notifier: &payoutkit.HTTPNotifier{AllowPrivate: true}}})
	if err != nil {
		t.Fatal(err)
	}
	var delivered atomic.Int64
	var secret string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if payoutkit.VerifySignature(secret, body, r.Header.Get(payoutkit.HeaderSignature)) && strings.Contains(string(body), `"payout_id":"po-committed"`) {
			delivered.Add(1)
		}
		io.WriteString(w, "success")
	}))
	defer receiver.Close()
	nw, err := engine.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "CRM", WebhookURL: receiver.URL})
	if err != nil {
		t.Fatal(err)
	}
	ws := nw.Workspace.ID
	secret = nw.Workspace.WebhookSecret
	if _, _, err := engine.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "fund", Amount: "10.00"}); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.MarkOrderPaid(ctx, ws, "fund"); err != nil {
		t.Fatal(err)
	}
	payout := func(id, amount string) payoutkit.CreatePayoutRequest {
		return payoutkit.CreatePayoutRequest{PayoutID: id, Amount: amount, Asset: "USDT", Network: "TRON",
			Address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", PayerID: "cust-1"}
	}
	inTx := func(id string, commit bool) error {
		return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO crm_withdrawals (id, note) VALUES (?, ?)`, id, "asked by phone"); err != nil {
				return err
			}
			txEngine := engine.WithStore(store.WithTx(tx))
			// An overdraft inside the transaction is refused and changes
			// nothing; the transaction goes on.
			if _, _, err := txEngine.CreatePayout(ctx, ws, payout(id+"-too-big", "1000.00")); !errors.Is(err, payoutkit.ErrInsufficientBalance) {
				t.Errorf("%s: an overdraft in the transaction: %v", id, err)
			}
			if _, _, err := txEngine.CreatePayout(ctx, ws, payout(id, "4.00")); err != nil {
				return err
			}
			// The transaction sees its own payout and balance.
			if b, err := txEngine.Balance(ctx, ws); err != nil || b.Available != 600 {
				t.Errorf("%s: balance inside the transaction %+v, %v; want 6.00 available", id, b, err)
			}
			if !commit {
				return errors.New("the program changed its mind")
			}
			return nil
		})
	}

	if err := inTx("po-rolled-back", false); err == nil {
		t.Fatal("the rolled-back transaction reported no error")
	}
	if _, err := engine.Payout(ctx, ws, "po-rolled-back"); !errors.Is(err, payoutkit.ErrNotFound) {
		t.Errorf("the rolled-back payout: %v; want ErrNotFound", err)
	}
	if err := inTx("po-committed", true); err != nil {
		t.Fatal(err)
	}
	if p, err := engine.Payout(ctx, ws, "po-committed"); err != nil || p.Status != payoutkit.PayoutSubmitted {
		t.Fatalf("the committed payout: %+v, %v", p, err)
	}
	var rows int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM crm_withdrawals`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("the program's rows: %d, %v; want the committed one alone", rows, err)
	}
	a, err := store.Audit(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	if a.Available != 600 || a.SubmittedPayouts != 400 {
		t.Fatalf("audit %+v; want 6.00 available and one payout of 4.00", a)
	}
	page, err := engine.ListEvents(ctx, ws, payoutkit.ListEventsRequest{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 { // order.paid, payout.submitted of po-committed
		t.Fatalf("%d events; want order.paid and the committed payout's", len(page.Items))
	}

	if err := engine.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer engine.Stop(context.WithoutCancel(ctx))
	for deadline := time.Now().Add(10 * time.Second); delivered.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the committed payout's event was not delivered")
		}
	}
}

// AddMigrations checks that a program's own bun migrator creates payoutkit's schema
// (AddMigrations); a store over the database then finds it current and is
// ready, and the migrator run again has nothing to do.
func AddMigrations[S TxStore[S]](t *testing.T, db *bun.DB, c CallerDB[S]) {
	ctx := t.Context()
	ms := migrate.NewMigrations()
	if err := c.AddMigrations(ms); err != nil {
		t.Fatal(err)
	}
	m := migrate.NewMigrator(db, ms)
	if err := m.Init(ctx); err != nil {
		t.Fatal(err)
	}
	g, err := m.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Migrations) == 0 || g.Migrations[0].Name != "payoutkit_0001_init" {
		t.Fatalf("migrated %s; want payoutkit's versions from payoutkit_0001_init", g)
	}
	var versions int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&versions); err != nil || versions != len(g.Migrations) {
		t.Fatalf("schema_migrations has %d versions (%v); want one per bun migration, %d", versions, err, len(g.Migrations))
	}
	s := c.New(t, db)
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("a store after the program's migrator: %v", err)
	}
	if g, err := m.Migrate(ctx); err != nil || !g.IsZero() {
		t.Fatalf("the migrator again: %s, %v; want nothing to do", g, err)
	}
	// A database payoutkit migrated itself: the program's migrator then
	// records payoutkit's versions without changing anything.
	fresh := migrate.NewMigrator(db, ms, migrate.WithTableName("other_migrations"), migrate.WithLocksTableName("other_migration_locks"))
	if err := fresh.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Migrate(ctx); err != nil {
		t.Fatalf("payoutkit's versions over a current schema: %v", err)
	}
}
