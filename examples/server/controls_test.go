package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// The payout controls' commands change what a running server does on its
// next request: the policy, an approval and a rejection, the address book
// and the security log.
func TestControlCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "payoutkit.db")
	s := startServer(t, "-db", db)
	first := decodeObject(t, s.stdout.String())
	ws, key := first["workspace_id"].(string), first["api_key"].(string)
	post := func(path, body string) map[string]any {
		t.Helper()
		_, env := call(t, "POST", s.url+path, key, body)
		return env
	}
	if env := post("/v1/orders", `{"order_id":"fund","amount":"2000.00"}`); code(env) != 0 {
		t.Fatalf("order: %v", env)
	}
	if env := post("/v1/sandbox/orders/pay", `{"order_id":"fund"}`); code(env) != 0 {
		t.Fatalf("pay: %v", env)
	}
	payout := func(id, amount string) map[string]any {
		t.Helper()
		return post("/v1/payouts", `{"payout_id":"`+id+`","amount":"`+amount+`","asset":"USDT","network":"TRON","address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","payer_id":"c"}`)
	}

	policy := func(want string, args ...string) {
		t.Helper()
		out := mustCommand(t, append([]string{"workspace", "policy", "-db", db, "-workspace", ws}, args...)...)
		if out != want+"\n" {
			t.Fatalf("workspace policy %v printed %q; want %q", args, out, want)
		}
	}
	policy(`{"max_payout":null,"daily_limit":null,"approval_over":null,"address_allowlist":false,"cooling_off":"24h0m0s"}`)
	policy(`{"max_payout":"500.00","daily_limit":"1000.00","approval_over":"250.00","address_allowlist":false,"cooling_off":"24h0m0s"}`,
		"-max-payout", "500", "-daily-limit", "1000", "-approval-over", "250")
	if env := payout("po-big", "600.00"); code(env) != 40000 || env["message"] != "amount exceeds the payout limit of 500.00" {
		t.Fatalf("payout over the limit: %v", env)
	}
	policy(`{"max_payout":null,"daily_limit":"1000.00","approval_over":"250.00","address_allowlist":false,"cooling_off":"24h0m0s"}`, "-max-payout", "")
	if _, err := command(t, "workspace", "policy", "-db", db, "-workspace", ws, "-address-allowlist", "maybe"); err == nil {
		t.Fatal("-address-allowlist maybe was taken")
	}

	held := payout("po-held", "300.00")
	if code(held) != 0 || held["data"].(map[string]any)["approval"] != "pending" {
		t.Fatalf("held payout: %v", held)
	}
	approved := decodeObject(t, mustCommand(t, "payouts", "approve", "-db", db, "-workspace", ws, "-payout-id", "po-held"))
	if approved["approval"] != "approved" {
		t.Fatalf("payouts approve printed %v", approved)
	}
	if env := payout("po-reject", "260.00"); code(env) != 0 {
		t.Fatalf("second held payout: %v", env)
	}
	rejected := decodeObject(t, mustCommand(t, "payouts", "reject", "-db", db, "-workspace", ws, "-payout-id", "po-reject", "-reason", "unknown customer"))
	if rejected["status"] != "failed" || rejected["approval"] != "rejected" || rejected["failure_reason"] != "rejected: unknown customer" {
		t.Fatalf("payouts reject printed %v", rejected)
	}
	if _, err := command(t, "payouts", "approve", "-db", db, "-workspace", ws, "-payout-id", "po-reject"); err == nil {
		t.Fatal("a rejected payout was approved")
	}

	added := decodeObject(t, mustCommand(t, "addresses", "add", "-db", db, "-workspace", ws, "-network", "ETH",
		"-address", "0x52908400098527886E0F7030069857D2E4169EE7", "-label", "cold wallet"))
	wantKeys(t, added, "network", "address", "label", "added_at", "usable_from")
	var list []map[string]any
	if err := json.Unmarshal([]byte(mustCommand(t, "addresses", "list", "-db", db, "-workspace", ws)), &list); err != nil || len(list) != 1 {
		t.Fatalf("addresses list: %v %v", list, err)
	}
	policy(`{"max_payout":null,"daily_limit":"1000.00","approval_over":"250.00","address_allowlist":true,"cooling_off":"1h0m0s"}`,
		"-address-allowlist", "on", "-cooling-off", "1h")
	if env := payout("po-tron", "10.00"); code(env) != 40300 || env["message"] != "address is not in the allowlist" {
		t.Fatalf("payout outside the allowlist: %v", env)
	}
	removed := mustCommand(t, "addresses", "remove", "-db", db, "-workspace", ws, "-network", "eth", "-address", "0x52908400098527886e0f7030069857d2e4169ee7")
	if removed != `{"removed":1}`+"\n" {
		t.Fatalf("addresses remove printed %q", removed)
	}

	var log []map[string]any
	if err := json.Unmarshal([]byte(mustCommand(t, "security-log", "-db", db, "-workspace", ws)), &log); err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, l := range log {
		if l["actor"] != "cli" {
			t.Fatalf("entry %v: actor is not cli", l)
		}
		actions = append(actions, l["action"].(string))
	}
	want := "address.removed policy.changed address.added payout.rejected payout.approved policy.changed policy.changed"
	if got := strings.Join(actions, " "); got != want {
		t.Fatalf("security log = %s; want %s", got, want)
	}
}

// The key and webhook commands record their changes in the security log
// with the actor "cli", and never a key or a secret.
func TestKeyWebhookCommandsLog(t *testing.T) {
	db := filepath.Join(t.TempDir(), "payoutkit.db")
	first := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "Acme"))
	ws := first["workspace_id"].(string)
	created := decodeObject(t, mustCommand(t, "keys", "create", "-db", db, "-workspace", ws, "-scopes", "read"))
	mustCommand(t, "keys", "revoke", "-db", db, "-workspace", ws, "-prefix", created["prefix"].(string))
	reset := decodeObject(t, mustCommand(t, "keys", "reset", "-db", db, "-workspace", ws))
	mustCommand(t, "webhook", "set", "-db", db, "-workspace", ws, "-url", "https://hooks.example/in")
	rotated := mustCommand(t, "webhook", "rotate-secret", "-db", db, "-workspace", ws)

	out := mustCommand(t, "security-log", "-db", db, "-workspace", ws)
	for _, secret := range []string{created["api_key"].(string), reset["api_key"].(string), first["api_key"].(string)} {
		if strings.Contains(out, secret) {
			t.Fatalf("the security log holds the key %q:\n%s", secret, out)
		}
	}
	if i := strings.Index(rotated, "whsec_"); i < 0 || strings.Contains(out, rotated[i:i+20]) {
		t.Fatalf("rotate-secret printed %q; the log: %s", rotated, out)
	}
	var log []map[string]any
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, l := range log {
		if l["actor"] != "cli" || l["client_addr"] != nil {
			t.Fatalf("entry %v: not by cli without a client address", l)
		}
		actions = append(actions, l["action"].(string))
	}
	want := "webhook.secret_rotated webhook.url_set keys.reset key.revoked key.created"
	if got := strings.Join(actions, " "); got != want {
		t.Fatalf("security log = %s; want %s", got, want)
	}
	if d := log[3]["details"].(map[string]any); d["prefix"] != created["prefix"] {
		t.Fatalf("key.revoked details %v; want the prefix %v", d, created["prefix"])
	}
}
