package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// A program that already has a *bun.DB keeps payoutkit's tables beside its
// own and writes a payout in the same transaction as its own row: both
// commit, or neither does. (PostgreSQL works the same, with pgdialect.)
func ExampleStore_WithTx() {
	dir, err := os.MkdirTemp("", "payoutkit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	// The program's database, opened as sqlite.New asks on SQLite.
	q := url.Values{"_txlock": {"immediate"}, "_pragma": {"journal_mode(WAL)", "busy_timeout(5000)", "foreign_keys(1)"}}
	sqldb, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+"?"+q.Encode())
	if err != nil {
		log.Fatal(err)
	}
	db := bun.NewDB(sqldb, sqlitedialect.New())
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE tickets (id TEXT PRIMARY KEY, payout_id TEXT NOT NULL)`); err != nil {
		log.Fatal(err)
	}

	store, err := sqlite.New(ctx, db, sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	engine, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	nw, err := engine.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme"})
	if err != nil {
		log.Fatal(err)
	}
	ws := nw.Workspace.ID
	if _, _, err := engine.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "ord-1", Amount: "100.00"}); err != nil {
		log.Fatal(err)
	}
	if _, err := engine.MarkOrderPaid(ctx, ws, "ord-1"); err != nil {
		log.Fatal(err)
	}

	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO tickets (id, payout_id) VALUES ('T-1', 'po-1')`); err != nil {
			return err
		}
		_, _, err := engine.WithStore(store.WithTx(tx)).CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{
			PayoutID: "po-1", Amount: "25.00", Asset: "USDT", Network: "TRON",
			Address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", PayerID: "cust-42",
		})
		return err // an error here would roll back the ticket and the payout alike
	})
	if err != nil {
		log.Fatal(err)
	}
	p, err := engine.Payout(ctx, ws, "po-1")
	if err != nil {
		log.Fatal(err)
	}
	b, err := engine.Balance(ctx, ws)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.PayoutID, p.Status, "available", b.Available)
	// Output: po-1 submitted available 75.00
}
