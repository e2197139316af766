package storetest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/payoutkit/payoutkit"
)

func testOrders(t *testing.T, open Open) {
	t.Run("CreatePayReplay", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		o, replayed, err := e.eng.CreateOrder(e.ctx, ws, payoutkit.CreateOrderRequest{
			OrderID: "ord-1", Amount: "42.5", PayerID: "cust-9", Description: "Two widgets",
		})
		if err != nil || replayed || o.Status != payoutkit.OrderPending || o.Amount != 4250 || !o.PaidAt.IsZero() {
			t.Fatalf("CreateOrder = %+v, %v, %v", o, replayed, err)
		}
		e.wantBalance(ws, "0.00", "0.00")
		again, replayed, err := e.eng.CreateOrder(e.ctx, ws, payoutkit.CreateOrderRequest{
			OrderID: "ord-1", Amount: "42.50", PayerID: "cust-9", Description: "Two widgets",
		})
		if err != nil || !replayed || !cmp.Equal(o, again) {
			t.Fatalf("replay = %+v, %v, %v", again, replayed, err)
		}
		_, _, err = e.eng.CreateOrder(e.ctx, ws, payoutkit.CreateOrderRequest{OrderID: "ord-1", Amount: "42.51"})
		wantErr(t, err, payoutkit.ErrConflict)

		paid := must[payoutkit.Order](t)(e.eng.MarkOrderPaid(e.ctx, ws, "ord-1"))
		if paid.Status != payoutkit.OrderPaid || paid.PaidAt.IsZero() {
			t.Fatalf("paid order %+v", paid)
		}
		e.wantBalance(ws, "42.50", "0.00")
		// Paying again returns the order and credits nothing.
		again = must[payoutkit.Order](t)(e.eng.MarkOrderPaid(e.ctx, ws, "ord-1"))
		if diff := cmp.Diff(paid, again); diff != "" {
			t.Fatalf("second pay changed the order:\n%s", diff)
		}
		e.wantBalance(ws, "42.50", "0.00")
		if diff := cmp.Diff(paid, must[payoutkit.Order](t)(e.eng.Order(e.ctx, ws, "ord-1"))); diff != "" {
			t.Fatalf("stored order differs:\n%s", diff)
		}
	})

	t.Run("Validation", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		for _, req := range []payoutkit.CreateOrderRequest{
			{Amount: "1.00"},
			{OrderID: "o 1", Amount: "1.00"},
			{OrderID: "o1"},
			{OrderID: "o1", Amount: "0"},
			{OrderID: "o1", Amount: "1.00", PayerID: "tab\there"},
		} {
			_, _, err := e.eng.CreateOrder(e.ctx, ws, req)
			wantErr(t, err, payoutkit.ErrInvalidInput)
		}
		_, err := e.eng.Order(e.ctx, ws, "o1")
		wantErr(t, err, payoutkit.ErrNotFound)
		_, err = e.eng.MarkOrderPaid(e.ctx, ws, "o1")
		wantErr(t, err, payoutkit.ErrNotFound)
		e.wantBalance(ws, "0.00", "0.00")
	})

	t.Run("Isolation", func(t *testing.T) {
		e := newEnv(t, open)
		a, b := e.workspace().Workspace.ID, e.workspace().Workspace.ID
		must[payoutkit.Order](t)(first(e.eng.CreateOrder(e.ctx, a, payoutkit.CreateOrderRequest{OrderID: "o1", Amount: "5"})))
		_, err := e.eng.Order(e.ctx, b, "o1")
		wantErr(t, err, payoutkit.ErrNotFound)
		_, err = e.eng.MarkOrderPaid(e.ctx, b, "o1")
		wantErr(t, err, payoutkit.ErrNotFound)
		e.wantBalance(a, "0.00", "0.00")
		e.wantBalance(b, "0.00", "0.00")
	})
}

func testLedger(t *testing.T, open Open) {
	e := newEnv(t, open)
	ws := e.workspace().Workspace.ID
	o := e.fund(ws, "100.00")
	must[payoutkit.Payout](t)(first(e.payout(ws, "po-1", "30.00")))
	must[payoutkit.Payout](t)(first(e.payout(ws, "po-2", "20.00")))
	must[payoutkit.Payout](t)(e.eng.FailPayout(e.ctx, ws, "po-2", "x"))
	must[payoutkit.Payout](t)(e.eng.CompletePayout(e.ctx, ws, "po-1", payoutkit.Completion{TxID: "tx"}))

	page := must[payoutkit.Page[payoutkit.LedgerEntry]](t)(e.store.Ledger(e.ctx, ws, payoutkit.PageRequest{}))
	type row struct {
		Kind   payoutkit.LedgerKind
		Amount string
		Ref    string
	}
	var got []row
	for _, l := range page.Items {
		got = append(got, row{l.Kind, l.Amount.String(), l.Ref})
		if l.EventID == "" || l.WorkspaceID != ws || l.CreatedAt.IsZero() {
			t.Errorf("ledger entry %+v lacks its event, workspace or time", l)
		}
	}
	want := []row{ // newest first
		{payoutkit.LedgerPayoutRefund, "20.00", "po-2"},
		{payoutkit.LedgerPayoutDebit, "-20.00", "po-2"},
		{payoutkit.LedgerPayoutDebit, "-30.00", "po-1"},
		{payoutkit.LedgerOrderCredit, "100.00", o.OrderID},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ledger (-want +got):\n%s", diff)
	}
	a := e.audit(ws)
	if a.LedgerSum != 7000 || a.CompletedPayouts != 3000 || a.PaidOrders != 10000 {
		t.Fatalf("audit %+v", a)
	}
}
