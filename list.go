package payoutkit

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/payoutkit/payoutkit/internal/cursor"
)

// ListPayoutsRequest asks for a page of a workspace's payouts, newest first
// (POST /v1/payouts/list). Every filter is optional; CreatedFrom and
// CreatedTo keep [from, to). Limit is 1 to MaxListLimit, 0 for
// DefaultListLimit, and Cursor the previous page's NextCursor under the same
// filter.
type ListPayoutsRequest struct {
	Status      PayoutStatus `json:"status,omitempty"`
	PayerID     string       `json:"payer_id,omitempty"`
	CreatedFrom time.Time    `json:"created_from,omitzero"`
	CreatedTo   time.Time    `json:"created_to,omitzero"`
	Approval    Approval     `json:"approval,omitempty"`
	Limit       int          `json:"limit,omitempty"`
	Cursor      string       `json:"cursor,omitempty"`
}

// ListOrdersRequest asks for a page of a workspace's orders, as
// ListPayoutsRequest does of payouts (POST /v1/orders/list).
type ListOrdersRequest struct {
	Status      OrderStatus `json:"status,omitempty"`
	PayerID     string      `json:"payer_id,omitempty"`
	CreatedFrom time.Time   `json:"created_from,omitzero"`
	CreatedTo   time.Time   `json:"created_to,omitzero"`
	Limit       int         `json:"limit,omitempty"`
	Cursor      string      `json:"cursor,omitempty"`
}

