package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const batchCSVHeader = "payout_id,amount,asset,network,address,payer_id"

func batchCSVLine(id, amount, payer string) string {
	return id + "," + amount + ",USDT,TRON,TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t," + payer
}

// payouts batch creates a batch from a CSV file and prints it; the same
// file again replays it (its batch_id comes from the file's SHA-256), and
// a bad file creates nothing and says why.
func TestPayoutsBatchCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "payoutkit.db")
	s := startServer(t, "-db", db)
	first := decodeObject(t, s.stdout.String())
	ws, key := first["workspace_id"].(string), first["api_key"].(string)
	for _, c := range []struct{ path, body string }{
		{"/v1/orders", `{"order_id":"fund","amount":"100.00"}`},
		{"/v1/sandbox/orders/pay", `{"order_id":"fund"}`},
	} {
		if _, env := call(t, "POST", s.url+c.path, key, c.body); code(env) != 0 {
			t.Fatalf("%s: %v", c.path, env)
		}
	}
	available := func() string {
		t.Helper()
		_, env := call(t, "GET", s.url+"/v1/balance", key, "")
		return env["data"].(map[string]any)["available"].(string)
	}
	write := func(name string, lines ...string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\r\n")+"\r\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	// A spreadsheet's export: a byte order mark, CRLF, quoted commas.
	file := write("payouts.csv", "\uFEFF"+batchCSVHeader,
		batchCSVLine("po-1", "10.00", "alice"), batchCSVLine("po-2", "20.00", `"Smith, John"`), batchCSVLine("po-3", "500.00", "carol"))
	out := mustCommand(t, "payouts", "batch", "-db", db, "-workspace", ws, "-file", file)
	b := decodeObject(t, out)
	id, _ := b["batch_id"].(string)
	if !strings.HasPrefix(id, "csv-") || b["accepted"] != 2.0 || b["refused"] != 1.0 || b["accepted_amount"] != "30.00" || b["all_or_nothing"] != false {
		t.Fatalf("payouts batch printed %s", out)
	}
	results := b["results"].([]any)
	codes := []float64{}
	for _, r := range results {
		codes = append(codes, r.(map[string]any)["code"].(float64))
	}
	if len(codes) != 3 || codes[0] != 0 || codes[1] != 0 || codes[2] != 40000 {
		t.Fatalf("result codes %v; want [0 0 40000]", codes)
	}
	if got := results[1].(map[string]any)["payout"].(map[string]any)["payer_id"]; got != "Smith, John" {
		t.Fatalf("po-2's payer_id %v", got)
	}
	if got := available(); got != "70.00" {
		t.Fatalf("available %s; want 70.00", got)
	}

	// The same file again: the same batch, nothing paid twice.
	out2, errOut, exit := runProgram(t, "payouts", "batch", "-db", db, "-workspace", ws, "-file", file)
	if exit != 0 || decodeObject(t, out2)["batch_id"] != id || !strings.Contains(errOut, "nothing was paid twice") {
		t.Fatalf("again: exit %d, stdout %q, stderr %q", exit, out2, errOut)
	}
	if got := available(); got != "70.00" {
		t.Fatalf("available %s after a replay; want 70.00", got)
	}

	// All or nothing, under an ID of its own: refused whole.
	_, err := command(t, "payouts", "batch", "-db", db, "-workspace", ws, "-file", file, "-batch-id", "b-2", "-all-or-nothing")
	if err == nil || !strings.Contains(err.Error(), "payouts[2]: Insufficient available balance") {
		t.Fatalf("all or nothing: %v", err)
	}
	// The same ID with another request is a conflict.
	other := write("other.csv", batchCSVHeader, batchCSVLine("po-9", "1.00", "x"))
	if _, err := command(t, "payouts", "batch", "-db", db, "-workspace", ws, "-file", other, "-batch-id", id); err == nil ||
		!strings.Contains(err.Error(), "already used") {
		t.Fatalf("a used batch_id: %v", err)
	}

}

// payouts batch refuses a bad file with a clear message, exit 1 and
// nothing created, and a command line without -workspace or -file with
// exit 2.
func TestPayoutsBatchCommandRefusals(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "payoutkit.db")
	ws := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "Acme"))["workspace_id"].(string)
	write := func(name string, lines ...string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// Bad files.
	var many []string
	for i := range 1001 {
		many = append(many, batchCSVLine(fmt.Sprintf("po-m%d", i), "1.00", "m"))
	}
	for _, c := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"header.csv", []string{"amount,payout_id,asset,network,address,payer_id", batchCSVLine("po-h", "1.00", "h")}, "first line must be the header " + batchCSVHeader},
		{"formula.csv", []string{batchCSVHeader, batchCSVLine("po-f", "1.00", "=HYPERLINK(1)")}, "line 2, payer_id"},
		{"columns.csv", []string{batchCSVHeader, "po-c,1.00,USDT"}, "line 2: This row has 3 columns"},
		{"invalid.csv", []string{batchCSVHeader, "po-i,1.00,USDT,TRON,nope,i"}, "line 2, address: is not a valid TRON address"},
		{"many.csv", append([]string{batchCSVHeader}, many...), "more than 1,000 payouts"},
		{"huge.csv", []string{batchCSVHeader, strings.Repeat("x", 5<<20)}, "larger than 2 MiB"},
	} {
		path := write(c.name, c.lines...)
		out, errOut, exit := runProgram(t, "payouts", "batch", "-db", db, "-workspace", ws, "-file", path)
		if exit != 1 || out != "" || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "nothing was created") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.name, exit, out, errOut, c.want)
		}
	}
	file := write("fine.csv", batchCSVHeader, batchCSVLine("po-1", "1.00", "a"))

	// Usage mistakes.
	for _, args := range [][]string{
		{"payouts", "batch", "-db", db, "-workspace", ws},
		{"payouts", "batch", "-db", db, "-file", file},
	} {
		if _, errOut, exit := runProgram(t, args...); exit != 2 || !strings.Contains(errOut, "-workspace and -file are required") {
			t.Errorf("%v: exit %d, stderr %q", args, exit, errOut)
		}
	}
}
