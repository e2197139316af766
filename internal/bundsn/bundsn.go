// Package bundsn opens a *bun.DB from a payoutkit database DSN and
// migrates tables of a processor's own in it, as the processors' stores
// (processor/evm, processor/bitcoin) keep their tables beside the
// engine's. Open takes a "postgres://" or "postgresql://" URL with pgx,
// anything else as a SQLite file (a path or a "file:" URL) the way
// storage/sqlite opens it (the WAL journal, IMMEDIATE transactions, a busy
// timeout, foreign keys).
package bundsn

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL driver
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/migrate"
	_ "modernc.org/sqlite" // the SQLite driver
)

// Open opens dsn's database.
func Open(dsn string) (*bun.DB, error) {
	lower := strings.ToLower(dsn)
	if strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://") {
		sqldb, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, err
		}
		return bun.NewDB(sqldb, pgdialect.New()), nil
	}
	path := strings.TrimPrefix(dsn, "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	q := url.Values{"_txlock": {"immediate"}, "_pragma": {"journal_mode(WAL)", "busy_timeout(10000)", "foreign_keys(1)"}}
	sqldb, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	return bun.NewDB(sqldb, sqlitedialect.New()), nil
}

// Migrate applies ms to db with a bun migrator of its own (its table and
// locks table named), waiting while another process holds the lock or has
// just made the tables, as processes starting at once do; it gives up after
// about five seconds with the last error.
func Migrate(ctx context.Context, db *bun.DB, ms *migrate.Migrations, table, locksTable string) error {
	m := migrate.NewMigrator(db, ms, migrate.WithTableName(table), migrate.WithLocksTableName(locksTable), migrate.WithMarkAppliedOnSuccess(true))
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = migrateOnce(ctx, m); err == nil {
			return nil
		}
		select { // another process holds the lock, or made the tables meanwhile
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return err
}

func migrateOnce(ctx context.Context, m *migrate.Migrator) error {
	if err := m.Init(ctx); err != nil {
		return err
	}
	if err := m.Lock(ctx); err != nil {
		return err
	}
	defer m.Unlock(context.WithoutCancel(ctx)) //nolint:errcheck // the lock row goes either way
	_, err := m.Migrate(ctx)
	return err
}

// ExecAll runs a migration's statements in one database transaction.
func ExecAll(ctx context.Context, db *bun.DB, stmts ...string) error {
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, q := range stmts {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
}

// Blob is db's column type for raw bytes: BYTEA on PostgreSQL, BLOB on
// SQLite.
func Blob(db *bun.DB) string {
	if db.Dialect().Name() == dialect.PG {
		return "BYTEA"
	}
	return "BLOB"
}
