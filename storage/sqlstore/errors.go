package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/payoutkit/payoutkit"
)

// Errors for conditions that no payoutkit sentinel describes. Both are
// internal errors to an API caller (a 500), but an operator or a retry loop
// can tell them apart with errors.Is.
var (
	// ErrBusy reports that the database stayed locked by another process (or,
	// on PostgreSQL, that a lock wait or serialization failed) until the
	// operation gave up. Retrying later may succeed.
	ErrBusy = errors.New("sqlstore: database is busy")
	// ErrReadOnly reports that the database refuses writes: a read-only
	// file, directory or mount, a "file:...?mode=ro" URL, or a PostgreSQL
	// hot standby.
	ErrReadOnly = errors.New("sqlstore: database is read-only")
)

// translate is the one place where driver errors become the store's errors.
// Missing rows are payoutkit.ErrNotFound, a taken unique key
// payoutkit.ErrConflict, a missing referenced row (a foreign key)
// payoutkit.ErrNotFound; sentinels are returned bare, as memstore returns
// them, so that their messages say nothing about the database. Everything
// else is wrapped with op for the logs.
func translate(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*payoutkit.Error](err); ok {
		return err // already a sentinel (ErrInsufficientBalance, ...)
	}
	if errors.Is(err, ErrClosed) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return payoutkit.ErrNotFound
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		// The driver reports a cancelled statement in its own words
		// (SQLITE_INTERRUPT, 57014); the caller wants its context's error.
		return fmt.Errorf("sqlstore: %s: %w", op, ctxErr)
	}
	if e, ok := errors.AsType[*pgconn.PgError](err); ok {
		switch e.Code {
		case "23505": // unique_violation
			return payoutkit.ErrConflict
		case "23503": // foreign_key_violation
			return payoutkit.ErrNotFound
		case "40001", "40P01", "55P03": // serialization_failure, deadlock_detected, lock_not_available
			return fmt.Errorf("%w (%s: SQLSTATE %s)", ErrBusy, op, e.Code)
		case "25006": // read_only_sql_transaction
			return fmt.Errorf("%w (%s)", ErrReadOnly, op)
		}
		// The message of a PostgreSQL error names tables and values, but
		// not the statement; it is for the logs.
		return fmt.Errorf("sqlstore: %s: %w", op, err)
	}
	if e, ok := errors.AsType[*sqlite.Error](err); ok {
		switch code := e.Code(); {
		case code == sqlite3.SQLITE_CONSTRAINT_UNIQUE, code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return payoutkit.ErrConflict
		case code == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return payoutkit.ErrNotFound
		case code&0xff == sqlite3.SQLITE_BUSY, code&0xff == sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%w (%s)", ErrBusy, op)
		case code&0xff == sqlite3.SQLITE_READONLY:
			return fmt.Errorf("%w (%s)", ErrReadOnly, op)
		}
	}
	return fmt.Errorf("sqlstore: %s: %w", op, err)
}

// isBusy reports whether err is SQLite's SQLITE_BUSY.
func isBusy(err error) bool {
	e, ok := errors.AsType[*sqlite.Error](err)
	return ok && e.Code()&0xff == sqlite3.SQLITE_BUSY
}

// openError explains why a SQLite database could not be opened.
func openError(path string, err error) error {
	if e := openProblem(path, err); e != nil {
		return e
	}
	return fmt.Errorf("sqlstore: cannot open SQLite database %s: %w", path, err)
}

// openProblem explains the SQLite errors that mean the database cannot be
// used at all, and returns nil for any other error.
func openProblem(path string, err error) error {
	if e, ok := errors.AsType[*sqlite.Error](err); ok {
		switch e.Code() & 0xff {
		case sqlite3.SQLITE_CANTOPEN:
			return fmt.Errorf("sqlstore: cannot open SQLite database %s: the file or its directory is missing or not accessible: %w", path, err)
		case sqlite3.SQLITE_READONLY:
			return fmt.Errorf("%w: %s cannot be written, and the store needs to write", ErrReadOnly, path)
		case sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("sqlstore: %s is not a SQLite database", path)
		case sqlite3.SQLITE_BUSY:
			return fmt.Errorf("%w: %s stayed locked by another process", ErrBusy, path)
		}
	}
	return nil
}

// pgInsufficientPrivilege is PostgreSQL's SQLSTATE for a permission denied.
const pgInsufficientPrivilege = "42501"

// isPgCode reports whether err is a PostgreSQL error with SQLSTATE code.
func isPgCode(err error, code string) bool {
	e, ok := errors.AsType[*pgconn.PgError](err)
	return ok && e.Code == code
}
