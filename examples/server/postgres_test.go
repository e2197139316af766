package main

import (
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// postgresDB returns a DSN of an empty schema of the PAYOUTKIT_TEST_POSTGRES
// server, dropped when the test ends. Without that variable the test is
// skipped, except in CI.
func postgresDB(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("PAYOUTKIT_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("PAYOUTKIT_TEST_POSTGRES is not set; CI must run the PostgreSQL tests")
		}
		t.Skip("set PAYOUTKIT_TEST_POSTGRES=postgres://... to run the PostgreSQL tests")
	}
	schema := "srv_" + strings.ToLower(rand.Text()[:12])
	exec := func(ctx context.Context, sql string) error {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec(t.Context(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
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

// The admin commands and serve work on PostgreSQL as on SQLite, and the
// server honours a key revoked by a command on the next request.
func TestPostgres(t *testing.T) {
	db := postgresDB(t)
	ws := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "pg"))
	s := startServer(t, "-db", db)
	if strings.Contains(s.stderr.String(), "payoutkit:payoutkit@") || strings.Contains(s.stderr.String(), ":payoutkit@") {
		t.Fatalf("the database password reached the logs:\n%s", s.stderr)
	}
	key := ws["api_key"].(string)
	if _, env := call(t, "POST", s.url+"/v1/orders", key, `{"order_id":"o1","amount":"5"}`); code(env) != 0 {
		t.Fatalf("order: %v", env)
	}
	if _, env := call(t, "POST", s.url+"/v1/sandbox/orders/pay", key, `{"order_id":"o1"}`); code(env) != 0 {
		t.Fatalf("pay: %v", env)
	}
	_, env := call(t, "GET", s.url+"/v1/balance", key, "")
	if data, _ := env["data"].(map[string]any); data["available"] != "5.00" {
		t.Fatalf("balance: %v", env)
	}
	mustCommand(t, "keys", "revoke", "-db", db, "-workspace", ws["workspace_id"].(string), "-prefix", key[3:11])
	if _, env := call(t, "GET", s.url+"/v1/balance", key, ""); code(env) != 40100 {
		t.Fatalf("revoked key: %v", env)
	}
}
