package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"
	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
)

// clock is a settable clock for an engine.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// clocked returns an engine over the env's store whose clock c sets.
func (e *env) clocked(c *clock) *payoutkit.Engine {
	e.t.Helper()
	eng, err := payoutkit.New(e.store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Now: c.now})
	if err != nil {
		e.t.Fatal(err)
	}
	return eng
}

// testLists checks the filters of the payout and order listings (status,
// payer, the created_at range), their order (newest first by creation
// time, then by insertion) and their paging, on the store and through the
// engine's list calls with their sealed cursors.
func testLists(t *testing.T, open Open) {
	e := newEnv(t, open)
	ws := e.workspace().Workspace.ID
	other := e.workspace().Workspace.ID
	c := &clock{}
	eng := e.clocked(c)
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	at := func(minutes int) time.Time { return base.Add(time.Duration(minutes) * time.Minute) }

	c.set(at(-10))
	for _, w := range []string{ws, other} {
		must[payoutkit.Order](t)(first(eng.CreateOrder(e.ctx, w, payoutkit.CreateOrderRequest{OrderID: "fund-1", Amount: "1000.00"})))
		must[payoutkit.Order](t)(eng.MarkOrderPaid(e.ctx, w, "fund-1"))
	}
	// Payouts p-0 … p-9 a minute apart, alternating payers; p-10 inserted
	// last but created first; p-11 and p-12 created at the same instant.
	create := func(ws, id, payer string, minute int) {
		t.Helper()
		c.set(at(minute))
		req := payoutRequest(id, "1.00")
		req.PayerID = payer
		if _, _, err := eng.CreatePayout(e.ctx, ws, req); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		create(ws, fmt.Sprintf("p-%d", i), []string{"alice", "bob"}[i%2], i)
		create(other, fmt.Sprintf("p-%d", i), "alice", i)
	}
	create(ws, "p-10", "alice", -1)
	create(ws, "p-11", "carol", 20)
	create(ws, "p-12", "carol", 20)
	c.set(at(30))
	for _, id := range []string{"p-1", "p-4", "p-12"} {
		must[payoutkit.Payout](t)(eng.CompletePayout(e.ctx, ws, id, payoutkit.Completion{TxID: "tx-" + id}))
	}
	must[payoutkit.Payout](t)(eng.FailPayout(e.ctx, ws, "p-6", ""))

	payoutIDs := func(f payoutkit.PayoutFilter, limit int) []string {
		t.Helper()
		return collect(t, limit, func(r payoutkit.PageRequest) (payoutkit.Page[payoutkit.Payout], error) {
			return e.store.Payouts(e.ctx, ws, f, r)
		}, func(p payoutkit.Payout) string { return p.PayoutID })
	}
	ids := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Fields(s)
	}
	for _, tc := range []struct {
		name string
		f    payoutkit.PayoutFilter
		want string
	}{
		{"All", payoutkit.PayoutFilter{}, "p-12 p-11 p-9 p-8 p-7 p-6 p-5 p-4 p-3 p-2 p-1 p-0 p-10"},
		{"From", payoutkit.PayoutFilter{CreatedFrom: at(8)}, "p-12 p-11 p-9 p-8"},
		{"To", payoutkit.PayoutFilter{CreatedTo: at(1)}, "p-0 p-10"},
		{"Range", payoutkit.PayoutFilter{CreatedFrom: at(2), CreatedTo: at(5)}, "p-4 p-3 p-2"},
		{"RangeAndPayer", payoutkit.PayoutFilter{CreatedFrom: at(2), CreatedTo: at(9), PayerID: "bob"}, "p-7 p-5 p-3"},
		{"RangeAndStatus", payoutkit.PayoutFilter{CreatedFrom: at(0), CreatedTo: at(21), Status: payoutkit.PayoutCompleted}, "p-12 p-4 p-1"},
		{"PayerAndStatus", payoutkit.PayoutFilter{PayerID: "alice", Status: payoutkit.PayoutSubmitted}, "p-8 p-2 p-0 p-10"},
		{"SameInstant", payoutkit.PayoutFilter{CreatedFrom: at(20), CreatedTo: at(20).Add(time.Microsecond)}, "p-12 p-11"},
		{"EmptyRange", payoutkit.PayoutFilter{CreatedFrom: at(5), CreatedTo: at(5)}, ""},
		{"BackwardsRange", payoutkit.PayoutFilter{CreatedFrom: at(6), CreatedTo: at(2)}, ""},
	} {
		t.Run("Payouts"+tc.name, func(t *testing.T) {
			for _, limit := range []int{1, 2, 3, 50} {
				if diff := cmp.Diff(ids(tc.want), payoutIDs(tc.f, limit)); diff != "" {
					t.Fatalf("limit %d (-want +got):\n%s", limit, diff)
				}
			}
		})
	}

	// Orders: o-0 … o-5 a minute apart, every other one paid, payers by
	// thirds; the funding orders were created at -10.
	for i := range 6 {
		c.set(at(i))
		payer := []string{"", "dave", "erin"}[i%3]
		id := fmt.Sprintf("o-%d", i)
		must[payoutkit.Order](t)(first(eng.CreateOrder(e.ctx, ws, payoutkit.CreateOrderRequest{OrderID: id, Amount: "2.00", PayerID: payer})))
		if i%2 == 1 {
			must[payoutkit.Order](t)(eng.MarkOrderPaid(e.ctx, ws, id))
		}
	}
	orderIDs := func(f payoutkit.OrderFilter, limit int) []string {
		t.Helper()
		return collect(t, limit, func(r payoutkit.PageRequest) (payoutkit.Page[payoutkit.Order], error) {
			return e.store.Orders(e.ctx, ws, f, r)
		}, func(o payoutkit.Order) string {
			if strings.HasPrefix(o.OrderID, "fund-") {
				return "fund"
			}
			return o.OrderID
		})
	}
	for _, tc := range []struct {
		name string
		f    payoutkit.OrderFilter
		want string
	}{
		{"All", payoutkit.OrderFilter{}, "o-5 o-4 o-3 o-2 o-1 o-0 fund"},
		{"Pending", payoutkit.OrderFilter{Status: payoutkit.OrderPending}, "o-4 o-2 o-0"},
		{"Paid", payoutkit.OrderFilter{Status: payoutkit.OrderPaid}, "o-5 o-3 o-1 fund"},
		{"Payer", payoutkit.OrderFilter{PayerID: "erin"}, "o-5 o-2"},
		{"PayerAndStatus", payoutkit.OrderFilter{PayerID: "dave", Status: payoutkit.OrderPaid}, "o-1"},
		{"Range", payoutkit.OrderFilter{CreatedFrom: at(-10), CreatedTo: at(2)}, "o-1 o-0 fund"},
		{"RangeAndStatus", payoutkit.OrderFilter{CreatedFrom: at(0), Status: payoutkit.OrderPaid}, "o-5 o-3 o-1"},
		{"NoMatch", payoutkit.OrderFilter{PayerID: "zed"}, ""},
	} {
		t.Run("Orders"+tc.name, func(t *testing.T) {
			for _, limit := range []int{1, 2, 50} {
				if diff := cmp.Diff(ids(tc.want), orderIDs(tc.f, limit)); diff != "" {
					t.Fatalf("limit %d (-want +got):\n%s", limit, diff)
				}
			}
		})
	}

	t.Run("BadStoreCursors", func(t *testing.T) {
		for _, cur := range []string{"x", "12", "1.0", "1.-2", ".5", "1.", "a.b", "99999999999999999999.1", "1.2.3"} {
			_, err := e.store.Payouts(e.ctx, ws, payoutkit.PayoutFilter{}, payoutkit.PageRequest{Cursor: cur})
			wantErr(t, err, payoutkit.ErrInvalidInput)
			_, err = e.store.Orders(e.ctx, ws, payoutkit.OrderFilter{}, payoutkit.PageRequest{Cursor: cur})
			wantErr(t, err, payoutkit.ErrInvalidInput)
		}
	})

	t.Run("UnknownWorkspace", func(t *testing.T) {
		_, err := e.store.Orders(e.ctx, "ws_missing", payoutkit.OrderFilter{}, payoutkit.PageRequest{})
		wantErr(t, err, payoutkit.ErrNotFound)
	})

	// The engine's list calls: the same rows, through sealed cursors bound
	// to the workspace and the filter.
	t.Run("EngineLists", func(t *testing.T) {
		req := payoutkit.ListPayoutsRequest{PayerID: "alice", CreatedFrom: at(0), Limit: 2}
		var got []string
		var cursors []string
		for range 10 {
			page := must[payoutkit.List[payoutkit.Payout]](t)(e.eng.ListPayouts(e.ctx, ws, req))
			for _, p := range page.Items {
				got = append(got, p.PayoutID)
			}
			if page.NextCursor == "" {
				break
			}
			cursors = append(cursors, page.NextCursor)
			req.Cursor = page.NextCursor
		}
		if diff := cmp.Diff(ids("p-8 p-6 p-4 p-2 p-0"), got); diff != "" {
			t.Fatalf("pages (-want +got):\n%s", diff)
		}
		cur := cursors[0]
		for name, bad := range map[string]payoutkit.ListPayoutsRequest{
			"OtherPayer":     {PayerID: "bob", CreatedFrom: at(0), Cursor: cur},
			"NoFilter":       {Cursor: cur},
			"OtherFrom":      {PayerID: "alice", CreatedFrom: at(1), Cursor: cur},
			"AddedTo":        {PayerID: "alice", CreatedFrom: at(0), CreatedTo: at(9), Cursor: cur},
			"AddedStatus":    {PayerID: "alice", CreatedFrom: at(0), Status: payoutkit.PayoutSubmitted, Cursor: cur},
			"Tampered":       {PayerID: "alice", CreatedFrom: at(0), Cursor: flipMiddle(cur)},
			"Truncated":      {PayerID: "alice", CreatedFrom: at(0), Cursor: cur[:len(cur)-1]},
			"StorePosition":  {PayerID: "alice", CreatedFrom: at(0), Cursor: "1.1"},
			"PaddedBase64":   {PayerID: "alice", CreatedFrom: at(0), Cursor: cur + "="},
			"WithLineBreak":  {PayerID: "alice", CreatedFrom: at(0), Cursor: cur[:4] + "\n" + cur[4:]},
			"OrdersListing ": {PayerID: "alice", CreatedFrom: at(0), Cursor: "x" + cur},
		} {
			if _, err := e.eng.ListPayouts(e.ctx, ws, bad); payoutkit.CodeOf(err) != payoutkit.CodeInvalidInput || !strings.Contains(err.Error(), "cursor") {
				t.Errorf("%s: err = %v; want a 40000 on cursor", name, err)
			}
		}
		// Another workspace's cursor, with the same filter.
		if _, err := e.eng.ListPayouts(e.ctx, other, payoutkit.ListPayoutsRequest{PayerID: "alice", CreatedFrom: at(0), Cursor: cur}); payoutkit.CodeOf(err) != payoutkit.CodeInvalidInput {
			t.Errorf("foreign cursor: err = %v; want 40000", err)
		}
		// A payouts cursor on the orders listing.
		if _, err := e.eng.ListOrders(e.ctx, ws, payoutkit.ListOrdersRequest{Cursor: cur}); payoutkit.CodeOf(err) != payoutkit.CodeInvalidInput {
			t.Errorf("payouts cursor on orders: err = %v; want 40000", err)
		}
		// The limit may change between pages.
		page := must[payoutkit.List[payoutkit.Payout]](t)(e.eng.ListPayouts(e.ctx, ws, payoutkit.ListPayoutsRequest{PayerID: "alice", CreatedFrom: at(0), Limit: 500, Cursor: cur}))
		if len(page.Items) != 3 || page.NextCursor != "" {
			t.Fatalf("after the first page with limit 500: %d items, next %q", len(page.Items), page.NextCursor)
		}

		orders := must[payoutkit.List[payoutkit.Order]](t)(e.eng.ListOrders(e.ctx, ws, payoutkit.ListOrdersRequest{Status: payoutkit.OrderPaid, Limit: 3}))
		if len(orders.Items) != 3 || orders.NextCursor == "" || orders.Items[0].OrderID != "o-5" {
			t.Fatalf("paid orders, first page: %+v", orders)
		}
		orders = must[payoutkit.List[payoutkit.Order]](t)(e.eng.ListOrders(e.ctx, ws, payoutkit.ListOrdersRequest{Status: payoutkit.OrderPaid, Limit: 3, Cursor: orders.NextCursor}))
		if len(orders.Items) != 1 || orders.NextCursor != "" || !strings.HasPrefix(orders.Items[0].OrderID, "fund-") {
			t.Fatalf("paid orders, second page: %+v", orders)
		}
	})
}

