package payoutkit

import (
	"context"
	"encoding/json"
	"time"

	"github.com/payoutkit/payoutkit/internal/jsonappend"
)

// Balance is a workspace's USD balance. Available is what payouts may spend;
// InProgress is the sum of submitted payouts (already debited from Available).
type Balance struct {
	Available  Amount
	InProgress Amount
}

// MarshalJSON renders the contract's balance object.
func (b Balance) MarshalJSON() ([]byte, error) {
	out := jsonappend.String(append(make([]byte, 0, 64), `{"currency":`...), Currency)
	out = append(b.Available.appendText(append(out, `,"available":"`...)), '"')
	out = append(b.InProgress.appendText(append(out, `,"in_progress":"`...)), '"')
	return append(out, '}'), nil
}

// UnmarshalJSON reads the contract's balance object.
func (b *Balance) UnmarshalJSON(data []byte) error {
	var j struct {
		Available  Amount `json:"available"`
		InProgress Amount `json:"in_progress"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*b = Balance{Available: j.Available, InProgress: j.InProgress}
	return nil
}

// LedgerKind names the cause of a ledger entry.
type LedgerKind string

// Every change of an available balance is one of these.
const (
	LedgerOrderCredit  LedgerKind = "order_credit"  // a paid order, +amount
	LedgerPayoutDebit  LedgerKind = "payout_debit"  // an accepted payout, -amount
	LedgerPayoutRefund LedgerKind = "payout_refund" // a failed payout, +amount
)

// LedgerEntry is one change of a workspace's available balance. The available
// balance always equals the sum of the workspace's entries.
type LedgerEntry struct {
	WorkspaceID string
	Kind        LedgerKind
	// Amount is signed: credits are positive, debits negative.
	Amount Amount
	// Ref is the order_id or payout_id that caused the entry.
	Ref string
	// EventID is the event recorded with the entry.
	EventID   string
	CreatedAt time.Time
}

// Balance returns the workspace's available and in-progress amounts.
func (e *Engine) Balance(ctx context.Context, workspaceID string) (Balance, error) {
	return e.store.Balance(ctx, workspaceID)
}

// Customer is one payer_id of a workspace with the money that moved for it:
// PaidIn is the sum of its paid orders, PaidOut of its completed payouts,
// InProgress of its submitted payouts.
type Customer struct {
	WorkspaceID string
	PayerID     string
	PaidIn      Amount
	PaidOut     Amount
	InProgress  Amount
	// FirstSeenAt is when money first moved for the customer.
	FirstSeenAt time.Time
}
