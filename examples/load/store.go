package main

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// isPostgres reports whether dsn names a PostgreSQL database rather than a
// SQLite file, as the server's -db does.
func isPostgres(dsn string) bool {
	lower := strings.ToLower(dsn)
	return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
}

// openStore opens the database named by dsn in this process, quietly: a
// "postgres://" URL with storage/postgres, anything else with
// storage/sqlite.
func openStore(ctx context.Context, dsn string) (payoutkit.Store, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if isPostgres(dsn) {
		return postgres.Open(ctx, dsn, postgres.WithLogger(quiet))
	}
	return sqlite.Open(ctx, dsn, sqlite.WithLogger(quiet))
}
