// Package sqltest holds the tests that storage/sqlite and storage/postgres
// run alike, each on a store of its own, so that one body checks both
// databases. It is internal: the tests are not public API.
package sqltest

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

// RoundTrip checks that values come back from s exactly as written:
// times in UTC at microsecond precision, zero times as zero, bytes as bytes.
func RoundTrip(t *testing.T, s payoutkit.Store) {
	ctx := t.Context()
	eng := newEngine(t, s)
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Round trip", WebhookURL: "https://hooks.example/payoutkit"})
	if err != nil {
		t.Fatal(err)
	}
	ws := nw.Workspace.ID
	fund(t, eng, ws, "fund", "10.00")

	at := time.Date(2026, 11, 22, 10, 0, 0, 123456000, time.FixedZone("X", 3600)) // not UTC, whole µs
	p := payoutkit.Payout{
		WorkspaceID: ws, PayoutID: "po-rt", Status: payoutkit.PayoutSubmitted, Amount: 123,
		Asset: "USDT", Network: "TRON", Address: "T...", PayerID: "payer é ✓", CreatedAt: at, UpdatedAt: at.Add(time.Microsecond),
	}
	body := make([]byte, 256)
	for i := range body {
		body[i] = byte(i) // NUL, invalid UTF-8: all of it must survive
	}
	ev := payoutkit.Event{
		ID: "evt_roundtrip000000000000", WorkspaceID: ws, Type: payoutkit.EventPayoutSubmitted, Subject: "payout:po-rt",
		CreatedAt: at, Body: body, EventDelivery: payoutkit.EventDelivery{State: payoutkit.DeliveryPending, NextAttemptAt: at},
	}
	stored, created, err := s.CreatePayout(ctx, p, ev, payoutkit.Lease{})
	if err != nil || !created {
		t.Fatalf("CreatePayout = %v, %v", created, err)
	}
	got, err := s.Payout(ctx, ws, "po-rt")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stored, got); diff != "" {
		t.Fatalf("stored payout differs (-written +read):\n%s", diff)
	}
	if got.CreatedAt.Location() != time.UTC || !got.CreatedAt.Equal(at) {
		t.Errorf("created_at %v; want %v in UTC", got.CreatedAt, at)
	}
	gotEv, err := s.Event(ctx, ws, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotEv.Body, body) || !gotEv.NextAttemptAt.Equal(at) || gotEv.NextAttemptAt.Location() != time.UTC {
		t.Errorf("event read back as %+v", gotEv)
	}
	// Nanoseconds are cut to microseconds, the engine's precision.
	key, err := s.APIKey(ctx, nw.APIKey.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	if !key.RevokedAt.IsZero() || !key.LastUsedAt.IsZero() {
		t.Errorf("unset times read back as %v, %v", key.RevokedAt, key.LastUsedAt)
	}
	if err := s.TouchAPIKey(ctx, key.Prefix, at.Add(999)); err != nil {
		t.Fatal(err)
	}
	if key, _ = s.APIKey(ctx, key.Prefix); !key.LastUsedAt.Equal(at) {
		t.Errorf("last used %v; want %v", key.LastUsedAt, at)
	}
}

