package sqlite_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// Open a SQLite database (created and migrated on first use) and run the
// engine over it. A "postgres://" DSN would open PostgreSQL instead.
func Example() {
	dir, err := os.MkdirTemp("", "payoutkit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	store, err := sqlite.Open(ctx, filepath.Join(dir, "payoutkit.db"),
		sqlite.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	eng, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost}) // MinCost: examples and tests only
	if err != nil {
		log.Fatal(err)
	}

	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme"})
	if err != nil {
		log.Fatal(err)
	}
	ws := nw.Workspace.ID
	if _, _, err := eng.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "ord-1", Amount: "100.00"}); err != nil {
		log.Fatal(err)
	}
	if _, err := eng.MarkOrderPaid(ctx, ws, "ord-1"); err != nil {
		log.Fatal(err)
	}
	p, _, err := eng.CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{
		PayoutID: "po-1", Amount: "25.00", Asset: "USDT", Network: "TRON",
		Address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", PayerID: "cust-42",
	})
	if err != nil {
		log.Fatal(err)
	}
	b, err := eng.Balance(ctx, ws)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(store.Dialect(), p.PayoutID, p.Status)
	fmt.Println("available", b.Available, "in progress", b.InProgress)
	// Output:
	// sqlite po-1 submitted
	// available 75.00 in progress 25.00
}
