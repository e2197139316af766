package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

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

// driverError maps PostgreSQL's SQLSTATEs, or returns nil.
func driverError(op string, err error) error {
	e, ok := errors.AsType[*pgconn.PgError](err)
	if !ok {
		return nil
	}
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

// pgInsufficientPrivilege is PostgreSQL's SQLSTATE for a permission denied.
const pgInsufficientPrivilege = "42501"

// isPgCode reports whether err is a PostgreSQL error with SQLSTATE code.
func isPgCode(err error, code string) bool {
	e, ok := errors.AsType[*pgconn.PgError](err)
	return ok && e.Code == code
}
