package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

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

// driverError maps PostgreSQL's SQLSTATEs, and a lost or refused
// connection, or returns nil.
func driverError(op string, err error) error {
	e, ok := errors.AsType[*pgconn.PgError](err)
	if !ok {
		if connectionLost(err) {
			return fmt.Errorf("%w (%s: %v)", payoutkit.ErrUnavailable, op, err)
		}
		return nil
	}
	switch {
	case strings.HasPrefix(e.Code, "08"), e.Code == "57P01", e.Code == "57P02", e.Code == "57P03":
		// connection_exception; admin_shutdown, crash_shutdown,
		// cannot_connect_now: a server going down or not yet up.
		return fmt.Errorf("%w (%s: SQLSTATE %s)", payoutkit.ErrUnavailable, op, e.Code)
	case e.Code == "25006": // read_only_sql_transaction: a standby, not (or no longer) the primary
		return fmt.Errorf("%w (%s): %w", ErrReadOnly, op, payoutkit.ErrUnavailable)
	}
	switch e.Code {
	case "23505": // unique_violation
		return payoutkit.ErrConflict
	case "23503": // foreign_key_violation
		return payoutkit.ErrNotFound
	case "40001", "40P01", "55P03": // serialization_failure, deadlock_detected, lock_not_available
		return fmt.Errorf("%w (%s: SQLSTATE %s)", ErrBusy, op, e.Code)
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

// connectionLost reports whether err says the connection to the server was
// lost or could not be made: the statement (or its COMMIT) may or may not
// have taken effect.
func connectionLost(err error) bool {
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return true
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return true
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	// pgx's own words for a connection it closed after an error.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe")
}
