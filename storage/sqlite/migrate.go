package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strings"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// The schema is migrations/NNNN_name.sql, applied by sqlcore.Migrate in one
// transaction with their rows in schema_migrations. Two instances starting
// at once are serialised by the write lock of BEGIN IMMEDIATE.
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
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`

// loadMigrations reads the embedded migrations, checking their numbering.
func loadMigrations() ([]sqlcore.Migration, error) {
	return sqlcore.LoadMigrations(migrationFiles, "migrations", "sqlite")
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
	err = sqlcore.CheckSchema(ctx, s.w.Reader(), s.d.name,
		`SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations')`,
		ms[len(ms)-1].Version, translate)
	if p := openProblem(s.d.name, err); p != nil && !errors.Is(err, ErrNoSchema) && !errors.Is(err, ErrSchemaOutdated) {
		return p
	}
	return err
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
		ms, target, func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, createSchemaMigrations); err != nil {
				return err
			}
			// A write that changes nothing: it fails at once on a database
			// that cannot be written (a read-only file or mount, mode=ro),
			// where BEGIN IMMEDIATE and CREATE TABLE IF NOT EXISTS succeed.
			_, err := tx.ExecContext(ctx, `UPDATE schema_migrations SET version = version WHERE version < 0`)
			return err
		}, ts)
	switch {
	case err == nil:
	case errors.Is(translate(ctx, "migrate", err), ErrReadOnly):
		return fmt.Errorf("%w: %s cannot be written, and the store needs to write", ErrReadOnly, s.d.name)
	case openProblem(s.d.name, err) != nil:
		return openProblem(s.d.name, err)
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

// Ready reports whether the database answers and its schema is the one
// this binary migrates to: nil, or why not. Servers use it for readiness.
func (s *Store) Ready(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	return sqlcore.Ready(ctx, s.w.Reader(), s.d.name, ms[len(ms)-1].Version, translate)
}
