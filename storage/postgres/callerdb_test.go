package postgres_test

import (
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/migrate"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqltest"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

// callerPostgres is a program's own *bun.DB on a fresh PostgreSQL schema.
func callerPostgres(t testing.TB, dsn string) *bun.DB {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := bun.NewDB(stdlib.OpenDB(*cfg), pgdialect.New())
	t.Cleanup(func() { db.Close() })
	return db
}

func newOnCallerDB(t testing.TB, db *bun.DB) *postgres.Store {
	t.Helper()
	s, err := postgres.New(t.Context(), db, postgres.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformanceCallerDBPostgres(t *testing.T) {
	dsn := pgtest.PostgresServer(t)
	storetest.Run(t, func(t *testing.T) payoutkit.Store {
		return newOnCallerDB(t, callerPostgres(t, pgtest.FreshSchema(t, dsn)))
	})
}

func TestTransactionalCallsPostgres(t *testing.T) {
	testTransactionalCalls(t, callerPostgres(t, pgtest.FreshSchema(t, pgtest.PostgresServer(t))))
}

// A program writes its own row and a payout in one transaction of its own
// *bun.DB: rolled back, neither exists (nor the debit, the ledger entry or
// the event); committed, both do, and the payout's event is delivered. A
// refused payout inside the transaction leaves it usable.
func testTransactionalCalls(t *testing.T, db *bun.DB) { sqltest.TransactionalCalls(t, db, callerDB) }

func TestAddMigrationsPostgres(t *testing.T) {
	testAddMigrations(t, callerPostgres(t, pgtest.FreshSchema(t, pgtest.PostgresServer(t))))
}

// A program's own bun migrator creates payoutkit's schema
// (AddMigrations); a store over the database then finds it current and is
// ready, and the migrator run again has nothing to do.
func testAddMigrations(t *testing.T, db *bun.DB) { sqltest.AddMigrations(t, db, callerDB) }

// callerDB is how sqltest's caller's-database tests open this package.
var callerDB = sqltest.CallerDB[*postgres.Store]{New: newOnCallerDB, AddMigrations: func(ms *migrate.Migrations) error { return postgres.AddMigrations(ms) }}
