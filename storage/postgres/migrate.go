package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strings"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// The schema is migrations/NNNN_name.sql, applied by sqlcore.Migrate in one
// transaction with their rows in schema_migrations. Two instances starting
// at once are serialised by a transaction-scoped advisory lock keyed by the
// schema.
//
// bun's migrate package does not drive them: it records a migration as
// applied before running it, outside the migration's transaction, and its
// lock is a table row that fails a concurrent starter (and outlives a
// crash) instead of making it wait. A program that runs bun's migrator adds
// payoutkit's versions to its own with AddMigrations: each runs this same
// code, under this same lock.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// createSchemaMigrations creates the bookkeeping table of the migrations.
const createSchemaMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
				version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)`

// errReadOnlyTx reports a session whose transactions are read-only.
var errReadOnlyTx = errors.New("read-only transaction")

// loadMigrations reads the embedded migrations, checking their numbering.
func loadMigrations() ([]sqlcore.Migration, error) {
	return sqlcore.LoadMigrations(migrationFiles, "migrations", "postgres")
}

// migrateOrCheck brings the schema up to date or, for a store opened
// WithExistingSchema, checks that it is.
func (s *Store) migrateOrCheck(ctx context.Context) error {
	if !s.d.existing {
		return s.migrate(ctx)
	}
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	return sqlcore.CheckSchema(ctx, s.w.Reader(), s.d.name, `SELECT to_regclass('schema_migrations') IS NOT NULL`,
		ms[len(ms)-1].Version, translate)
}

// migrate brings the schema up to date.
func (s *Store) migrate(ctx context.Context) error { return s.migrateTo(ctx, 0) }

// migrateTo applies the missing migrations up to version target, or all of
// them when target is 0. Only tests stop short of the latest version, to
// check a migration against data written by the schema before it.
func (s *Store) migrateTo(ctx context.Context, target int) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	applied, err := sqlcore.Migrate(ctx, func(ctx context.Context, fn func(tx *sql.Tx) error) error { return s.w.InTx(ctx, fn) },
		ms, target, migratePrelude, ts)
	switch {
	case err == nil:
	case errors.Is(err, errReadOnlyTx), errors.Is(translate(ctx, "migrate", err), ErrReadOnly):
		return fmt.Errorf("%w: %s cannot be written, and the store needs to write", ErrReadOnly, s.d.name)
	case strings.HasPrefix(err.Error(), "sqlstore: "):
		return err
	default:
		return fmt.Errorf("sqlstore: migrating %s: %w", s.d.name, err)
	}
	for _, m := range applied {
		s.d.log.InfoContext(ctx, "sqlstore: applied migration", "database", s.d.name, "version", m.Version, "name", m.Name)
	}
	return nil
}

// migratePrelude takes the migrations' lock, refuses a read-only session
// and creates schema_migrations if it is missing.
func migratePrelude(ctx context.Context, tx *sql.Tx) error {
	// Serialises instances migrating the same schema, until commit. The key
	// is the one every release has used.
	if _, err := tx.ExecContext(ctx,
		`SELECT pg_advisory_xact_lock(hashtextextended('payoutkit sqlstore migrate ' || coalesce(current_schema(), ''), 0))`); err != nil {
		return err
	}
	// A hot standby, or default_transaction_read_only: say so now rather
	// than at the first payout.
	var ro string
	if err := tx.QueryRowContext(ctx, `SHOW transaction_read_only`).Scan(&ro); err != nil {
		return err
	}
	if ro == "on" {
		return errReadOnlyTx
	}
	// CREATE ... IF NOT EXISTS would still need the CREATE privilege, which
	// a store whose schema an administrator migrated may lack.
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if _, err := tx.ExecContext(ctx, createSchemaMigrations); err != nil {
			return err
		}
	}
	return nil
}

// Ready reports whether the database answers and its schema is the one
// this binary migrates to: nil, or why not. Servers use it for readiness.
func (s *Store) Ready(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	if err := sqlcore.Ready(ctx, s.w.Reader(), s.d.name, ms[len(ms)-1].Version, translate); err != nil {
		return err
	}
	// A standby answers reads, but the store needs a primary.
	var standby bool
	if err := s.w.Reader().QueryRowContext(ctx, `SELECT pg_is_in_recovery()`).Scan(&standby); err != nil {
		return translate(ctx, "ready", err)
	}
	if standby {
		return fmt.Errorf("%w: %s is a standby", payoutkit.ErrUnavailable, s.d.name)
	}
	return nil
}
