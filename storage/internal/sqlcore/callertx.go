package sqlcore

import (
	"context"
	"database/sql"
	"errors"
)

// CallerTx runs a store's statements in a transaction its caller began
// (the stores' WithTx): reads and writes alike see the caller's uncommitted
// changes, and commit or roll back with them. Each store wraps it in the
// writer of its own package; it holds what is common to both.
type CallerTx struct{ Tx *sql.Tx }

// Savepoint statements of a write in the caller's transaction.
const (
	txSavepointSQL  = `SAVEPOINT payoutkit`
	txReleaseSQL    = `RELEASE SAVEPOINT payoutkit`
	txRollbackToSQL = `ROLLBACK TO SAVEPOINT payoutkit`
)

// InTx runs fn in a savepoint of the caller's transaction: fn's error
// undoes what fn did and is returned as is, and leaves the transaction
// usable.
func (c CallerTx) InTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if _, err := c.Tx.ExecContext(ctx, txSavepointSQL); err != nil {
		return err
	}
	if err := fn(c.Tx); err != nil {
		if _, rerr := c.Tx.ExecContext(ctx, txRollbackToSQL); rerr != nil {
			return errors.Join(err, rerr)
		}
		if _, rerr := c.Tx.ExecContext(ctx, txReleaseSQL); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	_, err := c.Tx.ExecContext(ctx, txReleaseSQL)
	return err
}

// Write runs fn as one atomic write, in a savepoint, with the caller's ctx.
func (c CallerTx) Write(ctx context.Context, fn TxFunc) error {
	return c.InTx(ctx, func(tx *sql.Tx) error { return fn(ctx, tx) })
}

// Reader runs reads: the caller's transaction.
func (c CallerTx) Reader() Querier { return c.Tx }

// ReadRow runs a point read in the caller's transaction.
func (c CallerTx) ReadRow(ctx context.Context, query string, args ...any) Scanner {
	return c.Tx.QueryRowContext(ctx, query, args...)
}

// Rows runs a single write statement that returns rows in the caller's
// transaction and hands them to read, which must consume and close them.
func (c CallerTx) Rows(ctx context.Context, read func(RowIter) error, query string, args ...any) error {
	rows, err := c.Tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	return read(rows)
}

// Committed does nothing: the caller's transaction has not committed yet,
// and work it holds is left to the dispatchers' polls.
func (CallerTx) Committed() {}

// Close does nothing: the transaction is the caller's.
func (CallerTx) Close() error { return nil }
