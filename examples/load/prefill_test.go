package main

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlstore"
)

// The prefilled payouts leave no hand-off for the started server to do:
// handOffAll hands off every one, so a run measures its own requests.
func TestHandOffAllLeavesNoBacklog(t *testing.T) {
	ctx := t.Context()
	store, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "prefill.db"), sqlstore.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	engine, err := payoutkit.New(store, &payoutkit.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	nw, err := engine.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Prefill"})
	if err != nil {
		t.Fatal(err)
	}
	ws := nw.Workspace.ID
	if _, _, err := engine.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "fund", Amount: "100.00"}); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.MarkOrderPaid(ctx, ws, "fund"); err != nil {
		t.Fatal(err)
	}
	const n = 1500 // more than one claim's worth
	for i := range n {
		if _, _, err := engine.CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{PayoutID: fmt.Sprintf("p-%d", i),
			Amount: "0.01", Asset: "USDT", Network: "TRON", Address: payoutAddress, PayerID: "payer"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := handOffAll(ctx, store, t.Logf); err != nil {
		t.Fatal(err)
	}
	// A claim far in the future finds every lease lapsed: only a payout
	// never handed off would be claimed.
	later := time.Now().Add(2 * time.Hour)
	left, err := store.ClaimPayoutHandoffs(ctx, "check", later, later.Add(time.Minute), n)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("%d of %d payouts still wait for their hand-off", len(left), n)
	}
}
