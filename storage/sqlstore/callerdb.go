package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// New returns a store over the caller's *bun.DB, PostgreSQL or SQLite, for a
// program that already has one: payoutkit's tables live beside the
// program's own, and its writes can join the program's transactions
// (WithTx). New applies payoutkit's migrations, as Open does. Close leaves
// db open: it is the caller's.
//
// On SQLite, db must use the WAL journal, and should begin its
// transactions IMMEDIATE (the modernc.org/sqlite DSN parameter
// _txlock=immediate) with a busy timeout, as Open's connections do: a
// deferred transaction that writes after another connection did fails with
// "database is locked" instead of waiting. Open, which owns its connections,
// remains the faster choice on SQLite: it keeps one writer connection and a
// pool of read-only ones.
func New(ctx context.Context, db *bun.DB, opts ...Option) (*Store, error) {
	if db == nil {
		return nil, errors.New("sqlstore: New needs a *bun.DB")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	var s *Store
	switch db.Dialect().Name() {
	case dialect.PG:
		s = newStore(DialectPostgres, db, db, cfg, "caller's PostgreSQL database")
	case dialect.SQLite:
		var mode string
		if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			return nil, fmt.Errorf("sqlstore: reading the SQLite journal mode: %w", err)
		}
		if !strings.EqualFold(mode, "wal") {
			return nil, fmt.Errorf("sqlstore: the SQLite database uses the %q journal; payoutkit needs WAL (open it with _pragma=journal_mode(WAL))", mode)
		}
		s = newStore(DialectSQLite, db, db, cfg, "caller's SQLite database")
	default:
		return nil, fmt.Errorf("sqlstore: bun dialect %s is not supported (PostgreSQL and SQLite are)", db.Dialect().Name())
	}
	s.callerDB = true
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.startCommitters()
	s.startStatistics()
	return s, nil
}

// WithTx returns the store as seen from inside tx, a transaction the caller
// began on the same database (its own *bun.DB, or this store's): every read
// and write of the returned store runs in tx, so that payoutkit's changes
// (a payout with its balance debit, ledger entry and event) commit or roll
// back with the caller's own. Build an engine over it with
// payoutkit.Engine.WithStore for the length of the transaction.
//
// Each write runs in a savepoint of tx: a refused payout (an overdraft, a
// replay) changes nothing and leaves tx usable. The returned store must not
// be used after tx ends, and its Close does nothing. On SQLite, tx holds the
// database's write lock from its first write until it ends, and the
// store's own writes (and the dispatcher's) wait for it: keep it short.
func (s *Store) WithTx(tx bun.Tx) *Store {
	t := *s
	t.tx, t.btx = tx.Tx, tx
	t.committers, t.batch, t.priority = nil, nil, nil
	t.wstmts, t.rstmts = nil, nil // prepared on other connections
	return &t
}

// txSavepointSQL names the savepoint each write of a transaction-bound store
// runs in.
const (
	txSavepointSQL  = `SAVEPOINT payoutkit`
	txReleaseSQL    = `RELEASE SAVEPOINT payoutkit`
	txRollbackToSQL = `ROLLBACK TO SAVEPOINT payoutkit`
)

// inCallerTx runs fn in a savepoint of the caller's transaction: fn's error
// undoes what fn did and is returned as is, and leaves the transaction
// usable.
func (s *Store) inCallerTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if _, err := s.tx.ExecContext(ctx, txSavepointSQL); err != nil {
		return err
	}
	if err := fn(s.tx); err != nil {
		if _, rerr := s.tx.ExecContext(ctx, txRollbackToSQL); rerr != nil {
			return errors.Join(err, rerr)
		}
		if _, rerr := s.tx.ExecContext(ctx, txReleaseSQL); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	_, err := s.tx.ExecContext(ctx, txReleaseSQL)
	return err
}
