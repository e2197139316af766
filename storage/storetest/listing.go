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
			return e.store.Payouts(e.ctx, ws, r)
		}, func(p payoutkit.Payout) string { return p.PayoutID })
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("payout pages (-want +got):\n%s", diff)
		}
	})

	t.Run("Orders", func(t *testing.T) {
		got := collect(t, 1, func(r payoutkit.PageRequest) (payoutkit.Page[payoutkit.Order], error) {
			return e.store.Orders(e.ctx, ws, r)
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
		_, err := e.store.Payouts(e.ctx, ws, payoutkit.PageRequest{Cursor: "not-a-cursor"})
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
