package payoutkit_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/processor/sandbox"
)

// TestObservePayout checks that ObservePayout hears of each payout created
// and settled, once, and of nothing refused or replayed.
func TestObservePayout(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	eng := newEngine(t, &payoutkit.Config{ObservePayout: func(p payoutkit.Payout) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, p.PayoutID+" "+string(p.Status))
	}})
	ctx := context.Background()
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Observed"})
	if err != nil {
		t.Fatal(err)
	}
	ws := nw.Workspace.ID
	fund(t, eng, ws, "30.00")
	create := func(id, amount string) error {
		_, _, err := eng.CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{
			PayoutID: id, Amount: amount, Asset: "USDT", Network: "TRON",
			Address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", PayerID: "cust-1",
		})
		return err
	}
	for _, id := range []string{"po-1", "po-1", "po-2", "po-3"} { // po-1 twice: a replay
		if err := create(id, "10.00"); err != nil {
			t.Fatal(err)
		}
	}
	if err := create("po-4", "10.00"); !errors.Is(err, payoutkit.ErrInsufficientBalance) {
		t.Fatalf("overdraft: %v", err)
	}
	if _, err := eng.CompletePayout(ctx, ws, "po-1", payoutkit.Completion{TxID: "tx-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.FailPayout(ctx, ws, "po-2", "rejected"); err != nil {
		t.Fatal(err)
	}
	if _, err := sandbox.Complete(ctx, eng, ws, "po-3", "tx-3"); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.FailPayout(ctx, ws, "po-1", ""); !errors.Is(err, payoutkit.ErrConflict) { // settled already
		t.Fatalf("settling twice: %v", err)
	}
	want := []string{"po-1 submitted", "po-2 submitted", "po-3 submitted", "po-1 completed", "po-2 failed", "po-3 completed"}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, want) {
		t.Fatalf("observed %q; want %q", seen, want)
	}
}
