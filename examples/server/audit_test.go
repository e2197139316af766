package main

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// TestAudit: audit reports every workspace's money and the outbox, and exits
// non-zero once a row is changed behind the engine's back.
func TestAudit(t *testing.T) {
	db := filepath.Join(t.TempDir(), "audit.db")
	ws := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "Acme"))["workspace_id"].(string)
	decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "Other"))
	ctx := context.Background()
	payOutOnce(t, db, ws)

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
	if orphans, ok := report["orphans"].([]any); !ok || len(orphans) != 0 {
		t.Fatalf("orphans %v; want none ([])", report["orphans"])
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
	if err := run(ctx, []string{"audit", "-db", db}, &stdout, &syncBuffer{}); !errors.Is(err, errAuditFailed) || errors.Is(err, errOrphans) {
		t.Fatalf("audit of a broken balance: %v", err)
	}
	broken := decodeObject(t, stdout.String())
	bw := broken["workspaces"].([]any)[0].(map[string]any)
	if broken["ok"] != false || bw["ok"] != false || bw["error"] == nil || bw["available"] != "8.50" {
		t.Fatalf("audit report of a broken balance %v", broken)
	}
}

// TestAuditOrphans: on SQLite, whose foreign keys refuse orphans, a
// workspace deleted by a connection with the keys off leaves its rows
// behind; audit counts them by kind and fails.
func TestAuditOrphans(t *testing.T) {
	db := filepath.Join(t.TempDir(), "orphans.db")
	ws := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "Acme"))["workspace_id"].(string)
	other := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "Other"))["workspace_id"].(string)
	ctx := context.Background()
	payOutOnce(t, db, ws)
	if report := decodeObject(t, mustCommand(t, "audit", "-db", db)); report["ok"] != true || len(report["orphans"].([]any)) != 0 {
		t.Fatalf("audit before the delete %v", report)
	}

	// The keys refuse the delete; with them off, on that connection alone,
	// it goes through.
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = ON`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `DELETE FROM workspaces WHERE id = ?`, ws); err == nil {
		t.Fatal("SQLite deleted a workspace with rows, its foreign keys on")
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `DELETE FROM workspaces WHERE id = ?`, ws); err != nil {
		t.Fatal(err)
	}

	var stdout syncBuffer
	err = run(ctx, []string{"audit", "-db", db}, &stdout, &syncBuffer{})
	if !errors.Is(err, errOrphans) || errors.Is(err, errAuditFailed) {
		t.Fatalf("audit of a deleted workspace's rows: %v; want errOrphans alone", err)
	}
	report := decodeObject(t, stdout.String())
	wss := report["workspaces"].([]any)
	if report["ok"] != false || len(wss) != 1 || wss[0].(map[string]any)["workspace_id"] != other || wss[0].(map[string]any)["ok"] != true {
		t.Fatalf("audit report %v; want the other workspace's money sound, and ok false", report)
	}
	got := map[string]float64{}
	for _, o := range report["orphans"].([]any) {
		o := o.(map[string]any)
		if o["column"] != "workspace_id" || o["parent"] != "workspaces.id" {
			t.Errorf("orphans %v; want only rows of the deleted workspace", o)
		}
		got[o["table"].(string)] = o["count"].(float64)
	}
	// The workspace's rows: its balance, first staff user and key, the
	// order and the payout with their ledger entries, events, customer
	// and day counter.
	for table, n := range map[string]float64{
		"balances": 1, "staff_users": 1, "api_keys": 1, "orders": 1, "payouts": 1,
		"ledger_entries": 2, "events": 2, "customers": 1, "payout_days": 1,
	} {
		if got[table] != n {
			t.Errorf("%s: %v orphans; want %v (all: %v)", table, got[table], n, got)
		}
	}
}

// TestAuditOrphansPostgres: on PostgreSQL, whose tables every payout writes
// have no foreign key to workspaces, a payout of no workspace and a
// hand-off of no payout are written as they are; audit counts them by kind
// and fails.
func TestAuditOrphansPostgres(t *testing.T) {
	db := pgtest.Postgres(t)
	decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "pg"))
	if report := decodeObject(t, mustCommand(t, "audit", "-db", db)); report["ok"] != true || len(report["orphans"].([]any)) != 0 {
		t.Fatalf("audit of a sound database %v", report)
	}

	ctx := context.Background()
	raw, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, `INSERT INTO payouts (workspace_id, payout_id, status, amount, asset, network, address, payer_id, created_at, updated_at)
		VALUES ('ws_gone', 'po-ghost', 'submitted', 100, 'USDT', 'TRON', 'T...', 'ghost', now(), now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, `INSERT INTO payout_handoffs (seq) SELECT MAX(seq) + 1000 FROM payouts`); err != nil {
		t.Fatal(err)
	}

	var stdout syncBuffer
	err = run(ctx, []string{"audit", "-db", db}, &stdout, &syncBuffer{})
	if !errors.Is(err, errOrphans) || errors.Is(err, errAuditFailed) {
		t.Fatalf("audit of orphans: %v; want errOrphans alone", err)
	}
	report := decodeObject(t, stdout.String())
	want := []any{
		map[string]any{"table": "payouts", "column": "workspace_id", "parent": "workspaces.id", "count": float64(1)},
		map[string]any{"table": "payout_handoffs", "column": "seq", "parent": "payouts.seq", "count": float64(1)},
	}
	if report["ok"] != false || !reflect.DeepEqual(report["orphans"], want) {
		t.Fatalf("audit report %v; want ok false and orphans %v", report, want)
	}
}

// payOutOnce funds the workspace with 10.00 through a paid order of alice
// and pays her 2.50, through an engine over db that it closes again.
func payOutOnce(t *testing.T, db, ws string) {
	t.Helper()
	ctx := t.Context()
	engine, done, err := adminEngine(ctx, db, &syncBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
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
}
