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
// It runs on a fresh database in a temporary directory, removed when it
// ends, so that it runs any number of times; -db keeps the database in a
// file instead, where each run adds a workspace of its own:
//
//	go run ./examples/bunapp
//	go run ./examples/bunapp -db ./bunapp.db
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
	"path/filepath"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/migrate"
	_ "modernc.org/sqlite"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

func main() {
	path := flag.String("db", "", "SQLite database `file` to keep (default: a fresh one in a temporary directory, removed at the end)")
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

// run runs the demo on the SQLite database at path, or on a fresh one in a
// temporary directory when path is empty, and tells on out what each step
// shows.
func run(ctx context.Context, path string, out io.Writer) error {
	if path == "" {
		dir, err := os.MkdirTemp("", "bunapp-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "bunapp.db")
		fmt.Fprintln(out, "database: a fresh SQLite file in a temporary directory, removed at the end (-db keeps one)")
	} else {
		fmt.Fprintf(out, "database: %s (kept; each run adds a workspace of its own)\n", path)
	}

	// The program's database, opened as sqlite.New asks on SQLite: the WAL
	// journal, IMMEDIATE transactions, a busy timeout, foreign keys.
	q := url.Values{"_txlock": {"immediate"}, "_pragma": {"journal_mode(WAL)", "busy_timeout(5000)", "foreign_keys(1)"}}
	sqldb, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return err
	}
	db := bun.NewDB(sqldb, sqlitedialect.New())
	defer db.Close()

	// The program's migrations, and payoutkit's beside them. The program
	// logs nothing but what it prints: payoutkit's store and migrations log
	// to a logger that drops it all.
	quiet := slog.New(slog.DiscardHandler)
	migrations := migrate.NewMigrations()
	own := migrate.Migration{Name: "20261101000000_withdrawal_requests"}
	own.Up = func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
		_, err := m.DB().NewCreateTable().Model((*withdrawalRequest)(nil)).IfNotExists().Exec(ctx)
		return err
	}
	migrations.Add(own)
	if err := sqlite.AddMigrations(migrations, sqlite.WithLogger(quiet)); err != nil {
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
	if group.IsZero() {
		fmt.Fprintln(out, "1. migrations: the program's migrator found its table and payoutkit's up to date")
	} else {
		fmt.Fprintf(out, "1. migrations: the program's migrator applied its own table and payoutkit's schema: %s\n", group)
	}

	// payoutkit over the same *bun.DB: its schema is current already.
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
	fmt.Fprintf(out, "2. a workspace (%s) funded by an order of 100.00 %s, marked paid\n", ws, payoutkit.Currency)

	// This run's ids follow the requests of earlier runs on a kept
	// database: each run keeps one request.
	earlier, err := db.NewSelect().Model((*withdrawalRequest)(nil)).Count(ctx)
	if err != nil {
		return err
	}
	kept, dropped := earlier*2+1, earlier*2+2
	keptReq, keptPayout := fmt.Sprintf("req-%d", kept), fmt.Sprintf("po-%d", kept)
	droppedReq, droppedPayout := fmt.Sprintf("req-%d", dropped), fmt.Sprintf("po-%d", dropped)

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
	if err := request(keptReq, keptPayout, "25.00", true); err != nil {
		return err
	}
	fmt.Fprintf(out, "3. request %s and payout %s (25.00 %s) written in one transaction, committed\n", keptReq, keptPayout, payoutkit.Currency)
	if err := request(droppedReq, droppedPayout, "10.00", false); !errors.Is(err, errDropped) {
		return fmt.Errorf("the dropped request: %v", err)
	}
	fmt.Fprintf(out, "4. request %s and payout %s (10.00 %s) written in one transaction that the program rolled back\n", droppedReq, droppedPayout, payoutkit.Currency)

	n, err := db.NewSelect().Model((*withdrawalRequest)(nil)).Where("id IN (?, ?)", keptReq, droppedReq).Count(ctx)
	if err != nil {
		return err
	}
	p, err := engine.Payout(ctx, ws, keptPayout)
	if err != nil {
		return err
	}
	_, gone := engine.Payout(ctx, ws, droppedPayout)
	if !errors.Is(gone, payoutkit.ErrNotFound) {
		return fmt.Errorf("the rolled-back payout %s: %v; want it not found", droppedPayout, gone)
	}
	b, err := engine.Balance(ctx, ws)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "5. the committed half: %d of the 2 requests is in the program's table; payout %s is %s: %s %s, paid out as %s on %s to %s\n",
		n, p.PayoutID, p.Status, p.Amount, payoutkit.Currency, p.Asset, p.Network, p.Address)
	fmt.Fprintf(out, "6. the rolled-back half: payout %s: %v (expected: it rolled back with its request, so neither exists)\n", droppedPayout, gone)
	fmt.Fprintf(out, "7. balance: available %s %s, in progress %s %s (the 25.00 of %s is in progress; the 10.00 of %s never left)\n",
		b.Available, payoutkit.Currency, b.InProgress, payoutkit.Currency, keptPayout, droppedPayout)
	return nil
}

// errDropped rolls the second request back.
var errDropped = errors.New("the program dropped the request")
