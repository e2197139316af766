package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
	"github.com/payoutkit/payoutkit/storage/internal/sqltest"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// Orphans checks every table a workspace owns and every foreign key,
// counts none while the parents exist, and finds an orphan of each
// relation planted with the foreign keys off, which SQLite refuses while
// they are on.
func TestOrphans(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orphans.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// A connection of its own, the foreign keys off on it alone.
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	conn, err := raw.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(t.Context(), `PRAGMA foreign_keys = OFF`); err != nil {
		t.Fatal(err)
	}
	unkeyed := sqltest.Orphans(t, s, db, sqltest.Orphaning[*sqlite.Store]{
		Orphans: func(ctx context.Context, s *sqlite.Store) ([]sqlcore.OrphanCount, error) { return s.Orphans(ctx) },
		Query:   sqlite.Query,
		ForeignKeysSQL: `SELECT m.name, f."from", f."table", f."to"
			FROM sqlite_master m, pragma_foreign_key_list(m.name) f WHERE m.type = 'table'`,
		WorkspaceTablesSQL: `SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) c
			WHERE m.type = 'table' AND c.name = 'workspace_id'`,
		Unchecked: func(ctx context.Context, _ *sqlite.Store, query string, args ...any) error {
			_, err := conn.ExecContext(ctx, query, args...)
			return err
		},
	})
	if len(unkeyed) != 0 {
		t.Errorf("relations without a foreign key on SQLite: %v; want none", unkeyed)
	}
}
