package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// wantNewKey checks what keys create prints: exactly api_key, prefix,
// scopes and allow_ips.
func wantNewKey(t *testing.T, m map[string]any, scopes, allowIPs []any) {
	t.Helper()
	if len(m) != 4 {
		t.Fatalf("members %v, want api_key, prefix, scopes, allow_ips", m)
	}
	for _, k := range []string{"api_key", "prefix"} {
		if s, ok := m[k].(string); !ok || s == "" {
			t.Fatalf("member %q = %v in %v", k, m[k], m)
		}
	}
	if !reflect.DeepEqual(m["scopes"], scopes) || !reflect.DeepEqual(m["allow_ips"], allowIPs) {
		t.Fatalf("scopes %#v, allow_ips %#v; want %#v, %#v", m["scopes"], m["allow_ips"], scopes, allowIPs)
	}
}

// callFrom is call with an X-Forwarded-For header.
func callFrom(t *testing.T, method, url, key, body, forwardedFor string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if forwardedFor != "" {
		req.Header.Set("X-Forwarded-For", forwardedFor)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp.StatusCode, env
}

// keys create with -scopes and -allow-ips, keys list showing them, and a
// server that enforces them, behind -trusted-proxies or not.
func TestKeyControlsCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "keyctl.db")
	wsID := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "Acme"))["workspace_id"].(string)

	ro := decodeObject(t, mustCommand(t, "keys", "create", "-db", db, "-workspace", wsID, "-scopes", "read"))
	wantNewKey(t, ro, []any{}, []any{})
	orders := decodeObject(t, mustCommand(t, "keys", "create", "-db", db, "-workspace", wsID, "-scopes", "orders:write"))
	wantNewKey(t, orders, []any{"orders:write"}, []any{})
	office := decodeObject(t, mustCommand(t, "keys", "create", "-db", db, "-workspace", wsID,
		"-scopes", "payouts:write,orders:write", "-allow-ips", "10.0.0.0/8, 192.0.2.7,2001:db8::/32"))
	wantNewKey(t, office, []any{"orders:write", "payouts:write"}, []any{"10.0.0.0/8", "192.0.2.7", "2001:db8::/32"})

	var list []map[string]any
	if err := json.Unmarshal([]byte(mustCommand(t, "keys", "list", "-db", db, "-workspace", wsID)), &list); err != nil || len(list) != 4 {
		t.Fatalf("keys list: %v %v", list, err)
	}
	byPrefix := map[string]map[string]any{}
	for _, k := range list {
		if len(k) != 6 {
			t.Fatalf("keys list row %v", k)
		}
		byPrefix[k["prefix"].(string)] = k
	}
	for _, c := range []struct {
		key              map[string]any
		scopes, allowIPs string
	}{
		{ro, "[]", "[]"},
		{orders, "[orders:write]", "[]"},
		{office, "[orders:write payouts:write]", "[10.0.0.0/8 192.0.2.7 2001:db8::/32]"},
	} {
		row := byPrefix[c.key["prefix"].(string)]
		if fmt.Sprint(row["scopes"]) != c.scopes || fmt.Sprint(row["allow_ips"]) != c.allowIPs {
			t.Fatalf("keys list row %v; want scopes %s, allow_ips %s", row, c.scopes, c.allowIPs)
		}
	}

	// Refused flags print nothing and make no key.
	for _, args := range [][]string{
		{"keys", "create", "-db", db, "-workspace", wsID, "-scopes", "payouts:read"},
		{"keys", "create", "-db", db, "-workspace", wsID, "-scopes", ""},
		{"keys", "create", "-db", db, "-workspace", wsID, "-allow-ips", "10.0.0.0/33"},
		{"keys", "create", "-db", db, "-workspace", wsID, "-allow-ips", "host.example"},
		{"serve", "-db", db, "-trusted-proxies", "not-a-range"},
	} {
		if _, err := command(t, args...); err == nil {
			t.Errorf("%v succeeded", args)
		}
	}
	if err := json.Unmarshal([]byte(mustCommand(t, "keys", "list", "-db", db, "-workspace", wsID)), &list); err != nil || len(list) != 4 {
		t.Fatalf("refused creates made keys: %v %v", list, err)
	}

	payout := `{"payout_id":"po-1","amount":"1.00","asset":"USDT","network":"TRON","address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","payer_id":"c1"}`
	s := startServer(t, "-db", db)
	roKey, ordersKey, officeKey := ro["api_key"].(string), orders["api_key"].(string), office["api_key"].(string)
	if st, env := callFrom(t, "POST", s.url+"/v1/payouts", roKey, payout, ""); st != 403 || code(env) != 40300 || env["message"] != "this API key lacks the payouts:write scope" {
		t.Fatalf("read-only key creating a payout: %d %v", st, env)
	}
	if st, env := callFrom(t, "GET", s.url+"/v1/balance", roKey, "", ""); st != 200 || code(env) != 0 {
		t.Fatalf("read-only key reading: %d %v", st, env)
	}
	if st, env := callFrom(t, "POST", s.url+"/v1/orders", ordersKey, `{"order_id":"o-1","amount":"5.00"}`, ""); st != 200 || code(env) != 0 {
		t.Fatalf("orders key creating an order: %d %v", st, env)
	}
	if st, env := callFrom(t, "POST", s.url+"/v1/sandbox/payouts/fail", ordersKey, `{"payout_id":"po-1"}`, ""); st != 403 || code(env) != 40300 {
		t.Fatalf("orders key failing a payout: %d %v", st, env)
	}
	// Without -trusted-proxies the test's loopback address is the client,
	// whatever X-Forwarded-For says.
	if st, env := callFrom(t, "GET", s.url+"/v1/balance", officeKey, "", "10.1.2.3"); st != 403 || code(env) != 40300 {
		t.Fatalf("allowlisted key from loopback: %d %v", st, env)
	}
	s.shutdown(t)

	p := startServer(t, "-db", db, "-trusted-proxies", "127.0.0.0/8,::1")
	if st, env := callFrom(t, "GET", p.url+"/v1/balance", officeKey, "", "10.1.2.3"); st != 200 || code(env) != 0 {
		t.Fatalf("allowlisted key through a trusted proxy: %d %v", st, env)
	}
	if st, env := callFrom(t, "GET", p.url+"/v1/balance", officeKey, "", "10.1.2.3, 198.51.100.4"); st != 403 || code(env) != 40300 {
		t.Fatalf("allowlisted key, right-most untrusted entry outside the list: %d %v", st, env)
	}
	if st, env := callFrom(t, "GET", p.url+"/v1/balance", officeKey, "", ""); st != 403 || code(env) != 40300 {
		t.Fatalf("allowlisted key from the proxy itself: %d %v", st, env)
	}
}
