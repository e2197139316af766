package sqltest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/payoutkit/payoutkit"
)

// DB is what a test needs of one package's store beyond payoutkit.Store:
// opening a database at an older schema version, running a raw statement
// on it and encoding a time the way the dialect stores it.
type DB[S payoutkit.Store] struct {
	// Open opens dsn, migrating it to the latest schema.
	Open func(ctx context.Context, dsn string) (S, error)
	// OpenAtVersion opens dsn migrated only up to version.
	OpenAtVersion func(ctx context.Context, dsn string, version int) (S, error)
	// Exec runs query on s's writer.
	Exec func(ctx context.Context, s S, query string, args ...any) error
	// TS encodes t as s's dialect stores a timestamp.
	TS func(s S, t time.Time) any
}

// older opens dsn migrated only up to version, as an older binary left it,
// with exec to write its rows.
func older[S payoutkit.Store](t *testing.T, dsn string, db DB[S], version int) (S, func(query string, args ...any)) {
	t.Helper()
	old, err := db.OpenAtVersion(t.Context(), dsn, version)
	if err != nil {
		t.Fatal(err)
	}
	return old, func(query string, args ...any) {
		t.Helper()
		if err := db.Exec(t.Context(), old, query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
}

// upgraded closes old and opens dsn migrated to the latest schema, closed
// at the test's end.
func upgraded[S payoutkit.Store](t *testing.T, dsn string, db DB[S], old S) S {
	t.Helper()
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := db.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// MigrationBackfill checks that migration 0002 fills customers from the
// rows an older binary wrote at dsn: the totals it computes are the ones
// the audit recomputes, customers are numbered in order of their first
// movement, and the money paths carry on from there.
func MigrationBackfill[S payoutkit.Store](t *testing.T, dsn string, db DB[S]) {
	ctx := t.Context()
	old, exec := older(t, dsn, db, 1)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(minutes int) time.Time { return base.Add(time.Duration(minutes) * time.Minute) }
	ledger := func(ws, kind string, amount int64, ref string, when time.Time) {
		t.Helper()
		exec(`INSERT INTO ledger_entries (workspace_id, kind, amount, ref, event_id, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			ws, kind, amount, ref, "evt_"+ref, db.TS(old, when))
	}
	// The rows as the 0001 schema's store wrote them, balances included.
	balance := map[string][2]int64{} // available, in progress
	payout := func(ws, id, payer, status string, amount int64, minute int) {
		t.Helper()
		when := db.TS(old, at(minute))
		exec(`INSERT INTO payouts (workspace_id, payout_id, status, amount, asset, network, address, payer_id, created_at, updated_at)
			VALUES ($1, $2, $3, $4, 'USDT', 'TRON', 'T...', $5, $6, $6)`, ws, id, status, amount, payer, when)
		ledger(ws, "payout_debit", -amount, id, at(minute))
		b := balance[ws]
		switch status {
		case "submitted":
			b[0], b[1] = b[0]-amount, b[1]+amount
		case "completed":
			b[0] -= amount
		case "failed":
			ledger(ws, "payout_refund", amount, id, at(minute))
		}
		balance[ws] = b
	}
	order := func(ws, id, payer string, paid bool, amount int64, minute int) {
		t.Helper()
		status, paidAt := "pending", any(nil)
		if paid {
			status, paidAt = "paid", db.TS(old, at(minute))
			ledger(ws, "order_credit", amount, id, at(minute))
			b := balance[ws]
			b[0] += amount
			balance[ws] = b
		}
		exec(`INSERT INTO orders (workspace_id, order_id, status, amount, payer_id, created_at, updated_at, paid_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6, $7)`, ws, id, status, amount, payer, db.TS(old, at(minute-1)), paidAt)
	}
	for _, ws := range []string{"ws_one", "ws_two"} {
		exec(`INSERT INTO workspaces (id, name, webhook_secret, created_at) VALUES ($1, 'Old', 'secret', $2)`, ws, db.TS(old, base))
	}
	order("ws_two", "x-1", "alice", true, 50_00, 1) // another workspace's alice, seen before everyone
	payout("ws_two", "y-1", "alice", "submitted", 1_00, 2)
	order("ws_one", "o-1", "alice", true, 100_00, 10)
	payout("ws_one", "p-1", "alice", "submitted", 10_00, 11)
	payout("ws_one", "p-3", "bob", "failed", 3_00, 12) // bob's only payout failed: he is a customer at zero
	order("ws_one", "o-4", "bob", true, 20_00, 13)
	payout("ws_one", "p-2", "alice", "completed", 5_00, 14)
	payout("ws_one", "p-5", "carol", "completed", 2_00, 15)
	order("ws_one", "o-2", "", true, 50_00, 16)     // no payer: no customer
	order("ws_one", "o-3", "dave", false, 7_00, 17) // unpaid: not yet a customer
	payout("ws_one", "p-6", "bob", "submitted", 4_00, 18)
	for ws, b := range balance {
		exec(`INSERT INTO balances (workspace_id, available, in_progress) VALUES ($1, $2, $3)`, ws, b[0], b[1])
	}

	s := upgraded(t, dsn, db, old)
	// Migration 0012 fills the day counters from the payouts.
	day := base.Truncate(24 * time.Hour)
	for ws, want := range map[string][]payoutkit.DayCount{
		"ws_one": {{Day: day, Completed: 2, Failed: 1, InProgress: 2}},
		"ws_two": {{Day: day, InProgress: 1}},
	} {
		got, err := s.PayoutsPerDay(ctx, ws, day, day.AddDate(0, 0, 1))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: day counters after the backfill (-want +got):\n%s", ws, diff)
		}
	}
	audit := func(ws string) {
		t.Helper()
		a, err := s.Audit(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
	}
	customers := func(ws string) []string {
		t.Helper()
		var out []string
		req := payoutkit.PageRequest{Limit: 2}
		for {
			page, err := s.Customers(ctx, ws, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range page.Items {
				out = append(out, fmt.Sprintf("%s in %s out %s progress %s since %s",
					c.PayerID, c.PaidIn, c.PaidOut, c.InProgress, c.FirstSeenAt.Format("15:04")))
			}
			if page.Next == "" {
				return out
			}
			req.Cursor = page.Next
		}
	}
	audit("ws_one")
	audit("ws_two")
	want := []string{ // newest first by the first movement
		"carol in 0.00 out 2.00 progress 0.00 since 03:19",
		"bob in 20.00 out 0.00 progress 4.00 since 03:16",
		"alice in 100.00 out 5.00 progress 10.00 since 03:14",
	}
	if diff := cmp.Diff(want, customers("ws_one")); diff != "" {
		t.Fatalf("backfilled customers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"alice in 50.00 out 0.00 progress 1.00 since 03:05"}, customers("ws_two")); diff != "" {
		t.Fatalf("the other workspace's customers (-want +got):\n%s", diff)
	}

	// The money paths carry on from the backfilled totals.
	eng := newEngine(t, s)
	if _, err := eng.CompletePayout(ctx, "ws_one", "p-6", payoutkit.Completion{TxID: "tx-6"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.FailPayout(ctx, "ws_one", "p-1", "bounced"); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.MarkOrderPaid(ctx, "ws_one", "o-3"); err != nil {
		t.Fatal(err)
	}
	req := payoutRequest("p-7", "1.50")
	req.PayerID = "bob"
	if _, _, err := eng.CreatePayout(ctx, "ws_one", req); err != nil {
		t.Fatal(err)
	}
	audit("ws_one")
	got := customers("ws_one")
	if len(got) != 4 || got[0][:len("dave in 7.00 out 0.00 progress 0.00")] != "dave in 7.00 out 0.00 progress 0.00" ||
		got[2] != "bob in 20.00 out 4.00 progress 1.50 since 03:16" || got[3] != "alice in 100.00 out 5.00 progress 0.00 since 03:14" {
		t.Fatalf("customers after new movements = %q", got)
	}
}

// MigrationWindow checks that migration 0014 gives a workspace with a
// daily limit, written by an older binary at dsn, its 24-hour window from
// its payouts: those of the last 24 hours that have not failed count, the
// rest do not, and the limit then holds to the cent.
func MigrationWindow[S payoutkit.Store](t *testing.T, dsn string, db DB[S]) {
	ctx := t.Context()
	old, exec := older(t, dsn, db, 13)
	now := time.Now().UTC()
	exec(`INSERT INTO workspaces (id, name, webhook_secret, created_at) VALUES ('ws_w', 'Old', 'secret', $1)`, db.TS(old, now.Add(-72*time.Hour)))
	payout := func(id, status string, amount int64, ago time.Duration) {
		t.Helper()
		when := db.TS(old, now.Add(-ago))
		exec(`INSERT INTO payouts (workspace_id, payout_id, status, amount, asset, network, address, payer_id, created_at, updated_at)
			VALUES ('ws_w', $1, $2, $3, 'USDT', 'TRON', 'T...', 'alice', $4, $4)`, id, status, amount, when)
	}
	payout("p-old", "completed", 500_00, 30*time.Hour) // out of the window
	payout("p-1", "submitted", 40_00, 2*time.Hour)
	payout("p-2", "failed", 25_00, time.Hour) // failed: freed
	payout("p-3", "completed", 10_00, 30*time.Minute)
	exec(`INSERT INTO balances (workspace_id, available, in_progress, controls) VALUES ('ws_w', 100000, 4000, $1)`, true)
	exec(`INSERT INTO payout_policies (workspace_id, max_payout, daily_limit, approval_over, address_allowlist, cooling_off, spend_hour, spend_pos, spend_expired)
		VALUES ('ws_w', NULL, 10000, NULL, $1, 0, 0, NULL, 0)`, false)

	eng, err := payoutkit.New(upgraded(t, dsn, db, old), nil)
	if err != nil {
		t.Fatal(err)
	}
	req := payoutkit.CreatePayoutRequest{PayoutID: "p-new", Amount: "50.01", Asset: "USDT", Network: "TRON",
		Address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", PayerID: "alice"}
	_, _, err = eng.CreatePayout(ctx, "ws_w", req)
	if want := "amount exceeds the 24-hour payout limit of 100.00 (50.00 left)"; err == nil || err.Error() != want {
		t.Fatalf("payout of 50.01 after the migration: %v; want %q", err, want)
	}
	req.Amount = "50.00"
	if _, _, err := eng.CreatePayout(ctx, "ws_w", req); err != nil {
		t.Fatalf("payout of 50.00 after the migration: %v", err)
	}
}
