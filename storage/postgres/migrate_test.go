package postgres_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqltest"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// Migration 0002 fills customers from the rows an older binary wrote: the
// totals it computes are the ones the audit recomputes, customers are
// numbered in order of their first movement, and the money paths carry on
// from there.
func TestMigrationBackfillsCustomers(t *testing.T) {
	t.Run("Postgres", func(t *testing.T) {
		testBackfill(t, pgtest.Postgres(t))
	})
}

// db is what sqltest's shared tests need of this package beyond its Store.
var db = sqltest.DB[*postgres.Store]{
	Open:          func(ctx context.Context, dsn string) (*postgres.Store, error) { return postgres.Open(ctx, dsn) },
	OpenAtVersion: postgres.OpenAtVersion,
	Exec:          postgres.Exec,
	TS:            postgres.TS,
}

func testBackfill(t *testing.T, dsn string) { sqltest.MigrationBackfill(t, dsn, db) }

// Migration 0014 gives a workspace with a daily limit its 24-hour window.
func TestMigrationFillsWindow(t *testing.T) {
	sqltest.MigrationWindow(t, pgtest.Postgres(t), db)
}

// Migration 0016 queues the hand-offs an older binary left waiting: a
// submitted payout not yet handed off is claimed after it, one handed off
// or settled is not, and the record takes the payout out of the queue.
func TestMigrationQueuesHandoffs(t *testing.T) {
	ctx := t.Context()
	dsn := pgtest.Postgres(t)
	old, err := postgres.OpenAtVersion(ctx, dsn, 15)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(query string, args ...any) {
		t.Helper()
		if err := postgres.Exec(ctx, old, query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	exec(`INSERT INTO workspaces (id, name, webhook_secret, created_at) VALUES ('ws_h', 'Old', 'secret', now())`)
	exec(`INSERT INTO balances (workspace_id, available, in_progress) VALUES ('ws_h', 0, 200)`)
	for _, p := range []struct{ id, status, handedOff string }{
		{"p-due", "submitted", "NULL"},
		{"p-sent", "submitted", "now()"},
		{"p-settled", "completed", "NULL"},
		{"p-later", "submitted", "NULL"},
	} {
		exec(`INSERT INTO payouts (workspace_id, payout_id, status, amount, asset, network, address, payer_id, created_at, updated_at, handed_off_at)
			VALUES ('ws_h', $1, $2, 100, 'USDT', 'TRON', 'T...', 'alice', now(), now(), `+p.handedOff+`)`, p.id, p.status)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	queued := func(want int) {
		t.Helper()
		if err := postgres.Exec(ctx, s, `DO $$ BEGIN
			IF (SELECT count(*) FROM payout_handoffs) <> `+strconv.Itoa(want)+` THEN RAISE EXCEPTION 'queue length'; END IF;
		END $$`); err != nil {
			t.Fatalf("want %d queued hand-offs: %v", want, err)
		}
	}
	queued(2) // p-due and p-later

	// A payout settled before its hand-off leaves the queue with its move.
	now := time.Now()
	later := payoutkit.Payout{WorkspaceID: "ws_h", PayoutID: "p-later", Status: payoutkit.PayoutCompleted, TxID: "0xabc", UpdatedAt: now}
	ev := payoutkit.Event{ID: "evt_later", WorkspaceID: "ws_h", Type: payoutkit.EventPayoutCompleted, Subject: "payout:p-later",
		CreatedAt: now, Body: []byte(`{}`), EventDelivery: payoutkit.EventDelivery{State: payoutkit.DeliveryPending, NextAttemptAt: now}}
	if err := s.SettlePayout(ctx, later, ev); err != nil {
		t.Fatal(err)
	}
	queued(1)

	claimed, err := s.ClaimPayoutHandoffs(ctx, "owner", now, now.Add(time.Minute), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 1 || claimed[0].PayoutID != "p-due" {
		t.Fatalf("claimed %v after the migration; want p-due alone", claimed)
	}
	if err := s.MarkPayoutHandedOff(ctx, claimed[0], now); err != nil {
		t.Fatal(err)
	}
	// The record holds once more for its holder, and the payout has left
	// the queue: a claim after its lease finds nothing.
	if err := s.MarkPayoutHandedOff(ctx, claimed[0], now); err != nil {
		t.Fatalf("the holder's second record: %v", err)
	}
	if again, err := s.ClaimPayoutHandoffs(ctx, "other", now.Add(time.Hour), now.Add(2*time.Hour), 10); err != nil || len(again) != 0 {
		t.Fatalf("claimed %v, %v after the record; want nothing", again, err)
	}
	queued(0)
}
