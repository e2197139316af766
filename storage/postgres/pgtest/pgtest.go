// Package pgtest gives tests an empty PostgreSQL database for storage/postgres: a
// fresh schema on the server named by PAYOUTKIT_TEST_POSTGRES, dropped when
// the test ends.
package pgtest

import (
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// EnvPostgres names the environment variable holding the test server's DSN.
const EnvPostgres = "PAYOUTKIT_TEST_POSTGRES"

// PostgresServer returns the test server's DSN. Without one the test is
// skipped with a message that says how to run it, except in CI (CI=true),
// where a missing PostgreSQL fails the test.
func PostgresServer(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvPostgres)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(EnvPostgres + " is not set; CI must run the PostgreSQL tests")
		}
		t.Skip("set " + EnvPostgres + "=postgres://... to run the PostgreSQL tests")
	}
	return dsn
}

// Postgres returns the DSN of a new, empty schema on the test server (see
// PostgresServer), with search_path set to it. The schema is dropped when the
// test ends.
func Postgres(t testing.TB) string {
	t.Helper()
	return FreshSchema(t, PostgresServer(t))
}

// FreshSchema creates an empty schema on the server of dsn, dropped when the
// test ends, and returns dsn with its search_path set to that schema.
func FreshSchema(t testing.TB, dsn string) string {
	t.Helper()
	schema := "t_" + strings.ToLower(rand.Text()[:12])
	if err := exec(t.Context(), dsn, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("creating a test schema: %v", err)
	}
	t.Cleanup(func() {
		if err := exec(context.Background(), dsn, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func exec(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}