// StoreEdges checks what storetest does not reach through the engine:
// unknown workspaces, bad cursors, empty claims and junk receiver bytes.
func StoreEdges(t *testing.T, s payoutkit.Store) {
	ctx := t.Context()
	eng := newEngine(t, s)
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Edges", WebhookURL: "https://hooks.example/payoutkit"})
	if err != nil {
		t.Fatal(err)
	}
	ws := nw.Workspace.ID
	fund(t, eng, ws, "fund", "10.00")
	now := time.Now().UTC().Truncate(time.Microsecond)

	// Rows of an unknown workspace are not found, not internal errors.
	ev := payoutkit.Event{ID: "evt_x", Type: payoutkit.EventPayoutSubmitted, Subject: "payout:p", CreatedAt: now, Body: []byte("{}"),
		EventDelivery: payoutkit.EventDelivery{State: payoutkit.DeliveryPending, NextAttemptAt: now}}
	_, _, err = s.CreatePayout(ctx, payoutkit.Payout{WorkspaceID: "ws_missing", PayoutID: "p", Status: payoutkit.PayoutSubmitted,
		Amount: 1, CreatedAt: now, UpdatedAt: now}, ev, payoutkit.Lease{})
	wantIs(t, err, payoutkit.ErrNotFound)
	_, _, err = s.CreateOrder(ctx, payoutkit.Order{WorkspaceID: "ws_missing", OrderID: "o", Status: payoutkit.OrderPending,
		Amount: 1, CreatedAt: now, UpdatedAt: now})
	wantIs(t, err, payoutkit.ErrNotFound)
	missingLog := payoutkit.SecurityLogEntry{WorkspaceID: "ws_missing", At: now, Action: payoutkit.ActionKeyCreated, Actor: "cli"}
	_, err = s.InsertAPIKey(ctx, payoutkit.APIKey{Prefix: "ZZZZZZZZ", WorkspaceID: "ws_missing", CreatedAt: now}, false, missingLog)
	wantIs(t, err, payoutkit.ErrNotFound)
	wantIs(t, s.SetWebhook(ctx, "ws_missing", "", "", missingLog), payoutkit.ErrNotFound)
	wantIs(t, s.MarkPayoutHandedOff(ctx, payoutkit.PayoutLease{Payout: payoutkit.Payout{WorkspaceID: ws, PayoutID: "missing"}, Owner: "A", Token: 1}, now), payoutkit.ErrNotFound)
	_, err = s.Payouts(ctx, "ws_missing", payoutkit.PayoutFilter{}, payoutkit.PageRequest{})
	wantIs(t, err, payoutkit.ErrNotFound)
	_, err = s.Audit(ctx, "ws_missing")
	wantIs(t, err, payoutkit.ErrNotFound)
	if n, err := s.RevokeAPIKeys(ctx, "ws_missing", "", now, missingLog); n != 0 || err != nil {
		t.Errorf("RevokeAPIKeys(missing) = %d, %v", n, err)
	}

	// Cursors are the decimal seqs the store hands out, nothing else.
	for _, c := range []string{"x", "-1", "+5", "1e3", " 5", "0", "99999999999999999999"} {
		_, err := s.Ledger(ctx, ws, payoutkit.PageRequest{Cursor: c})
		wantIs(t, err, payoutkit.ErrInvalidInput)
	}

	// A settlement must settle.
	if _, _, err := eng.CreatePayout(ctx, ws, payoutRequest("po-1", "1.00")); err != nil {
		t.Fatal(err)
	}
	p, _ := s.Payout(ctx, ws, "po-1")
	wantIs(t, s.SettlePayout(ctx, p, ev), payoutkit.ErrInvalidInput)

	// Claims of nothing claim nothing; resending a pending event is a no-op.
	if evs, err := s.ClaimEvents(ctx, "A", now, now, 0, nil); len(evs) != 0 || err != nil {
		t.Errorf("ClaimEvents(limit 0) = %v, %v", evs, err)
	}
	if ps, err := s.ClaimPayoutHandoffs(ctx, "A", now, now, 0); len(ps) != 0 || err != nil {
		t.Errorf("ClaimPayoutHandoffs(limit 0) = %v, %v", ps, err)
	}
	page, err := s.Events(ctx, ws, payoutkit.PageRequest{Limit: 1})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("Events = %+v, %v", page, err)
	}
	last := page.Items[0]
	if err := s.ResendEvent(ctx, ws, last.ID, now); err != nil {
		t.Errorf("resending a pending event: %v", err)
	}
	wantIs(t, s.ResendEvent(ctx, nw.Workspace.ID+"x", last.ID, now), payoutkit.ErrNotFound)
	_, err = s.DeliveryAttempts(ctx, ws, "evt_missing")
	wantIs(t, err, payoutkit.ErrNotFound)
	wantIs(t, s.RecordAttempt(ctx, "A", payoutkit.DeliveryAttempt{EventID: "evt_missing", At: now},
		payoutkit.EventDelivery{State: payoutkit.DeliveryDelivered}), payoutkit.ErrNotFound)

	// A receiver's answer is recorded whatever bytes it holds.
	later := now.Add(time.Hour)
	evs, err := s.ClaimEvents(ctx, "A", later, later.Add(time.Minute), 10, nil)
	if err != nil || len(evs) == 0 {
		t.Fatalf("ClaimEvents = %v, %v", evs, err)
	}
	junk := "bad \xff\xfe bytes \x00 and NUL"
	if err := s.RecordAttempt(ctx, "A",
		payoutkit.DeliveryAttempt{EventID: evs[0].ID, Attempt: 1, At: later, StatusCode: 502, Error: junk, ResponseHead: junk},
		payoutkit.EventDelivery{State: payoutkit.DeliveryPending, Attempts: 1, NextAttemptAt: later.Add(time.Minute), LastError: junk}); err != nil {
		t.Fatalf("recording an attempt with junk bytes: %v", err)
	}
	attempts, err := s.DeliveryAttempts(ctx, ws, evs[0].ID)
	if err != nil || len(attempts) != 1 || !strings.HasPrefix(attempts[0].ResponseHead, "bad ") {
		t.Fatalf("attempts = %+v, %v", attempts, err)
	}
}

// newEngine returns an engine over s with the cheapest password cost.
func newEngine(t testing.TB, s payoutkit.Store) *payoutkit.Engine {
	t.Helper()
	eng, err := payoutkit.New(s, &payoutkit.Config{PasswordCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// fund credits ws with a paid order of amount.
func fund(t testing.TB, eng *payoutkit.Engine, ws, id, amount string) {
	t.Helper()
	if _, _, err := eng.CreateOrder(t.Context(), ws, payoutkit.CreateOrderRequest{OrderID: id, Amount: amount}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.MarkOrderPaid(t.Context(), ws, id); err != nil {
		t.Fatal(err)
	}
}

// payoutRequest is a valid payout of amount to a TRON address.
func payoutRequest(id, amount string) payoutkit.CreatePayoutRequest {
	return payoutkit.CreatePayoutRequest{
		PayoutID: id, Amount: amount, Asset: "USDT", Network: "TRON", Address: storetest.TronAddress, PayerID: "cust-1",
	}
}

func wantIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("err = %v; want %v", err, target)
	}
}
