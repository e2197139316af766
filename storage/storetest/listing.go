package storetest

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/payoutkit/payoutkit"
)

func testListing(t *testing.T, open Open) {
	e := newEnv(t, open)
	ws := e.workspace().Workspace.ID
	other := e.workspace().Workspace.ID
	e.fund(ws, "100.00")
	e.fund(other, "100.00")
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("po-%d", i)
		must[payoutkit.Payout](t)(first(e.payout(ws, id, "1.00")))
		must[payoutkit.Payout](t)(first(e.payout(other, id+"-other", "1.00")))
		want = append([]string{id}, want...)
	}

	t.Run("PayoutsNewestFirst", func(t *testing.T) {
		got := collect(t, 3, func(r payoutkit.PageRequest) (payoutkit.Page[payoutkit.Payout], error) {
			return e.store.Payouts(e.ctx, ws, payoutkit.PayoutFilter{}, r)
		}, func(p payoutkit.Payout) string { return p.PayoutID })
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("payout pages (-want +got):\n%s", diff)
		}
	})

	t.Run("Orders", func(t *testing.T) {
		got := collect(t, 1, func(r payoutkit.PageRequest) (payoutkit.Page[payoutkit.Order], error) {
			return e.store.Orders(e.ctx, ws, payoutkit.OrderFilter{}, r)
		}, func(o payoutkit.Order) string { return string(o.Status) })
		if diff := cmp.Diff([]string{"paid"}, got); diff != "" {
			t.Fatalf("orders (-want +got):\n%s", diff)
		}
	})

	t.Run("Events", func(t *testing.T) {
		got := collect(t, 4, func(r payoutkit.PageRequest) (payoutkit.Page[payoutkit.Event], error) {
			return e.store.Events(e.ctx, ws, r)
		}, func(ev payoutkit.Event) string { return string(ev.Type) + " " + ev.Subject })
		if len(got) != 8 || got[7] != "order.paid order:"+got[7][len("order.paid order:"):] || got[0] != "payout.submitted payout:po-6" {
			t.Fatalf("events = %q", got)
		}
	})

	t.Run("BadCursor", func(t *testing.T) {
		_, err := e.store.Payouts(e.ctx, ws, payoutkit.PayoutFilter{}, payoutkit.PageRequest{Cursor: "not-a-cursor"})
		wantErr(t, err, payoutkit.ErrInvalidInput)
	})

	t.Run("UnknownWorkspace", func(t *testing.T) {
		_, err := e.store.Balance(e.ctx, "ws_missing")
		wantErr(t, err, payoutkit.ErrNotFound)
	})
}

// collect reads every page of a listing, checking page sizes and cursors.
func collect[T any](t *testing.T, limit int, list func(payoutkit.PageRequest) (payoutkit.Page[T], error), key func(T) string) []string {
	t.Helper()
	var out []string
	req := payoutkit.PageRequest{Limit: limit}
	for range 100 {
		page, err := list(req)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) > limit {
			t.Fatalf("page of %d items; limit %d", len(page.Items), limit)
		}
		for _, it := range page.Items {
			out = append(out, key(it))
		}
		if page.Next == "" {
			return out
		}
		req.Cursor = page.Next
	}
	t.Fatal("listing never ended")
	return nil
}

