package payoutkit_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/payoutkit/payoutkit"
)

// ListCustomers and ListEvents page with sealed cursors, as ListPayouts
// does: every row once, newest first; a cursor of another workspace or
// listing, or a changed one, is a 40000 on cursor; the limit is bounded;
// an unknown workspace is ErrNotFound.
func TestListCustomersAndEvents(t *testing.T) {
	eng := newEngine(t, nil)
	ctx := context.Background()
	ws := fundedWorkspace(t, eng, "100.00")
	other := fundedWorkspace(t, eng, "1.00")
	for i := range 5 {
		id := "o-" + strconv.Itoa(i)
		if _, _, err := eng.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: id, Amount: "1.00", PayerID: "payer-" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.MarkOrderPaid(ctx, ws, id); err != nil {
			t.Fatal(err)
		}
	}

	var customers []string
	req := payoutkit.ListCustomersRequest{Limit: 2}
	var customerCursor string
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("the customers listing never ends")
		}
		l, err := eng.ListCustomers(ctx, ws, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range l.Items {
			customers = append(customers, c.PayerID)
		}
		if l.NextCursor == "" {
			break
		}
		customerCursor, req.Cursor = l.NextCursor, l.NextCursor
	}
	if got := strings.Join(customers, ","); got != "payer-4,payer-3,payer-2,payer-1,payer-0" {
		t.Fatalf("customers %s; want newest first, each once", got)
	}

	var events int
	ereq := payoutkit.ListEventsRequest{Limit: 4}
	var eventCursor string
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("the events listing never ends")
		}
		l, err := eng.ListEvents(ctx, ws, ereq)
		if err != nil {
			t.Fatal(err)
		}
		events += len(l.Items)
		if l.NextCursor == "" {
			break
		}
		eventCursor, ereq.Cursor = l.NextCursor, l.NextCursor
	}
	if events != 6 { // the funding order and five more, each paid once
		t.Fatalf("%d events; want 6", events)
	}

	wantCursorError := func(name string, err error) {
		t.Helper()
		var e *payoutkit.Error
		if !errors.Is(err, payoutkit.ErrInvalidInput) || !errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Field != "cursor" {
			t.Errorf("%s: %v; want a 40000 on cursor", name, err)
		}
	}
	_, err := eng.ListCustomers(ctx, other, payoutkit.ListCustomersRequest{Limit: 2, Cursor: customerCursor})
	wantCursorError("a customers cursor in another workspace", err)
	_, err = eng.ListEvents(ctx, ws, payoutkit.ListEventsRequest{Cursor: customerCursor})
	wantCursorError("a customers cursor in the events listing", err)
	_, err = eng.ListCustomers(ctx, ws, payoutkit.ListCustomersRequest{Cursor: eventCursor})
	wantCursorError("an events cursor in the customers listing", err)
	_, err = eng.ListEvents(ctx, other, payoutkit.ListEventsRequest{Cursor: eventCursor})
	wantCursorError("an events cursor in another workspace", err)
	tampered := eventCursor[:len(eventCursor)-1] + map[bool]string{true: "A", false: "B"}[!strings.HasSuffix(eventCursor, "A")]
	_, err = eng.ListEvents(ctx, ws, payoutkit.ListEventsRequest{Cursor: tampered})
	wantCursorError("a changed events cursor", err)
	_, err = eng.ListCustomers(ctx, ws, payoutkit.ListCustomersRequest{Cursor: "1.1"})
	wantCursorError("a store position", err)

	for _, limit := range []int{-1, payoutkit.MaxListLimit + 1} {
		if _, err := eng.ListCustomers(ctx, ws, payoutkit.ListCustomersRequest{Limit: limit}); !errors.Is(err, payoutkit.ErrInvalidInput) {
			t.Errorf("customers limit %d: %v", limit, err)
		}
		if _, err := eng.ListEvents(ctx, ws, payoutkit.ListEventsRequest{Limit: limit}); !errors.Is(err, payoutkit.ErrInvalidInput) {
			t.Errorf("events limit %d: %v", limit, err)
		}
	}
	if l, err := eng.ListEvents(ctx, ws, payoutkit.ListEventsRequest{Limit: payoutkit.MaxListLimit}); err != nil || len(l.Items) != 6 || l.NextCursor != "" {
		t.Errorf("events at the largest limit: %d, %q, %v", len(l.Items), l.NextCursor, err)
	}
	if _, err := eng.ListCustomers(ctx, "ws_missing", payoutkit.ListCustomersRequest{}); !errors.Is(err, payoutkit.ErrNotFound) {
		t.Errorf("customers of an unknown workspace: %v", err)
	}
	if _, err := eng.ListEvents(ctx, "ws_missing", payoutkit.ListEventsRequest{}); !errors.Is(err, payoutkit.ErrNotFound) {
		t.Errorf("events of an unknown workspace: %v", err)
	}
}