// ListCustomersRequest asks for a page of a workspace's customers, newest
// first by their first movement of money, with ListPayoutsRequest's Limit
// and Cursor.
type ListCustomersRequest struct {
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// ListEventsRequest asks for a page of a workspace's webhook events, newest
// first, with ListPayoutsRequest's Limit and Cursor.
type ListEventsRequest struct {
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// The page sizes of every listing, the engine's, the /v1 API's and
// PageRequest.Normalize's.
const (
	DefaultListLimit = 50
	MaxListLimit     = 500
)

// List is one page of a list endpoint. NextCursor, empty on the last page,
// is opaque and valid only for the same workspace and filter.
type List[T any] struct {
	Items      []T
	NextCursor string
}

type listJSON[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// MarshalJSON renders {"items": [...], "next_cursor": "..." | null}.
func (l List[T]) MarshalJSON() ([]byte, error) {
	if len(l.Items) == 0 {
		return json.Marshal(listJSON[T]{Items: []T{}, NextCursor: nullable(l.NextCursor)})
	}
	if _, ok := any(l.Items[0]).(json.Marshaler); !ok {
		return json.Marshal(listJSON[T]{Items: l.Items, NextCursor: nullable(l.NextCursor)})
	}
	b := append(make([]byte, 0, 512*len(l.Items)), `{"items":[`...)
	for i, item := range l.Items {
		if i > 0 {
			b = append(b, ',')
		}
		ib, err := any(item).(json.Marshaler).MarshalJSON()
		if err != nil {
			return nil, err
		}
		b = append(b, ib...)
	}
	b = append(b, `],"next_cursor":`...)
	cursor, err := json.Marshal(nullable(l.NextCursor))
	if err != nil {
		return nil, err
	}
	return append(append(b, cursor...), '}'), nil
}

// UnmarshalJSON reads what MarshalJSON renders (for clients).
func (l *List[T]) UnmarshalJSON(data []byte) error {
	var j listJSON[T]
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*l = List[T]{Items: j.Items, NextCursor: deref(j.NextCursor)}
	return nil
}

// ListPayouts returns a page of the workspace's payouts that match req. An
// invalid filter or limit, or a cursor not issued under Config.CursorKey for
// this workspace and filter, is ErrInvalidInput.
func (e *Engine) ListPayouts(ctx context.Context, workspaceID string, req ListPayoutsRequest) (List[Payout], error) {
	var v validation
	switch req.Status {
	case "", PayoutSubmitted, PayoutCompleted, PayoutFailed:
	default:
		v.add("status", "must be submitted, completed or failed")
	}
	switch req.Approval {
	case "", ApprovalNone, ApprovalPending, ApprovalApproved, ApprovalRejected:
	default:
		v.add("approval", "must be none, pending, approved or rejected")
	}
	f := PayoutFilter{Status: req.Status, PayerID: req.PayerID, CreatedFrom: ceilMicro(req.CreatedFrom), CreatedTo: ceilMicro(req.CreatedTo), Approval: req.Approval}
	// The approval filter joins the status in the cursor's scope only when
	// set, so that cursors issued without it stay valid.
	status := string(f.Status)
	if f.Approval != "" {
		status += "/approval=" + string(f.Approval)
	}
	return listPage(ctx, e, &v, "payouts", workspaceID, status, f.PayerID, f.CreatedFrom, f.CreatedTo, req.Limit, req.Cursor,
		func(page PageRequest) (Page[Payout], error) { return e.store.Payouts(ctx, workspaceID, f, page) })
}

// ListOrders is ListPayouts for orders.
func (e *Engine) ListOrders(ctx context.Context, workspaceID string, req ListOrdersRequest) (List[Order], error) {
	var v validation
	switch req.Status {
	case "", OrderPending, OrderPaid:
	default:
		v.add("status", "must be pending or paid")
	}
	f := OrderFilter{Status: req.Status, PayerID: req.PayerID, CreatedFrom: ceilMicro(req.CreatedFrom), CreatedTo: ceilMicro(req.CreatedTo)}
	return listPage(ctx, e, &v, "orders", workspaceID, string(f.Status), f.PayerID, f.CreatedFrom, f.CreatedTo, req.Limit, req.Cursor,
		func(page PageRequest) (Page[Order], error) { return e.store.Orders(ctx, workspaceID, f, page) })
}

// ListCustomers is ListPayouts for customers.
func (e *Engine) ListCustomers(ctx context.Context, workspaceID string, req ListCustomersRequest) (List[Customer], error) {
	var v validation
	return listPage(ctx, e, &v, "customers", workspaceID, "", "", time.Time{}, time.Time{}, req.Limit, req.Cursor,
		func(page PageRequest) (Page[Customer], error) { return e.store.Customers(ctx, workspaceID, page) })
}

// ListEvents is ListPayouts for webhook events.
func (e *Engine) ListEvents(ctx context.Context, workspaceID string, req ListEventsRequest) (List[Event], error) {
	var v validation
	return listPage(ctx, e, &v, "events", workspaceID, "", "", time.Time{}, time.Time{}, req.Limit, req.Cursor,
		func(page PageRequest) (Page[Event], error) { return e.store.Events(ctx, workspaceID, page) })
}

// listPage checks the rest of a list request, opens its cursor, reads the
// page from the store and seals the next cursor.
func listPage[T any](ctx context.Context, e *Engine, v *validation, kind, workspaceID, status, payerID string, from, to time.Time,
	limit int, cur string, read func(PageRequest) (Page[T], error),
) (List[T], error) {
	if payerID != "" {
		checkText(v, "payer_id", payerID, true, maxText)
	}
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit < 1 || limit > MaxListLimit:
		v.add("limit", "must be between 1 and "+strconv.Itoa(MaxListLimit))
	}
	if err := v.err(); err != nil {
		return List[T]{}, err
	}
	scope := cursor.Scope(kind, workspaceID, status, payerID, from, to)
	pos, ok := cursor.Open(e.cursorKey, scope, cur)
	if !ok {
		return List[T]{}, errBadCursor()
	}
	page, err := listing(read(PageRequest{Limit: limit, Cursor: pos}))
	if err != nil {
		return List[T]{}, err
	}
	items := page.Items
	if items == nil {
		items = []T{}
	}
	return List[T]{Items: items, NextCursor: cursor.Seal(e.cursorKey, scope, page.Next)}, nil
}

// listing maps a store listing's errors: a malformed cursor is a 40000 on
// cursor, an unknown workspace a 40400.
func listing[T any](p Page[T], err error) (Page[T], error) {
	switch {
	case errors.Is(err, ErrNotFound):
		return Page[T]{}, errNotFound("workspace")
	case errors.Is(err, ErrInvalidInput):
		return Page[T]{}, errBadCursor()
	}
	return p, err
}

// ceilMicro rounds t up to the microsecond, the precision of stored times:
// a row created at a whole microsecond is at or after t exactly when it is
// at or after ceilMicro(t), and before t exactly when it is before
// ceilMicro(t). The zero time stays zero (no bound).
func ceilMicro(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	t = t.UTC()
	if c := t.Truncate(time.Microsecond); !c.Equal(t) {
		return c.Add(time.Microsecond)
	}
	return t
}

// errBadCursor is the 40000 of a cursor that is not this listing's.
func errBadCursor() error { return invalidField("cursor", "is not a cursor of this listing") }
