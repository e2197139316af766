package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseCoins(t *testing.T) {
	coins, err := parseCoins([]byte(`[
		{"ticker": "USDT", "network": "TRON", "name": "Tether USD on TRON", "decimals": 6, "min_amount": "1", "max_amount": "50000.00"},
		{"ticker": "BTC", "network": "BTC", "name": "Bitcoin", "decimals": 8}
	]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(coins) != 2 || coins[0].MinAmount != 1_00 || coins[0].MaxAmount != 50000_00 || coins[0].Decimals != 6 ||
		coins[1].MinAmount != 0 || coins[1].MaxAmount != 0 || coins[1].Name != "Bitcoin" {
		t.Fatalf("%+v", coins)
	}
	for _, c := range []struct{ file, msg string }{
		{`[]`, "empty"},
		{`{}`, "JSON array"},
		{`[{"ticker":"BTC","network":"BTC","name":"Bitcoin","decimals":8}] []`, "more than one"},
		{`[{"ticker":"BTC","network":"BTC","name":"Bitcoin","decimals":8,"min":"1.00"}]`, `unknown field "min"`},
		{`[{"ticker":"BTC","network":"BTC","name":"Bitcoin"}]`, "decimals is required"},
		{`[{"network":"BTC","name":"Bitcoin","decimals":8}]`, "ticker is required"},
		{`[{"ticker":"BTC","name":"Bitcoin","decimals":8}]`, "network is required"},
		{`[{"ticker":"BTC","network":"BTC","decimals":8}]`, "name is required"},
		{`[{"ticker":"BTC","network":"BTC","name":"Bitcoin","decimals":"8"}]`, "JSON array"},
		{`[{"ticker":"BTC","network":"BTC","name":"Bitcoin","decimals":8,"min_amount":"1.005"}]`, "min_amount must be a decimal"},
		{`[{"ticker":"BTC","network":"BTC","name":"Bitcoin","decimals":8,"min_amount":1}]`, "JSON array"},
		{`[{"ticker":"BTC","network":"BTC","name":"Bitcoin","decimals":8,"max_amount":"0"}]`, "max_amount must be greater than 0"},
	} {
		if _, err := parseCoins([]byte(c.file)); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v; want %q", c.file, err, c.msg)
		}
	}
}

// serve -coins FILE offers exactly the file's coins, with their limits.
func TestServeCoinsFlag(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "coins.json")
	if err := os.WriteFile(file, []byte(`[
		{"ticker": "USDT", "network": "TRON", "name": "Tether USD on TRON", "decimals": 6, "min_amount": "1.00", "max_amount": "500.00"},
		{"ticker": "TRX", "network": "TRON", "name": "TRON", "decimals": 6}
	]`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, key := serverWithKey(t, "-coins", file)

	_, env := call(t, "GET", s.url+"/v1/coins", key, "")
	coins, _ := env["data"].(map[string]any)["payout_coins"].([]any)
	if len(coins) != 2 {
		t.Fatalf("coins %v", env)
	}
	usdt := coins[0].(map[string]any)
	if usdt["ticker"] != "USDT" || usdt["min_amount"] != "1.00" || usdt["max_amount"] != "500.00" || usdt["decimals"] != 6.0 {
		t.Fatalf("USDT row %v", usdt)
	}
	if trx := coins[1].(map[string]any); trx["min_amount"] != "0.01" || trx["max_amount"] != "1000000000.00" {
		t.Fatalf("TRX row %v", trx)
	}

	if st, env := call(t, "POST", s.url+"/v1/orders", key, `{"order_id":"o-1","amount":"1000.00"}`); st != 200 {
		t.Fatalf("order: %v", env)
	}
	call(t, "POST", s.url+"/v1/sandbox/orders/pay", key, `{"order_id":"o-1"}`)
	payout := func(id, amount, asset, network string) (int, map[string]any) {
		return call(t, "POST", s.url+"/v1/payouts", key, `{"payout_id":"`+id+`","amount":"`+amount+`","asset":"`+asset+
			`","network":"`+network+`","address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","payer_id":"c"}`)
	}
	if st, env := payout("p-1", "0.50", "USDT", "TRON"); st != 400 || env["message"] != "amount must be at least 1.00 for USDT on TRON" {
		t.Fatalf("below the minimum: %d %v", st, env)
	}
	if st, env := payout("p-2", "500.01", "USDT", "TRON"); st != 400 || env["message"] != "amount must be at most 500.00 for USDT on TRON" {
		t.Fatalf("above the maximum: %d %v", st, env)
	}
	if st, env := payout("p-3", "500", "USDT", "TRON"); st != 200 {
		t.Fatalf("at the maximum: %d %v", st, env)
	}
	// Coins outside the file are not offered.
	if st, env := payout("p-4", "5", "USDT", "ETH"); st != 400 || !strings.Contains(env["message"].(string), "network") {
		t.Fatalf("a default coin: %d %v", st, env)
	}
}

func TestServeCoinsFlagRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ file, msg string }{
		{filepath.Join(dir, "missing.json"), "-coins"},
		{write("typo.json", `[{"ticker":"BTC","network":"BTC","name":"Bitcoin","decimals":8,"max":"1"}]`), "unknown field"},
		{write("net.json", `[{"ticker":"FOO","network":"FOONET","name":"Foo","decimals":8}]`), "FOONET"},
		{write("limits.json", `[{"ticker":"BTC","network":"BTC","name":"Bitcoin","decimals":8,"min_amount":"5","max_amount":"4"}]`), "above max_amount"},
	} {
		var stdout, stderr bytes.Buffer
		db := filepath.Join(t.TempDir(), "payoutkit.db")
		err := run(context.Background(), []string{"serve", "-addr", "127.0.0.1:0", "-db", db, "-coins", c.file}, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v; want %q", c.file, err, c.msg)
		}
		if stdout.Len() != 0 {
			t.Errorf("%s: printed %q", c.file, stdout.String())
		}
	}
}
