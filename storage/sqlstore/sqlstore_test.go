package sqlstore_test

import (
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlstore"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

func TestConformanceSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) payoutkit.Store { return openSQLite(t) })
}

func TestConformancePostgres(t *testing.T) {
	dsn := postgresDSN(t)
	storetest.Run(t, func(t *testing.T) payoutkit.Store { return openPostgres(t, freshSchema(t, dsn)) })
}

// openSQLite opens a store on a new database file.
func openSQLite(t testing.TB) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(t.Context(), filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openPostgres(t testing.TB, dsn string) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// postgresDSN is the test server's DSN from PAYOUTKIT_TEST_POSTGRES. Without
// it the test is skipped, except in CI, where a missing PostgreSQL fails.
func postgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("PAYOUTKIT_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("PAYOUTKIT_TEST_POSTGRES is not set; CI must run the PostgreSQL tests")
		}
		t.Skip("set PAYOUTKIT_TEST_POSTGRES=postgres://... to run the PostgreSQL tests")
	}
	return dsn
}

// freshSchema creates an empty schema, dropped when the test ends, and
// returns dsn with its search_path set to it.
func freshSchema(t testing.TB, dsn string) string {
	t.Helper()
	schema := "t_" + strings.ToLower(rand.Text()[:12])
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatalf("connecting to PostgreSQL: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
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
