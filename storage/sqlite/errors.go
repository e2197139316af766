package sqlite

import (
	"context"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// translate is the one place where the driver's errors become the store's.
// Missing rows are payoutkit.ErrNotFound, a taken unique key
// payoutkit.ErrConflict, a missing referenced row (a foreign key)
// payoutkit.ErrNotFound; sentinels are returned bare, as memstore returns
// them, so that their messages say nothing about the database. Everything
// else is wrapped with op for the logs.
func translate(ctx context.Context, op string, err error) error {
	return sqlcore.Translate(ctx, op, err, driverError)
}

// driverError maps SQLite's result codes, or returns nil.
func driverError(op string, err error) error {
	e, ok := errors.AsType[*sqlite.Error](err)
	if !ok {
		return nil
	}
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
	return nil
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
