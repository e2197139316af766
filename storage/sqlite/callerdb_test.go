package sqlite_test

import (
	"database/sql"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/migrate"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqltest"
	"github.com/payoutkit/payoutkit/storage/sqlite"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

// callerSQLite is a program's own *bun.DB on a new SQLite file, opened as
// New asks: WAL, IMMEDIATE transactions, a busy timeout, foreign keys.
func callerSQLite(t testing.TB) *bun.DB {
	t.Helper()
	return callerSQLiteAt(t, filepath.Join(t.TempDir(), "app.db"))
}

// callerSQLiteAt is callerSQLite on the file at path (which may hold the
// '#' of a fuzz input's name: escaped, as SQLite reads a URI).
func callerSQLiteAt(t testing.TB, path string) *bun.DB {
	t.Helper()
	q := url.Values{"_txlock": {"immediate"}}
	q["_pragma"] = []string{"journal_mode(WAL)", "busy_timeout(5000)", "foreign_keys(1)"}
	path = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	sqldb, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	db := bun.NewDB(sqldb, sqlitedialect.New())
	t.Cleanup(func() { db.Close() })
	return db
}

func newOnCallerDB(t testing.TB, db *bun.DB) *sqlite.Store {
	t.Helper()
	s, err := sqlite.New(t.Context(), db, sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformanceCallerDBSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) payoutkit.Store { return newOnCallerDB(t, callerSQLite(t)) })
}

// New refuses a SQLite database without the WAL journal, and Close leaves
// the caller's database open.
func TestNewOnCallerDB(t *testing.T) {
	sqldb, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "rollback.db"))
	if err != nil {
		t.Fatal(err)
	}
	db := bun.NewDB(sqldb, sqlitedialect.New())
	defer db.Close()
	if _, err := sqlite.New(t.Context(), db); err == nil || !strings.Contains(err.Error(), "WAL") {
		t.Fatalf("New on a rollback-journal database: %v; want an error naming WAL", err)
	}
	caller := callerSQLite(t)
	s := newOnCallerDB(t, caller)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := caller.PingContext(t.Context()); err != nil {
		t.Fatalf("the caller's database after the store's Close: %v", err)
	}
}

func TestTransactionalCallsSQLite(t *testing.T) {
	testTransactionalCalls(t, callerSQLite(t))
}

// A program writes its own row and a payout in one transaction of its own
// *bun.DB: rolled back, neither exists (nor the debit, the ledger entry or
// the event); committed, both do, and the payout's event is delivered. A
// refused payout inside the transaction leaves it usable.
func testTransactionalCalls(t *testing.T, db *bun.DB) { sqltest.TransactionalCalls(t, db, callerDB) }

func TestAddMigrationsSQLite(t *testing.T) { testAddMigrations(t, callerSQLite(t)) }

// A program's own bun migrator creates payoutkit's schema
// (AddMigrations); a store over the database then finds it current and is
// ready, and the migrator run again has nothing to do.
func testAddMigrations(t *testing.T, db *bun.DB) { sqltest.AddMigrations(t, db, callerDB) }

// callerDB is how sqltest's caller's-database tests open this package.
var callerDB = sqltest.CallerDB[*sqlite.Store]{New: newOnCallerDB, AddMigrations: func(ms *migrate.Migrations) error { return sqlite.AddMigrations(ms) }}
