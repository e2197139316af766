package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// walkthrough is the README's curl walk-through, step by step: the same
// requests, so that the README cannot go stale. Run
//
//	go test ./examples/server -run TestWalkthrough -v
//
// to print the curl commands.
var walkthrough = []struct {
	title        string
	method, path string
	body         string
	want         map[string]any // members of data to check
}{
	{"The payout coins", "GET", "/v1/coins", "", nil},
	{"The balance: nothing yet", "GET", "/v1/balance", "", map[string]any{"currency": "USD", "available": "0.00", "in_progress": "0.00"}},
	{"Create an order", "POST", "/v1/orders",
		`{"order_id":"order-1","amount":"100.00","payer_id":"cust-42","description":"Top-up"}`,
		map[string]any{"order_id": "order-1", "status": "pending", "amount": "100.00"}},
	{"Pay it (sandbox)", "POST", "/v1/sandbox/orders/pay", `{"order_id":"order-1"}`,
		map[string]any{"order_id": "order-1", "status": "paid"}},
	{"The balance: credited", "GET", "/v1/balance", "", map[string]any{"available": "100.00", "in_progress": "0.00"}},
	{"Create a payout", "POST", "/v1/payouts",
		`{"payout_id":"po-1001","amount":"25.00","asset":"USDT","network":"TRON","address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","payer_id":"cust-42"}`,
		map[string]any{"payout_id": "po-1001", "status": "submitted", "amount": "25.00", "txid": nil}},
	{"Poll it", "POST", "/v1/payouts/info", `{"payout_id":"po-1001"}`,
		map[string]any{"payout_id": "po-1001", "status": "submitted"}},
	{"The balance: debited, in progress", "GET", "/v1/balance", "", map[string]any{"available": "75.00", "in_progress": "25.00"}},
	{"Complete it (sandbox)", "POST", "/v1/sandbox/payouts/complete", `{"payout_id":"po-1001","txid":"0xsandbox1"}`,
		map[string]any{"payout_id": "po-1001", "status": "completed", "txid": "0xsandbox1", "asset_amount": "25", "network_fee": "1"}},
	{"Poll it again", "POST", "/v1/payouts/info", `{"payout_id":"po-1001"}`,
		map[string]any{"status": "completed", "txid": "0xsandbox1"}},
	{"The balance: the money left", "GET", "/v1/balance", "", map[string]any{"available": "75.00", "in_progress": "0.00"}},
	{"List the completed payouts", "POST", "/v1/payouts/list", `{"status":"completed","created_from":"2026-01-01T00:00:00Z","limit":20}`,
		map[string]any{"next_cursor": nil}},
	{"List the customer's orders", "POST", "/v1/orders/list", `{"payer_id":"cust-42"}`,
		map[string]any{"next_cursor": nil}},
	{"A batch: the second payout is more than is left", "POST", "/v1/payouts/batch",
		`{"batch_id":"batch-1","payouts":[{"payout_id":"po-2001","amount":"30.00","asset":"USDT","network":"TRON","address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","payer_id":"cust-42"},{"payout_id":"po-2002","amount":"50.00","asset":"USDT","network":"TRON","address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","payer_id":"cust-7"}]}`,
		map[string]any{"batch_id": "batch-1", "accepted": 1, "refused": 1, "accepted_amount": "30.00"}},
}

// curl renders a step as the README shows it.
func curl(method, path, body string) string {
	var b strings.Builder
	b.WriteString("curl -s")
	if method != "GET" {
		b.WriteString(" -X " + method)
	}
	b.WriteString(" http://localhost:8080" + path + ` -H "Authorization: Bearer $KEY"`)
	if body != "" {
		b.WriteString(" \\\n  -H 'Content-Type: application/json' -d '" + body + "'")
	}
	return b.String()
}

func TestWalkthrough(t *testing.T) {
	s, key := serverWithKey(t)

	t.Log("\n# in one terminal\ngo run ./examples/server\n# in another\nKEY=$(jq -r .api_key payoutkit.db.credentials.json)")
	for _, st := range walkthrough {
		t.Logf("\n# %s\n%s", st.title, curl(st.method, st.path, st.body))
		var rd io.Reader
		if st.body != "" {
			rd = strings.NewReader(st.body)
		}
		req, err := http.NewRequest(st.method, s.url+st.path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		if st.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			Code    int            `json:"code"`
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		}
		if err := json.Unmarshal(raw, &env); err != nil || resp.StatusCode != 200 || env.Code != 0 || env.Message != "OK" {
			t.Fatalf("%s: HTTP %d %s (%v)", st.title, resp.StatusCode, raw, err)
		}
		for k, want := range st.want {
			if got := env.Data[k]; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s: data.%s = %v, want %v (%s)", st.title, k, got, want, raw)
			}
		}
		if st.path == "/v1/coins" {
			coins, _ := env.Data["payout_coins"].([]any)
			if len(coins) == 0 {
				t.Fatalf("no coins: %s", raw)
			}
		}
	}
}

// TestReadmeWalkthrough checks that the README's curl commands are exactly
// the walkthrough's requests, in order, so that what the README shows is
// what TestWalkthrough runs.
func TestReadmeWalkthrough(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cmd := range curlCommands(string(raw)) {
		method, path, body, err := parseCurl(cmd)
		if err != nil {
			t.Fatalf("README command %q: %v", cmd, err)
		}
		got = append(got, method+" "+path+" "+body)
	}
	var want []string
	for _, st := range walkthrough {
		want = append(want, st.method+" "+st.path+" "+st.body)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("README curl commands:\n%s\n\nwalkthrough steps:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// curlCommands returns the README's curl commands, continuation lines joined
// and trailing comments dropped.
func curlCommands(readme string) []string {
	var cmds []string
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "curl ") {
			continue
		}
		cmd := lines[i]
		for strings.HasSuffix(strings.TrimSpace(cmd), `\`) && i+1 < len(lines) {
			cmd = strings.TrimSuffix(strings.TrimSpace(cmd), `\`) + " " + lines[i+1]
			i++
		}
		if c := strings.Index(cmd, "  #"); c >= 0 {
			cmd = cmd[:c]
		}
		cmds = append(cmds, cmd)
	}
	return cmds
}

// parseCurl reads the method, path and body of a curl command line, with
// shell quoting as the README uses it.
func parseCurl(cmd string) (method, path, body string, err error) {
	args, err := shellWords(cmd)
	if err != nil {
		return "", "", "", err
	}
	method = "GET"
	for i := 1; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-X" && i+1 < len(args):
			method, i = args[i+1], i+1
		case a == "-d" && i+1 < len(args):
			body, i = args[i+1], i+1
		case a == "-H" && i+1 < len(args):
			i++
		case strings.HasPrefix(a, "http://localhost:8080"):
			path = strings.TrimPrefix(a, "http://localhost:8080")
		}
	}
	if path == "" {
		return "", "", "", fmt.Errorf("no URL")
	}
	return method, path, body, nil
}

func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case '\'', '"':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unclosed %c", c)
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
