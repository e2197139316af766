package main

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// The prefilled payouts leave no hand-off for the started server to do:
// prefill hands off every one, so a run measures its own requests.
func TestPrefillLeavesNoBacklog(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "prefill.db")
	store, err := sqlite.Open(ctx, path, sqlite.WithLogger(slog.New(slog.DiscardHandler)))
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
	const n = 1500 // more than one claim's worth
	if err := prefill(ctx, path, &workspace{ID: nw.Workspace.ID}, n, 1, t.Logf); err != nil {
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
