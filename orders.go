package payoutkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// OrderStatus is the state of an order.
type OrderStatus string

// An order is pending until paid; paying credits its amount once.
const (
	OrderPending OrderStatus = "pending"
	OrderPaid    OrderStatus = "paid"
)

// Order is a payment a customer owes the merchant, credited to the
// available balance when paid. Its JSON form is the contract's order object.
type Order struct {
	WorkspaceID, OrderID string
	Status               OrderStatus
	Amount               Amount
	PayerID, Description string
	CreatedAt, UpdatedAt time.Time
	PaidAt               time.Time // zero until paid
}

type orderJSON struct {
	OrderID     string      `json:"order_id"`
	Status      OrderStatus `json:"status"`
	Amount      Amount      `json:"amount"`
	Currency    string      `json:"currency"`
	PayerID     *string     `json:"payer_id"`
	Description *string     `json:"description"`
	CreatedAt   string      `json:"created_at"`
	UpdatedAt   string      `json:"updated_at"`
	PaidAt      *string     `json:"paid_at"`
}

// MarshalJSON renders the contract's order object.
func (o Order) MarshalJSON() ([]byte, error) {
	j := orderJSON{
		OrderID: o.OrderID, Status: o.Status, Amount: o.Amount, Currency: Currency,
		PayerID: nullable(o.PayerID), Description: nullable(o.Description),
		CreatedAt: formatTime(o.CreatedAt), UpdatedAt: formatTime(o.UpdatedAt),
	}
	if !o.PaidAt.IsZero() {
		paid := formatTime(o.PaidAt)
		j.PaidAt = &paid
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the contract's order object.
func (o *Order) UnmarshalJSON(data []byte) error {
	var j orderJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	var times [3]time.Time
	for i, s := range []string{j.CreatedAt, j.UpdatedAt, deref(j.PaidAt)} {
		t, err := parseTime(s)
		if err != nil {
			return err
		}
		times[i] = t
	}
	*o = Order{
		OrderID: j.OrderID, Status: j.Status, Amount: j.Amount,
		PayerID: deref(j.PayerID), Description: deref(j.Description),
		CreatedAt: times[0], UpdatedAt: times[1], PaidAt: times[2],
	}
	return nil
}

// CreateOrderRequest asks for a pending order; PayerID and Description are
// optional.
type CreateOrderRequest struct {
	OrderID     string `json:"order_id"`
	Amount      string `json:"amount"`
	PayerID     string `json:"payer_id,omitempty"`
	Description string `json:"description,omitempty"`
}

// maxDescription bounds an order's description, in characters.
const maxDescription = 1024

// CreateOrder stores a pending order. The same order_id again returns the
// stored order with replayed true, or ErrConflict if the parameters differ.
func (e *Engine) CreateOrder(ctx context.Context, workspaceID string, req CreateOrderRequest) (Order, bool, error) {
	var v validation
	checkID(&v, "order_id", req.OrderID)
	amount := checkAmount(&v, "amount", req.Amount)
	checkText(&v, "payer_id", req.PayerID, false, maxText)
	checkText(&v, "description", req.Description, false, maxDescription)
	if err := v.err(); err != nil {
		return Order{}, false, err
	}
	now := e.clock()
	o := Order{
		WorkspaceID: workspaceID, OrderID: req.OrderID, Status: OrderPending, Amount: amount,
		PayerID: req.PayerID, Description: req.Description, CreatedAt: now, UpdatedAt: now,
	}
	stored, created, err := e.store.CreateOrder(ctx, o)
	if err != nil {
		return Order{}, false, err
	}
	if created {
		return stored, false, nil
	}
	if stored.Amount != o.Amount || stored.PayerID != o.PayerID || stored.Description != o.Description {
		return Order{}, false, errConflict(fmt.Sprintf("order_id %q is already used with different parameters", o.OrderID))
	}
	return stored, true, nil
}

// Order returns one order of the workspace, or ErrNotFound.
func (e *Engine) Order(ctx context.Context, workspaceID, orderID string) (Order, error) {
	if err := checkLookupID("order_id", orderID); err != nil {
		return Order{}, err
	}
	o, err := e.store.Order(ctx, workspaceID, orderID)
	if errors.Is(err, ErrNotFound) {
		return Order{}, errNotFound("order")
	}
	return o, err
}

// MarkOrderPaid marks a pending order paid and credits its amount,
// atomically with an order.paid event; a paid order is returned unchanged.
func (e *Engine) MarkOrderPaid(ctx context.Context, workspaceID, orderID string) (Order, error) {
	o, err := e.Order(ctx, workspaceID, orderID)
	if err != nil || o.Status == OrderPaid {
		return o, err
	}
	now := e.clock()
	o.Status, o.PaidAt, o.UpdatedAt = OrderPaid, now, now
	ev, err := newEvent(workspaceID, EventOrderPaid, "order:"+orderID, o, now)
	if err != nil {
		return Order{}, err
	}
	err = e.store.MarkOrderPaid(ctx, o, ev)
	if errors.Is(err, ErrConflict) { // paid concurrently: report the stored order
		return e.Order(ctx, workspaceID, orderID)
	}
	if err != nil {
		return Order{}, err
	}
	return o, nil
}
