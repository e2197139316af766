package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// writer is where a store's statements run: the database's own connections
// (*db: the group committer, the writer connection, the read pool), or a
// transaction of the caller's (callerWriter, WithTx). It is chosen once,
// when the store is made; operations are written once against it.
type writer interface {
	// InTx runs fn as an administrative transaction, holding the write
	// lock from its BEGIN: fn's error rolls it back and is returned as is.
	InTx(ctx context.Context, fn func(tx *sql.Tx) error) error
	// Write runs fn as one atomic write in the committer's next batch;
	// fn's error undoes its changes and is returned as is. A refusalSafe
	// write changes nothing when it refuses, and needs no savepoint.
	Write(ctx context.Context, refusalSafe bool, fn sqlcore.TxFunc) error
	// Reader runs reads.
	Reader() sqlcore.Querier
	// ReadRow runs a point read that returns one row when it is scanned.
	ReadRow(ctx context.Context, query string, args ...any) sqlcore.Scanner
	// Committed tells dispatchers that a write committed work for them.
	Committed()
	// Close releases what the writer holds.
	Close() error
}

var (
	_ writer = (*db)(nil)
	_ writer = callerWriter{}
)

// callerWriter runs a store's statements in the caller's transaction: each
// write in a savepoint of it, with the caller's context.
type callerWriter struct{ sqlcore.CallerTx }

// Write runs fn in a savepoint of the caller's transaction, refusal-safe or
// not: a write that fails for an unexpected reason must not leave half of
// itself in a transaction the caller may still commit.
func (c callerWriter) Write(ctx context.Context, _ bool, fn sqlcore.TxFunc) error {
	return c.CallerTx.Write(ctx, fn)
}

// InTx runs fn in a transaction of its own on the writer connection, after
// any priority store's turn.
func (d *db) InTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	d.waitForPriority()
	d.claimWrite()
	return sqlcore.RunInTx(ctx, d.wdb, fn)
}

func (d *db) Write(ctx context.Context, refusalSafe bool, fn sqlcore.TxFunc) error {
	return d.batch.do(ctx, refusalSafe, fn)
}

// execWrite runs one write statement as a write of its own, refusal-safe
// (a statement that fails changes nothing), prepared if it is one of the
// store's prepared statements.
func (s *Store) execWrite(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := s.w.Write(ctx, true, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		res, err = s.st.exec(ctx, tx, query, args...)
		return err
	})
	return res, err
}

// rowsWrite runs one write statement that returns rows (UPDATE ...
// RETURNING) as a write of its own, as execWrite does, and hands them to
// read, which must consume and close them.
func (s *Store) rowsWrite(ctx context.Context, read func(sqlcore.RowIter) error, query string, args ...any) error {
	return s.w.Write(ctx, true, func(ctx context.Context, tx *sql.Tx) error {
		rows, err := s.st.query(ctx, tx, query, args...)
		if err != nil {
			return err
		}
		return read(rows)
	})
}

func (d *db) Reader() sqlcore.Querier { return d.rdb }

// ReadRow runs a read that returns one row when it is scanned, prepared if
// it is one of preparedReads.
//
// A prepared read runs without its caller's cancellation: each is a look-up
// by key that takes microseconds, and with a context that can be cancelled
// database/sql and the SQLite driver each start a goroutine per statement
// to watch it.
func (d *db) ReadRow(ctx context.Context, query string, args ...any) sqlcore.Scanner {
	if st := d.rstmts[query]; st != nil {
		return st.QueryRowContext(context.WithoutCancel(ctx), args...)
	}
	return d.rdb.QueryRowContext(ctx, query, args...)
}

func (d *db) Committed() { d.work.Notify() }

// Close stops the committer and closes the connections (but a caller's,
// New's, which stays open).
func (d *db) Close() error {
	if d.batch != nil {
		d.batch.Close()
	}
	d.priorityMu.Lock()
	d.closing = true
	if d.priority != nil {
		d.priority.release()
		d.priority = nil
	}
	d.priorityMu.Unlock()
	var err error
	for _, st := range d.wstmts {
		err = errors.Join(err, st.Close())
	}
	for _, st := range d.rstmts {
		err = errors.Join(err, st.Close())
	}
	if d.callerDB {
		return err // the caller's to close
	}
	err = errors.Join(err, d.wdb.Close())
	if d.rdb != d.wdb {
		err = errors.Join(err, d.rdb.Close())
	}
	return err
}

// Parsing a statement costs SQLite about as much as running it, so the
// statements of the hot paths are prepared once per connection: the write
// ones on the writer connection, the read ones on each read connection as
// it first runs them. The cold paths (listing, admin, the audit) parse
// their statements each time.
var (
	preparedWrites = []string{insertPayoutSQL, debitSQL, insertLedgerSQL, insertEventSQL, insertCreatedEventSQL,
		settlePayoutSQL, settleBalanceSQL, sqlcore.AddPayoutDaySQL, sqlcore.SettlePayoutDaySQL, insertOrderSQL, payOrderSQL, creditSQL, moveCustomerSQL,
		savepointSQL, releaseSQL, rollbackToSQL, recordAttemptSQL, recordDeliveredSQL, insertAttemptSQL, markHandedOffSQL,
		claimEventsSQL, claimHandoffsSQL, rejectPayoutSQL, fullChunkSQL[0], fullChunkSQL[1], fullChunkSQL[2]}
	preparedReads = []string{sqlcore.SelectPayoutSQL, sqlcore.SelectOrderSQL, sqlcore.BalanceSQL, sqlcore.APIKeySQL, sqlcore.WorkspaceSQL, sqlcore.APIKeyBalanceSQL}
)

// prepare prepares the statements of the hot paths.
func (s *Store) prepare(ctx context.Context) error {
	d := s.d
	d.wstmts, d.rstmts = make(map[string]*sql.Stmt), make(map[string]*sql.Stmt)
	for _, q := range append(append(slices.Clip(preparedWrites), sqlcore.ControlWriteSQL...), s.ops.JudgeSQL()) {
		st, err := d.wdb.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("sqlstore: preparing statements: %w", err)
		}
		d.wstmts[q] = st
	}
	for _, q := range preparedReads {
		st, err := d.rdb.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("sqlstore: preparing statements: %w", err)
		}
		d.rstmts[q] = st
	}
	return nil
}

// stmts are prepared statements by their SQL; a statement not among them
// (or any, when stmts is nil) is parsed as it runs.
type stmts map[string]*sql.Stmt

// exec runs a write statement in tx, prepared if it is one of stmts.
func (m stmts) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := m[query]; st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// queryRow runs a statement that returns one row in tx, prepared if it is
// one of stmts.
func (m stmts) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := m[query]; st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// query runs a statement that returns rows in tx, prepared if it is one of
// stmts.
func (m stmts) query(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if st := m[query]; st != nil {
		return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}