func testFilters(t *testing.T, open Open) {
	e := newEnv(t, open)
	ws := e.workspace().Workspace.ID
	other := e.workspace().Workspace.ID
	e.fund(ws, "100.00")
	e.fund(other, "100.00")
	create := func(ws, id, payer string) {
		t.Helper()
		req := payoutRequest(id, "1.00")
		req.PayerID = payer
		if _, _, err := e.eng.CreatePayout(e.ctx, ws, req); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		create(ws, fmt.Sprintf("a-%d", i), "alice")
		create(ws, fmt.Sprintf("b-%d", i), "bob")
		create(other, fmt.Sprintf("a-%d", i), "alice")
	}
	for _, id := range []string{"a-1", "b-2", "a-4"} {
		must[payoutkit.Payout](t)(e.eng.CompletePayout(e.ctx, ws, id, payoutkit.Completion{TxID: "tx-" + id}))
	}
	must[payoutkit.Payout](t)(e.eng.FailPayout(e.ctx, ws, "a-5", ""))

	ids := func(f payoutkit.PayoutFilter, limit int) []string {
		t.Helper()
		return collect(t, limit, func(r payoutkit.PageRequest) (payoutkit.Page[payoutkit.Payout], error) {
			return e.store.Payouts(e.ctx, ws, f, r)
		}, func(p payoutkit.Payout) string { return p.PayoutID })
	}
	for _, tc := range []struct {
		name string
		f    payoutkit.PayoutFilter
		want []string
	}{
		{"Completed", payoutkit.PayoutFilter{Status: payoutkit.PayoutCompleted}, []string{"a-4", "b-2", "a-1"}},
		{"Failed", payoutkit.PayoutFilter{Status: payoutkit.PayoutFailed}, []string{"a-5"}},
		{"Payer", payoutkit.PayoutFilter{PayerID: "bob"}, []string{"b-5", "b-4", "b-3", "b-2", "b-1", "b-0"}},
		{"PayerAndStatus", payoutkit.PayoutFilter{PayerID: "alice", Status: payoutkit.PayoutSubmitted}, []string{"a-3", "a-2", "a-0"}},
		{"NoMatch", payoutkit.PayoutFilter{PayerID: "carol"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, limit := range []int{1, 2, 50} {
				if diff := cmp.Diff(tc.want, ids(tc.f, limit)); diff != "" {
					t.Fatalf("limit %d (-want +got):\n%s", limit, diff)
				}
			}
		})
	}

	t.Run("SubjectEvents", func(t *testing.T) {
		evs := must[[]payoutkit.Event](t)(e.store.SubjectEvents(e.ctx, ws, "payout:a-1"))
		var types []payoutkit.EventType
		for _, ev := range evs {
			types = append(types, ev.Type)
		}
		if diff := cmp.Diff([]payoutkit.EventType{payoutkit.EventPayoutSubmitted, payoutkit.EventPayoutCompleted}, types); diff != "" {
			t.Fatalf("events of a-1 (-want +got):\n%s", diff)
		}
		if evs := must[[]payoutkit.Event](t)(e.store.SubjectEvents(e.ctx, other, "payout:a-1")); len(evs) != 1 {
			t.Fatalf("the other workspace's a-1 has %d events; want 1", len(evs))
		}
		logs := must[[]payoutkit.EventLog](t)(e.eng.PayoutEvents(e.ctx, ws, "a-5"))
		if len(logs) != 2 || logs[1].Type != payoutkit.EventPayoutFailed || len(logs[0].DeliveryAttempts) != 0 {
			t.Fatalf("PayoutEvents(a-5) = %+v", logs)
		}
		_, err := e.eng.PayoutEvents(e.ctx, ws, "zz")
		wantErr(t, err, payoutkit.ErrNotFound)
	})
}

func testCustomers(t *testing.T, open Open) {
	e := newEnv(t, open)
	ws := e.workspace().Workspace.ID
	other := e.workspace().Workspace.ID
	pay := func(ws, id, payer, amount string) {
		t.Helper()
		must[payoutkit.Order](t)(first(e.eng.CreateOrder(e.ctx, ws, payoutkit.CreateOrderRequest{OrderID: id, Amount: amount, PayerID: payer})))
		must[payoutkit.Order](t)(e.eng.MarkOrderPaid(e.ctx, ws, id))
	}
	payout := func(id, payer, amount string) {
		t.Helper()
		req := payoutRequest(id, amount)
		req.PayerID = payer
		must[payoutkit.Payout](t)(first(e.eng.CreatePayout(e.ctx, ws, req)))
	}
	pay(ws, "o-1", "alice", "100.00")
	pay(ws, "o-2", "", "50.00")                                                                                                                  // no payer: no customer
	must[payoutkit.Order](t)(first(e.eng.CreateOrder(e.ctx, ws, payoutkit.CreateOrderRequest{OrderID: "o-3", Amount: "7.00", PayerID: "dave"}))) // unpaid
	payout("p-1", "bob", "10.00")
	payout("p-2", "bob", "20.00")
	payout("p-3", "alice", "5.00")
	payout("p-4", "carol", "1.25")
	must[payoutkit.Payout](t)(e.eng.CompletePayout(e.ctx, ws, "p-1", payoutkit.Completion{TxID: "tx-1"}))
	must[payoutkit.Payout](t)(e.eng.FailPayout(e.ctx, ws, "p-3", "bounced"))
	pay(ws, "o-4", "bob", "3.00")
	pay(other, "x-1", "alice", "9.99")

	type row struct{ Payer, In, Out, Progress string }
	got := collect(t, 2, func(r payoutkit.PageRequest) (payoutkit.Page[payoutkit.Customer], error) {
		l, err := e.eng.ListCustomers(e.ctx, ws, payoutkit.ListCustomersRequest{Limit: r.Limit, Cursor: r.Cursor})
		return payoutkit.Page[payoutkit.Customer]{Items: l.Items, Next: l.NextCursor}, err
	}, func(c payoutkit.Customer) string {
		return fmt.Sprint(row{c.PayerID, c.PaidIn.String(), c.PaidOut.String(), c.InProgress.String()})
	})
	want := []string{ // newest first by first movement
		fmt.Sprint(row{"carol", "0.00", "0.00", "1.25"}),
		fmt.Sprint(row{"bob", "3.00", "10.00", "20.00"}),
		fmt.Sprint(row{"alice", "100.00", "0.00", "0.00"}),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("customers (-want +got):\n%s", diff)
	}
	a := e.audit(ws)
	if a.CustomersPaidIn.String() != "103.00" || a.CustomersInProgress.String() != "21.25" || a.CustomersPaidOut.String() != "10.00" {
		t.Fatalf("audit = %+v", a)
	}
	_, err := e.eng.ListCustomers(e.ctx, "ws_missing", payoutkit.ListCustomersRequest{})
	wantErr(t, err, payoutkit.ErrNotFound)
}
