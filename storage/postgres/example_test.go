package postgres_test

import (
	"context"
	"io"
	"log"
	"log/slog"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres"
)

// Open a PostgreSQL database (migrated on first use) and run the engine
// over it. Several servers may open the same database.
func Example() {
	ctx := context.Background()
	store, err := postgres.Open(ctx, "postgres://payoutkit@127.0.0.1:5432/payoutkit?sslmode=disable",
		postgres.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	eng, err := payoutkit.New(store, &payoutkit.Config{})
	if err != nil {
		log.Fatal(err)
	}
	_ = eng
}