// flipMiddle changes one character in the middle of s.
func flipMiddle(s string) string {
	b := []byte(s)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// testSettlement checks that a completion's asset amount and network fee
// are stored exactly, read back by every read path, and carried by the
// payout.completed event; and that they stay null otherwise.
func testSettlement(t *testing.T, open Open) {
	e := newEnv(t, open)
	ws := e.workspace().Workspace.ID
	e.fund(ws, "100.00")
	for _, id := range []string{"po-1", "po-2", "po-3", "po-4"} {
		must[payoutkit.Payout](t)(first(e.payout(ws, id, "10.00")))
	}
	d := func(s string) decimal.NullDecimal {
		return decimal.NullDecimal{Decimal: decimal.RequireFromString(s), Valid: true}
	}
	done := must[payoutkit.Payout](t)(e.eng.CompletePayout(e.ctx, ws, "po-1", payoutkit.Completion{
		TxID: "tx-1", AssetAmount: d("9.987654"), NetworkFee: d("0.000001"),
	}))
	if done.AssetAmount.Decimal.String() != "9.987654" || done.NetworkFee.Decimal.String() != "0.000001" {
		t.Fatalf("completed: %+v", done)
	}
	// A fee of zero, trailing zeros (stored as the same number), and no
	// amount at all.
	must[payoutkit.Payout](t)(e.eng.CompletePayout(e.ctx, ws, "po-2", payoutkit.Completion{TxID: "tx-2", AssetAmount: d("10.500000"), NetworkFee: d("0")}))
	must[payoutkit.Payout](t)(e.eng.CompletePayout(e.ctx, ws, "po-3", payoutkit.Completion{TxID: "tx-3"}))
	must[payoutkit.Payout](t)(e.eng.FailPayout(e.ctx, ws, "po-4", "bounced"))

	want := map[string][2]string{ // asset_amount, network_fee; "" is null
		"po-1": {"9.987654", "0.000001"},
		"po-2": {"10.5", "0"},
		"po-3": {"", ""},
		"po-4": {"", ""},
	}
	str := func(d decimal.NullDecimal) string {
		if !d.Valid {
			return ""
		}
		return d.Decimal.String()
	}
	check := func(how string, p payoutkit.Payout) {
		t.Helper()
		if got := [2]string{str(p.AssetAmount), str(p.NetworkFee)}; got != want[p.PayoutID] {
			t.Errorf("%s %s: asset_amount, network_fee = %q; want %q", how, p.PayoutID, got, want[p.PayoutID])
		}
	}
	for id := range want {
		check("Payout", must[payoutkit.Payout](t)(e.eng.Payout(e.ctx, ws, id)))
	}
	for _, p := range must[payoutkit.Page[payoutkit.Payout]](t)(e.store.Payouts(e.ctx, ws, payoutkit.PayoutFilter{}, payoutkit.PageRequest{})).Items {
		check("Payouts", p)
	}
	for _, p := range must[payoutkit.List[payoutkit.Payout]](t)(e.eng.ListPayouts(e.ctx, ws, payoutkit.ListPayoutsRequest{Status: payoutkit.PayoutCompleted})).Items {
		check("ListPayouts", p)
	}
	if diff := cmp.Diff(done, must[payoutkit.Payout](t)(e.eng.Payout(e.ctx, ws, "po-1"))); diff != "" {
		t.Errorf("stored payout differs from the completion's answer:\n%s", diff)
	}

	// The events carry the same payout object.
	evs := must[[]payoutkit.Event](t)(e.store.SubjectEvents(e.ctx, ws, "payout:po-1"))
	if len(evs) != 2 || evs[1].Type != payoutkit.EventPayoutCompleted {
		t.Fatalf("events of po-1: %+v", evs)
	}
	var body struct {
		Data map[string]any `json:"data"`
	}
	noErr(t, json.Unmarshal(evs[1].Body, &body))
	if body.Data["asset_amount"] != "9.987654" || body.Data["network_fee"] != "0.000001" {
		t.Errorf("payout.completed data: %v", body.Data)
	}
	noErr(t, json.Unmarshal(evs[0].Body, &body))
	if v, ok := body.Data["asset_amount"]; !ok || v != nil {
		t.Errorf("payout.submitted data: asset_amount = %v (present %v); want null", v, ok)
	}

	t.Run("Extremes", func(t *testing.T) {
		// Eighteen places, and thirty integer digits: exact on every store.
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "10.00")
		for _, c := range []struct{ id, asset, network, amount, fee string }{
			{"eth", "ETH", "ETH", "0.003333333333333333", "0.000000000000000001"},
			{"big", "USDT", "BSC", "123456789012345678901234567890.123456789012345678", "0.5"},
		} {
			req := payoutRequest(c.id, "1.00")
			req.Asset, req.Network, req.Address = c.asset, c.network, "0x52908400098527886E0F7030069857D2E4169EE7"
			must[payoutkit.Payout](t)(first(e.eng.CreatePayout(e.ctx, ws, req)))
			must[payoutkit.Payout](t)(e.eng.CompletePayout(e.ctx, ws, c.id, payoutkit.Completion{TxID: "tx", AssetAmount: d(c.amount), NetworkFee: d(c.fee)}))
			p := must[payoutkit.Payout](t)(e.eng.Payout(e.ctx, ws, c.id))
			if str(p.AssetAmount) != c.amount || str(p.NetworkFee) != c.fee {
				t.Errorf("%s: read back %s, %s; want %s, %s", c.id, str(p.AssetAmount), str(p.NetworkFee), c.amount, c.fee)
			}
		}
	})

	t.Run("InvalidChangesNothing", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "10.00")
		must[payoutkit.Payout](t)(first(e.payout(ws, "po-1", "5.00")))
		for name, c := range map[string]payoutkit.Completion{
			"TooManyPlaces": {TxID: "tx", AssetAmount: d("5.0000001")}, // USDT on TRON has 6
			"FeeTooPrecise": {TxID: "tx", NetworkFee: d("0.0000001")},
			"ZeroAmount":    {TxID: "tx", AssetAmount: d("0")},
			"Negative":      {TxID: "tx", AssetAmount: d("-1")},
			"NegativeFee":   {TxID: "tx", NetworkFee: d("-0.1")},
			"NoTxID":        {AssetAmount: d("5")},
		} {
			_, err := e.eng.CompletePayout(e.ctx, ws, "po-1", c)
			if !errorsIsInvalid(err) {
				t.Errorf("%s: err = %v; want ErrInvalidInput", name, err)
			}
		}
		p := must[payoutkit.Payout](t)(e.eng.Payout(e.ctx, ws, "po-1"))
		if p.Status != payoutkit.PayoutSubmitted || p.AssetAmount.Valid || p.NetworkFee.Valid {
			t.Fatalf("after refused completions: %+v", p)
		}
		if evs := must[[]payoutkit.Event](t)(e.store.SubjectEvents(e.ctx, ws, "payout:po-1")); len(evs) != 1 {
			t.Fatalf("%d events", len(evs))
		}
		e.wantBalance(ws, "5.00", "5.00")
	})
}

func errorsIsInvalid(err error) bool { return payoutkit.CodeOf(err) == payoutkit.CodeInvalidInput }
