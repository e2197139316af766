package sqlcore

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"
)

// The schema of each database is a list of numbered SQL files embedded in
// its store's package: migrations/NNNN_name.sql, numbered from 1 without
// gaps. A file is never edited once released; a change is a new file.
//
// Migrate applies the missing ones, in order, in ONE transaction together
// with their rows in schema_migrations, so a database is always at one
// version of the schema, never between two. The store's prelude serialises
// instances starting at once. A database at a version the binary does not
// know is refused, since the binary cannot know what the newer schema
// means.

// Migration is one numbered schema file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// LoadMigrations reads the migrations in dir of fsys, checking their
// numbering; dialect names them in errors.
func LoadMigrations(fsys fs.FS, dir, dialect string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading %s migrations: %w", dialect, err)
	}
	var out []Migration
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
		body, err := fs.ReadFile(fsys, dir+"/"+e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	for i, m := range out { // ReadDir sorts by name, and names start with the zero-padded number
		if m.Version != i+1 {
			return nil, fmt.Errorf("sqlstore: %s migrations are not numbered 1, 2, 3...: found %d at position %d", dialect, m.Version, i+1)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sqlstore: no %s migrations", dialect)
	}
	return out, nil
}

// Migrate applies the migrations of ms missing from the database, up to
// version target (all of them when target is 0), in the one transaction
// inTx runs: prelude first (a lock, a check, creating schema_migrations),
// then each migration and its row. It returns the migrations it applied,
// which count only once inTx has committed.
func Migrate(ctx context.Context, inTx func(ctx context.Context, fn func(tx *sql.Tx) error) error, ms []Migration, target int,
	prelude func(ctx context.Context, tx *sql.Tx) error, ts func(time.Time) any,
) ([]Migration, error) {
	latest := ms[len(ms)-1].Version
	if target > 0 && target < latest {
		ms = ms[:target]
	}
	var applied []Migration
	err := inTx(ctx, func(tx *sql.Tx) error {
		applied = nil
		if err := prelude(ctx, tx); err != nil {
			return err
		}
		var current int
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return err
		}
		if current > latest {
			return fmt.Errorf("sqlstore: database schema version %d is newer than this binary (%d)", current, latest)
		}
		for _, m := range ms[min(current, len(ms)):] {
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("sqlstore: migration %d (%s): %w", m.Version, m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.Version, m.Name, ts(time.Now())); err != nil {
				return err
			}
			applied = append(applied, m)
		}
		return nil
	})
	return applied, err
}

// Ready reports whether the database behind q answers and its schema is at
// latest: nil, or why not; name names the database.
func Ready(ctx context.Context, q Querier, name string, latest int, translate func(ctx context.Context, op string, err error) error) error {
	var current int
	if err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("sqlstore: %s does not answer: %w", name, translate(ctx, "ready", err))
	}
	if current != latest {
		return fmt.Errorf("sqlstore: %s has schema version %d; this binary needs %d", name, current, latest)
	}
	return nil
}

// CheckSchema reports whether the database behind q holds payoutkit's
// schema at version latest, for a store that opens without migrating: nil;
// ErrNoSchema when tableExistsSQL (a query of one boolean) finds no
// schema_migrations or it is empty; ErrSchemaOutdated when it is older; an
// error when it is newer. name names the database.
func CheckSchema(ctx context.Context, q Querier, name, tableExistsSQL string, latest int, translate func(ctx context.Context, op string, err error) error) error {
	var exists bool
	if err := q.QueryRowContext(ctx, tableExistsSQL).Scan(&exists); err != nil {
		return fmt.Errorf("sqlstore: reading the schema of %s: %w", name, translate(ctx, "schema", err))
	}
	var current int
	if exists {
		if err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("sqlstore: reading the schema version of %s: %w", name, translate(ctx, "schema", err))
		}
	}
	switch {
	case current == 0:
		return fmt.Errorf("%w: %s holds no payoutkit tables", ErrNoSchema, name)
	case current < latest:
		return fmt.Errorf("%w: %s has schema version %d; this binary needs %d", ErrSchemaOutdated, name, current, latest)
	case current > latest:
		return fmt.Errorf("sqlstore: database schema version %d of %s is newer than this binary (%d)", current, name, latest)
	}
	return nil
}
