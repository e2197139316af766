package main

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// storeConfig is what the server asks of its store, whichever database -db
// names.
type storeConfig struct {
	log *slog.Logger
	// observeCommit is told of every group-commit transaction (metrics).
	observeCommit func(writes int, d time.Duration)
	// admin opens the store for one administrative command beside a running
	// server: on SQLite it waits longer for the write lock and takes its
	// next turn (sqlite.WithPriorityWrites).
	admin bool
}

// storeOption sets a storeConfig field.
type storeOption func(*storeConfig)

// withCommitObserver sets storeConfig.observeCommit.
func withCommitObserver(fn func(writes int, d time.Duration)) storeOption {
	return func(c *storeConfig) { c.observeCommit = fn }
}

// asAdmin sets storeConfig.admin.
func asAdmin() storeOption { return func(c *storeConfig) { c.admin = true } }

// isPostgres reports whether dsn names a PostgreSQL database rather than a
// SQLite file.
func isPostgres(dsn string) bool {
	lower := strings.ToLower(dsn)
	return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
}

// openDSN opens the database named by dsn: a "postgres://" or
// "postgresql://" URL with storage/postgres, anything else (a file path or
// a "file:" URL) with storage/sqlite.
func openDSN(ctx context.Context, dsn string, opts ...storeOption) (payoutkit.Store, error) {
	var c storeConfig
	for _, o := range opts {
		o(&c)
	}
	if isPostgres(dsn) {
		po := []postgres.Option{postgres.WithLogger(c.log)}
		if c.observeCommit != nil {
			po = append(po, postgres.WithCommitObserver(c.observeCommit))
		}
		return postgres.Open(ctx, dsn, po...)
	}
	so := []sqlite.Option{sqlite.WithLogger(c.log)}
	if c.observeCommit != nil {
		so = append(so, sqlite.WithCommitObserver(c.observeCommit))
	}
	if c.admin {
		so = append(so, sqlite.WithBusyTimeout(adminBusyTimeout), sqlite.WithPriorityWrites())
	}
	return sqlite.Open(ctx, dsn, so...)
}
