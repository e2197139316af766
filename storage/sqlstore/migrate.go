package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"
)

// The schema is a list of numbered SQL files per dialect, embedded in the
// binary: migrations/<dialect>/NNNN_name.sql, numbered from 1 without gaps.
// A file is never edited once released; a change is a new file.
//
// Open applies the missing ones, in order, in ONE transaction together with
// their rows in schema_migrations, so a database is always at one version
// of the schema, never between two. Two instances starting at once are
// serialised: on SQLite by the write lock of BEGIN IMMEDIATE, on PostgreSQL
// by a transaction-scoped advisory lock keyed by the schema. A database at
// a version this binary does not know is refused, since the binary cannot
// know what the newer schema means.
//
// bun's migrate package does not drive them: it records a migration as
// applied before running it, outside the migration's transaction, and its
// lock is a table row that fails a concurrent starter (and outlives a
// crash) instead of making it wait. A program that runs bun's migrator adds
// payoutkit's versions to its own with AddMigrations: each runs this same
// code, under this same lock.
//
//go:embed migrations
var migrationFiles embed.FS

// errReadOnlyTx reports a PostgreSQL session whose transactions are read-only.
var errReadOnlyTx = errors.New("read-only transaction")

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the dialect's migrations, checking their numbering.
func loadMigrations(dialect string) ([]migration, error) {
	dir := path.Join("migrations", dialect)
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading %s migrations: %w", dialect, err)
	}
	var out []migration
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".sql")
		if !ok {
			continue
		}
		num, name, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if err != nil || name == "" {
			return nil, fmt.Errorf("sqlstore: migration file %s is not named NNNN_name.sql", e.Name())
		}
		body, err := fs.ReadFile(migrationFiles, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(body)})
	}
	for i, m := range out { // ReadDir sorts by name, and names start with the zero-padded number
		if m.version != i+1 {
			return nil, fmt.Errorf("sqlstore: %s migrations are not numbered 1, 2, 3...: found %d at position %d", dialect, m.version, i+1)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sqlstore: no %s migrations", dialect)
	}
	return out, nil
}

// migrate brings the schema up to date; see migrationFiles.
func (s *Store) migrate(ctx context.Context) error { return s.migrateTo(ctx, 0) }

// migrateTo applies the missing migrations up to version target, or all of
// them when target is 0. Only tests stop short of the latest version, to
// check a migration against data written by the schema before it.
func (s *Store) migrateTo(ctx context.Context, target int) error {
	ms, err := loadMigrations(s.dialect)
	if err != nil {
		return err
	}
	latest := ms[len(ms)-1].version
	if target > 0 && target < latest {
		ms = ms[:target]
	}
	var applied []migration
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if s.pg() {
			// Serialises instances migrating the same schema, until commit.
			if _, err := tx.ExecContext(ctx,
				`SELECT pg_advisory_xact_lock(hashtextextended('payoutkit sqlstore migrate ' || coalesce(current_schema(), ''), 0))`); err != nil {
				return err
			}
			// A hot standby, or default_transaction_read_only: say so now
			// rather than at the first payout.
			var ro string
			if err := tx.QueryRowContext(ctx, `SHOW transaction_read_only`).Scan(&ro); err != nil {
				return err
			}
			if ro == "on" {
				return errReadOnlyTx
			}
			// CREATE ... IF NOT EXISTS would still need the CREATE privilege,
			// which a store whose schema an administrator migrated may lack.
			var exists bool
			if err := tx.QueryRowContext(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				if _, err := tx.ExecContext(ctx, s.q.createSchemaMigrations); err != nil {
					return err
				}
			}
		} else {
			if _, err := tx.ExecContext(ctx, s.q.createSchemaMigrations); err != nil {
				return err
			}
			// A write that changes nothing: it fails at once on a database
			// that cannot be written (a read-only file or mount, mode=ro),
			// where BEGIN IMMEDIATE and CREATE TABLE IF NOT EXISTS succeed.
			if _, err := tx.ExecContext(ctx, `UPDATE schema_migrations SET version = version WHERE version < 0`); err != nil {
				return err
			}
		}
		var current int
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return err
		}
		if current > latest {
			return fmt.Errorf("sqlstore: database schema version %d is newer than this binary (%d)", current, latest)
		}
		for _, m := range ms[min(current, len(ms)):] {
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("sqlstore: migration %d (%s): %w", m.version, m.name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, s.ts(time.Now())); err != nil {
				return err
			}
			applied = append(applied, m)
		}
		return nil
	})
	switch {
	case err == nil:
	case errors.Is(err, errReadOnlyTx), errors.Is(translate(ctx, "migrate", err), ErrReadOnly):
		return fmt.Errorf("%w: %s cannot be written, and the store needs to write", ErrReadOnly, s.name)
	case openProblem(s.name, err) != nil:
		return openProblem(s.name, err)
	case strings.HasPrefix(err.Error(), "sqlstore: "):
		return err
	default:
		return fmt.Errorf("sqlstore: migrating %s: %w", s.name, err)
	}
	for _, m := range applied {
		s.log.InfoContext(ctx, "sqlstore: applied migration", "database", s.name, "version", m.version, "name", m.name)
	}
	return nil
}

// Ready reports whether the database answers and its schema is the one
// this binary migrates to: nil, or why not. Servers use it for readiness.
func (s *Store) Ready(ctx context.Context) error {
	ms, err := loadMigrations(s.dialect)
	if err != nil {
		return err
	}
	var current int
	if err := s.reader().QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("sqlstore: %s does not answer: %w", s.name, translate(ctx, "ready", err))
	}
	if latest := ms[len(ms)-1].version; current != latest {
		return fmt.Errorf("sqlstore: %s has schema version %d; this binary needs %d", s.name, current, latest)
	}
	return nil
}
