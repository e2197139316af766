package main

import (
	"strings"
	"testing"

	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// The admin commands and serve work on PostgreSQL as on SQLite, and the
// server honours a key revoked by a command on the next request.
func TestPostgres(t *testing.T) {
	db := pgtest.Postgres(t)
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
