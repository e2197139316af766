package bitcoin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
)

// eachDB runs f on a fresh SQLite database and, with
// PAYOUTKIT_TEST_POSTGRES, on a fresh PostgreSQL schema.
func eachDB(t *testing.T, f func(t *testing.T, db *bun.DB)) {
	t.Run("sqlite", func(t *testing.T) { f(t, sqliteDB(t)) })
	t.Run("postgres", func(t *testing.T) { f(t, postgresDB(t)) })
}

func sqliteDB(t testing.TB) *bun.DB {
	t.Helper()
	db, err := OpenDSN(filepath.Join(t.TempDir(), "payoutkit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// postgresDB opens a schema of the test's own in the database of
// PAYOUTKIT_TEST_POSTGRES, or skips without it (fails under CI=true).
func postgresDB(t testing.TB) *bun.DB {
	t.Helper()
	dsn := os.Getenv("PAYOUTKIT_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("PAYOUTKIT_TEST_POSTGRES is not set")
		}
		t.Skip("PAYOUTKIT_TEST_POSTGRES is not set")
	}
	ctx := context.Background()
	var b [6]byte
	rand.Read(b[:])
	schema := "btc_" + hex.EncodeToString(b[:])
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db, err := OpenDSN(u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
