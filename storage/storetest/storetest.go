// Package storetest is the conformance suite for payoutkit.Store
// implementations. A store's test calls Run with a constructor; the suite
// drives the store through a real payoutkit.Engine (and directly where the
// engine cannot reach), checking every behaviour and money invariant the
// engine relies on, including under concurrency.
package storetest

import (
	"context"
	"errors"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
)

// Open returns a new, empty store for one test. The suite closes it.
type Open func(t *testing.T) payoutkit.Store

// Run runs the whole suite. Each test gets its own store from open.
func Run(t *testing.T, open Open) {
	t.Run("Keys", func(t *testing.T) { testKeys(t, open) })
	t.Run("KeyControls", func(t *testing.T) { testKeyControls(t, open) })
	t.Run("Workspaces", func(t *testing.T) { testWorkspaces(t, open) })
	t.Run("Payouts", func(t *testing.T) { testPayouts(t, open) })
	t.Run("Orders", func(t *testing.T) { testOrders(t, open) })
	t.Run("Ledger", func(t *testing.T) { testLedger(t, open) })
	t.Run("Races", func(t *testing.T) { testRaces(t, open) })
	t.Run("Listing", func(t *testing.T) { testListing(t, open) })
	t.Run("Outbox", func(t *testing.T) { testOutbox(t, open) })
	t.Run("Work", func(t *testing.T) { testWork(t, open) })
	t.Run("Prune", func(t *testing.T) { testPrune(t, open) })
	t.Run("Health", func(t *testing.T) { testHealth(t, open) })
	t.Run("HealthNotSent", func(t *testing.T) { testHealthNotSent(t, open) })
	t.Run("Handoffs", func(t *testing.T) { testHandoffs(t, open) })
	t.Run("HandoffsOldestFirst", func(t *testing.T) { testHandoffsOldestFirst(t, open) })
	t.Run("CreateLeased", func(t *testing.T) { testCreateLeased(t, open) })
	t.Run("Filters", func(t *testing.T) { testFilters(t, open) })
	t.Run("Customers", func(t *testing.T) { testCustomers(t, open) })
	t.Run("Lists", func(t *testing.T) { testLists(t, open) })
	t.Run("Settlement", func(t *testing.T) { testSettlement(t, open) })
	t.Run("Controls", func(t *testing.T) { testControls(t, open) })
	t.Run("PayoutsPerDay", func(t *testing.T) { testPayoutsPerDay(t, open) })
	t.Run("PayoutDayCounters", func(t *testing.T) { testPayoutDayCounters(t, open) })
	t.Run("Batches", func(t *testing.T) { testBatches(t, open) })
}

// env is one test's engine over a fresh store.
type env struct {
	t     *testing.T
	ctx   context.Context
	store payoutkit.Store
	eng   *payoutkit.Engine
}

func newEnv(t *testing.T, open Open) *env {
	t.Helper()
	store := open(t)
	t.Cleanup(func() { store.Close() })
	eng, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost})
	if err != nil {
		t.Fatalf("payoutkit.New: %v", err)
	}
	return &env{t: t, ctx: t.Context(), store: store, eng: eng}
}

// workspace creates a workspace with a webhook URL and returns it with its
// first API key.
func (e *env) workspace() payoutkit.NewWorkspace {
	e.t.Helper()
	nw, err := e.eng.CreateWorkspace(e.ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme", WebhookURL: "https://hooks.example/payoutkit"})
	if err != nil {
		e.t.Fatalf("CreateWorkspace: %v", err)
	}
	return nw
}

// fund credits amount to the workspace through a paid order.
func (e *env) fund(wsID, amount string) payoutkit.Order {
	e.t.Helper()
	id := "fund-" + amount + "-" + randomSuffix()
	if _, _, err := e.eng.CreateOrder(e.ctx, wsID, payoutkit.CreateOrderRequest{OrderID: id, Amount: amount}); err != nil {
		e.t.Fatalf("CreateOrder: %v", err)
	}
	o, err := e.eng.MarkOrderPaid(e.ctx, wsID, id)
	if err != nil {
		e.t.Fatalf("MarkOrderPaid: %v", err)
	}
	return o
}

// payout creates a USDT on TRON payout with the given id and amount.
func (e *env) payout(wsID, id, amount string) (payoutkit.Payout, bool, error) {
	return e.eng.CreatePayout(e.ctx, wsID, payoutRequest(id, amount))
}

// TronAddress is a valid TRON address (the USDT contract) used by payout requests.
const TronAddress = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"

func payoutRequest(id, amount string) payoutkit.CreatePayoutRequest {
	return payoutkit.CreatePayoutRequest{
		PayoutID: id, Amount: amount, Asset: "USDT", Network: "TRON", Address: TronAddress, PayerID: "cust-1",
	}
}

func (e *env) balance(wsID string) payoutkit.Balance {
	e.t.Helper()
	b, err := e.eng.Balance(e.ctx, wsID)
	if err != nil {
		e.t.Fatalf("Balance: %v", err)
	}
	return b
}

// wantBalance checks available and in-progress, then the audit invariants.
func (e *env) wantBalance(wsID, available, inProgress string) {
	e.t.Helper()
	b := e.balance(wsID)
	if b.Available.String() != available || b.InProgress.String() != inProgress {
		e.t.Errorf("balance = available %s, in_progress %s; want %s, %s", b.Available, b.InProgress, available, inProgress)
	}
	e.audit(wsID)
}

// audit fails the test when the workspace's money invariants are broken.
func (e *env) audit(wsID string) payoutkit.Audit {
	e.t.Helper()
	a, err := e.store.Audit(e.ctx, wsID)
	if err != nil {
		e.t.Fatalf("Audit: %v", err)
	}
	if err := a.Check(); err != nil {
		e.t.Error(err)
	}
	return a
}

// wantErr fails unless err matches target with errors.Is.
func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v; want %v", err, target)
	}
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
