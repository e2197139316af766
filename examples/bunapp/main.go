// Command bunapp is a program that already runs bun (on SQLite here;
// PostgreSQL works the same with pgdialect and storage/postgres) and embeds
// payoutkit in it:
//
//   - its own bun migrator creates its own table and payoutkit's tables
//     (sqlite.AddMigrations);
//
//   - payoutkit's store runs over its *bun.DB (sqlite.New);
//
//   - one transaction writes its own row and a payout together
//     (sqlite.Store.WithTx, payoutkit.Engine.WithStore): both commit, or
//     neither does.
//
//     go run ./examples/bunapp -db ./bunapp.db
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/migrate"
	_ "modernc.org/sqlite"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

func main() {
	path := flag.String("db", "./bunapp.db", "SQLite database `file`")
	flag.Parse()
	if err := run(context.Background(), *path, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bunapp:", err)
		os.Exit(1)
	}
}

// withdrawalRequest is the program's own row: a customer's request, kept
// with the payout that answers it.
type withdrawalRequest struct {
	bun.BaseModel `bun:"table:withdrawal_requests"`

	ID       string `bun:",pk"`
	Customer string `bun:",notnull"`
	PayoutID string `bun:",notnull,unique"`
}

func run(ctx context.Context, path string, out io.Writer) error {
	// The program's database, opened as sqlite.New asks on SQLite: the WAL
	// journal, IMMEDIATE transactions, a busy timeout, foreign keys.
	q := url.Values{"_txlock": {"immediate"}, "_pragma": {"journal_mode(WAL)", "busy_timeout(5000)", "foreign_keys(1)"}}
	sqldb, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return err
	}
	db := bun.NewDB(sqldb, sqlitedialect.New())
	defer db.Close()

	// The program's migrations, and payoutkit's beside them.
	migrations := migrate.NewMigrations()
	own := migrate.Migration{Name: "20261101000000_withdrawal_requests"}
	own.Up = func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
		_, err := m.DB().NewCreateTable().Model((*withdrawalRequest)(nil)).IfNotExists().Exec(ctx)
		return err
	}
	migrations.Add(own)
	if err := sqlite.AddMigrations(migrations); err != nil {
		return err
	}
	migrator := migrate.NewMigrator(db, migrations)
	if err := migrator.Init(ctx); err != nil {
		return err
	}
	group, err := migrator.Migrate(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "migrated: %s\n", group)

	// payoutkit over the same *bun.DB: its schema is current already.
	quiet := slog.New(slog.DiscardHandler)
	store, err := sqlite.New(ctx, db, sqlite.WithLogger(quiet))
	if err != nil {
		return err
	}
	defer store.Close()
	engine, err := payoutkit.New(store, &payoutkit.Config{Logger: quiet})
	if err != nil {
		return err
	}
	nw, err := engine.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Bun app"})
	if err != nil {
		return err
	}
	ws := nw.Workspace.ID
	if _, _, err := engine.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "top-up", Amount: "100.00"}); err != nil {
		return err
	}
	if _, err := engine.MarkOrderPaid(ctx, ws, "top-up"); err != nil {
		return err
	}

	// A request and its payout in one transaction, then one that the
	// program rolls back: its request and its payout are both gone.
	request := func(id, payoutID, amount string, keep bool) error {
		return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			r := &withdrawalRequest{ID: id, Customer: "cust-42", PayoutID: payoutID}
			if _, err := tx.NewInsert().Model(r).Exec(ctx); err != nil {
				return err
			}
			_, _, err := engine.WithStore(store.WithTx(tx)).CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{
				PayoutID: payoutID, Amount: amount, Asset: "USDT", Network: "TRON",
				Address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", PayerID: "cust-42",
			})
			if err == nil && !keep {
				err = errDropped
			}
			return err
		})
	}
	if err := request("req-1", "po-1", "25.00", true); err != nil {
		return err
	}
	if err := request("req-2", "po-2", "10.00", false); !errors.Is(err, errDropped) {
		return fmt.Errorf("the dropped request: %v", err)
	}

	n, err := db.NewSelect().Model((*withdrawalRequest)(nil)).Count(ctx)
	if err != nil {
		return err
	}
	p, err := engine.Payout(ctx, ws, "po-1")
	if err != nil {
		return err
	}
	_, dropped := engine.Payout(ctx, ws, "po-2")
	b, err := engine.Balance(ctx, ws)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "requests kept: %d\n", n)
	fmt.Fprintf(out, "payout %s: %s, %s %s to %s\n", p.PayoutID, p.Status, p.Amount, p.Asset, p.Address)
	fmt.Fprintf(out, "payout po-2: %v\n", dropped)
	fmt.Fprintf(out, "balance: available %s, in progress %s\n", b.Available, b.InProgress)
	return nil
}

// errDropped rolls the second request back.
var errDropped = errors.New("the program dropped the request")
