package payoutkit

import (
	"context"
	"encoding/json"
	"time"

	"github.com/payoutkit/payoutkit/internal/jsonappend"
)

// Balance is a workspace's USD balance. Available is what payouts may spend;
// InProgress is the sum of submitted payouts, already debited from Available.
type Balance struct {
	Available, InProgress Amount
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

// The ledger kinds.
const (
	LedgerOrderCredit  LedgerKind = "order_credit"  // a paid order, +amount
	LedgerPayoutDebit  LedgerKind = "payout_debit"  // an accepted payout, -amount
	LedgerPayoutRefund LedgerKind = "payout_refund" // a failed payout, +amount
)

// LedgerEntry is one signed change of a workspace's available balance,
// which always equals the sum of its entries. Ref is the order_id or
// payout_id that caused it, and EventID the event recorded with it.
type LedgerEntry struct {
	WorkspaceID string
	Kind        LedgerKind
	Amount      Amount
	Ref         string
	EventID     string
	CreatedAt   time.Time
}

// Balance returns the workspace's balance.
func (e *Engine) Balance(ctx context.Context, workspaceID string) (Balance, error) {
	return e.store.Balance(ctx, workspaceID)
}

// Customer is one payer_id of a workspace: the sums of its paid orders
// (PaidIn), completed payouts (PaidOut) and submitted payouts (InProgress),
// and when money first moved for it.
type Customer struct {
	WorkspaceID, PayerID        string
	PaidIn, PaidOut, InProgress Amount
	FirstSeenAt                 time.Time
}
