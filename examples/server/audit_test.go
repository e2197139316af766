package main

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/payoutkit/payoutkit"
)

// TestAudit: audit reports every workspace's money and the outbox, and exits
// non-zero once a row is changed behind the engine's back.
func TestAudit(t *testing.T) {
	db := filepath.Join(t.TempDir(), "audit.db")
	ws := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "Acme"))["workspace_id"].(string)
	decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "Other"))
	ctx := context.Background()
	engine, done, err := adminEngine(ctx, db, &syncBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := engine.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "o1", Amount: "10", PayerID: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.MarkOrderPaid(ctx, ws, "o1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := engine.CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{
		PayoutID: "po-1", Amount: "2.50", Asset: "USDT", Network: "TRON", Address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", PayerID: "alice",
	}); err != nil {
		t.Fatal(err)
	}
	done()

	report := decodeObject(t, mustCommand(t, "audit", "-db", db))
	wss := report["workspaces"].([]any)
	first := wss[0].(map[string]any)
	if report["ok"] != true || len(wss) != 2 || first["workspace_id"] != ws || first["available"] != "7.50" ||
		first["in_progress"] != "2.50" || first["ledger_sum"] != "7.50" || first["ok"] != true || first["error"] != nil {
		t.Fatalf("audit report %v", report)
	}
	if outbox := report["outbox"].(map[string]any); outbox["not_sent"] != float64(2) || outbox["failed"] != float64(0) || outbox["pending"] != float64(0) {
		t.Fatalf("outbox %v; want the two events of a workspace without a URL, not sent, and none failed", outbox)
	}

	// Money changed behind the engine's back: the audit says so and fails.
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE balances SET available = available + 100 WHERE workspace_id = ?`, ws); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	// Unlike the other commands, a failed audit prints its report too.
	var stdout syncBuffer
	if err := run(ctx, []string{"audit", "-db", db}, &stdout, &syncBuffer{}); !errors.Is(err, errAuditFailed) {
		t.Fatalf("audit of a broken balance: %v", err)
	}
	broken := decodeObject(t, stdout.String())
	bw := broken["workspaces"].([]any)[0].(map[string]any)
	if broken["ok"] != false || bw["ok"] != false || bw["error"] == nil || bw["available"] != "8.50" {
		t.Fatalf("audit report of a broken balance %v", broken)
	}
}
