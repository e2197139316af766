package sqlite_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// WithExistingSchema opens a migrated database, and refuses a missing file
// (creating nothing, not even the priority file), a file without
// payoutkit's tables and an older schema (migrating nothing), each with its
// own error.
func TestOpenWithExistingSchema(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()

	for _, path := range []string{filepath.Join(dir, "missing.db"), filepath.Join(dir, "no-dir", "x.db")} {
		_, err := sqlite.Open(ctx, path, sqlite.WithExistingSchema(), sqlite.WithPriorityWrites())
		if !errors.Is(err, sqlite.ErrNoSchema) {
			t.Fatalf("Open(%s): %v; want ErrNoSchema", path, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("opening missing databases left %v", entries)
	}

	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(ctx, empty, sqlite.WithExistingSchema()); !errors.Is(err, sqlite.ErrNoSchema) {
		t.Fatalf("Open(an empty file): %v; want ErrNoSchema", err)
	}

	old := filepath.Join(dir, "old.db")
	s, err := sqlite.OpenAtVersion(ctx, old, 1)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := sqlite.Open(ctx, old, sqlite.WithExistingSchema()); !errors.Is(err, sqlite.ErrSchemaOutdated) {
		t.Fatalf("Open(an older schema): %v; want ErrSchemaOutdated", err)
	}
	// Refusing it migrated nothing; opening without the option does.
	if _, err := sqlite.Open(ctx, old, sqlite.WithExistingSchema()); !errors.Is(err, sqlite.ErrSchemaOutdated) {
		t.Fatalf("Open(an older schema), again: %v; want ErrSchemaOutdated", err)
	}
	s2, err := sqlite.Open(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	s3, err := sqlite.Open(ctx, old, sqlite.WithExistingSchema())
	if err != nil {
		t.Fatalf("Open(a migrated database): %v", err)
	}
	if err := s3.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	s3.Close()
}
