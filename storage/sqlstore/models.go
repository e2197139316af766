package sqlstore

import (
	"time"

	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"
)

// The bun models of payoutkit's tables, for a program that reads them with
// its own *bun.DB: to report on payouts, to join them with its own rows.
// They are for reading: payoutkit writes its tables itself, each change
// with its ledger entry and its event, and a row written around it would
// break the invariants the audit checks. TestModelsMatchSchema holds every
// model to its table's columns on both dialects.
//
//	var payouts []sqlstore.PayoutRow
//	err := db.NewSelect().Model(&payouts).
//		Where("workspace_id = ?", ws).Where("status = ?", "submitted").
//		Order("seq DESC").Limit(50).Scan(ctx)

// Time is a timestamp column as payoutkit stores it (TIMESTAMPTZ on
// PostgreSQL, microseconds since the Unix epoch as INTEGER on SQLite),
// read on either as UTC; NULL reads as the zero time.
type Time struct{ time.Time }

// Scan implements sql.Scanner.
func (t *Time) Scan(src any) error {
	return timeCol{&t.Time}.Scan(src)
}

// WorkspaceRow is a row of workspaces. WebhookSecret may be sealed (see
// payoutkit.Config.SecretKeys); the engine opens it.
type WorkspaceRow struct {
	bun.BaseModel `bun:"table:workspaces"`

	ID            string `bun:"id,pk"`
	Name          string `bun:"name"`
	WebhookURL    string `bun:"webhook_url"`
	WebhookSecret string `bun:"webhook_secret"`
	CreatedAt     Time   `bun:"created_at"`
}

// BalanceRow is a workspace's balance, in cents.
type BalanceRow struct {
	bun.BaseModel `bun:"table:balances"`

	WorkspaceID string `bun:"workspace_id,pk"`
	Available   int64  `bun:"available"`
	InProgress  int64  `bun:"in_progress"`
}

// APIKeyRow is an API key: its prefix and the SHA-256 of the whole key.
type APIKeyRow struct {
	bun.BaseModel `bun:"table:api_keys"`

	Prefix      string `bun:"prefix,pk"`
	WorkspaceID string `bun:"workspace_id"`
	Hash        []byte `bun:"hash"`
	CreatedAt   Time   `bun:"created_at"`
	RevokedAt   Time   `bun:"revoked_at"`
	LastUsedAt  Time   `bun:"last_used_at"`
}

// PayoutRow is a payout. Amount is in cents; AssetAmount and NetworkFee
// are in the asset's units, NULL until the payout completes.
type PayoutRow struct {
	bun.BaseModel `bun:"table:payouts"`

	Seq               int64               `bun:"seq,pk"`
	WorkspaceID       string              `bun:"workspace_id"`
	PayoutID          string              `bun:"payout_id"`
	Status            string              `bun:"status"`
	Amount            int64               `bun:"amount"`
	Asset             string              `bun:"asset"`
	Network           string              `bun:"network"`
	Address           string              `bun:"address"`
	PayerID           string              `bun:"payer_id"`
	TxID              string              `bun:"txid"`
	FailureReason     string              `bun:"failure_reason"`
	CreatedAt         Time                `bun:"created_at"`
	UpdatedAt         Time                `bun:"updated_at"`
	HandedOffAt       Time                `bun:"handed_off_at"`
	HandoffLeaseUntil Time                `bun:"handoff_lease_until"`
	HandoffOwner      *string             `bun:"handoff_owner"`
	HandoffToken      int64               `bun:"handoff_token"`
	AssetAmount       decimal.NullDecimal `bun:"asset_amount"`
	NetworkFee        decimal.NullDecimal `bun:"network_fee"`
}

// OrderRow is an order; Amount is in cents.
type OrderRow struct {
	bun.BaseModel `bun:"table:orders"`

	Seq         int64  `bun:"seq,pk"`
	WorkspaceID string `bun:"workspace_id"`
	OrderID     string `bun:"order_id"`
	Status      string `bun:"status"`
	Amount      int64  `bun:"amount"`
	PayerID     string `bun:"payer_id"`
	Description string `bun:"description"`
	CreatedAt   Time   `bun:"created_at"`
	UpdatedAt   Time   `bun:"updated_at"`
	PaidAt      Time   `bun:"paid_at"`
}

// LedgerEntryRow is one balance movement, in cents (negative for a debit).
type LedgerEntryRow struct {
	bun.BaseModel `bun:"table:ledger_entries"`

	Seq         int64  `bun:"seq,pk"`
	WorkspaceID string `bun:"workspace_id"`
	Kind        string `bun:"kind"`
	Amount      int64  `bun:"amount"`
	Ref         string `bun:"ref"`
	EventID     string `bun:"event_id"`
	CreatedAt   Time   `bun:"created_at"`
}

// EventRow is a webhook event in the outbox; Body is the exact JSON sent.
type EventRow struct {
	bun.BaseModel `bun:"table:events"`

	Seq           int64   `bun:"seq,pk"`
	ID            string  `bun:"id"`
	WorkspaceID   string  `bun:"workspace_id"`
	Type          string  `bun:"type"`
	Subject       string  `bun:"subject"`
	CreatedAt     Time    `bun:"created_at"`
	Body          []byte  `bun:"body"`
	State         string  `bun:"state"`
	Attempts      int     `bun:"attempts"`
	NextAttemptAt Time    `bun:"next_attempt_at"`
	LastError     string  `bun:"last_error"`
	LeaseOwner    *string `bun:"lease_owner"`
	LeaseUntil    Time    `bun:"lease_until"`
}

// DeliveryAttemptRow is one attempt at delivering an event.
type DeliveryAttemptRow struct {
	bun.BaseModel `bun:"table:delivery_attempts"`

	Seq          int64  `bun:"seq,pk"`
	EventID      string `bun:"event_id"`
	Attempt      int    `bun:"attempt"`
	AttemptedAt  Time   `bun:"attempted_at"`
	StatusCode   int    `bun:"status_code"`
	LatencyNS    int64  `bun:"latency_ns"`
	ErrorMessage string `bun:"error_message"`
	ResponseHead string `bun:"response_head"`
}

// CustomerRow is a payer's totals in a workspace, in cents.
type CustomerRow struct {
	bun.BaseModel `bun:"table:customers"`

	Seq         int64  `bun:"seq,pk"`
	WorkspaceID string `bun:"workspace_id"`
	PayerID     string `bun:"payer_id"`
	PaidIn      int64  `bun:"paid_in"`
	PaidOut     int64  `bun:"paid_out"`
	InProgress  int64  `bun:"in_progress"`
	FirstSeenAt Time   `bun:"first_seen_at"`
}

// StaffUserRow is a staff login; PasswordHash is a bcrypt hash.
type StaffUserRow struct {
	bun.BaseModel `bun:"table:staff_users"`

	Email        string `bun:"email,pk"`
	WorkspaceID  string `bun:"workspace_id"`
	PasswordHash string `bun:"password_hash"`
	CreatedAt    Time   `bun:"created_at"`
}

// StaffSessionRow is a portal session, by the SHA-256 of its token.
type StaffSessionRow struct {
	bun.BaseModel `bun:"table:staff_sessions"`

	TokenHash   []byte `bun:"token_hash,pk"`
	WorkspaceID string `bun:"workspace_id"`
	StaffEmail  string `bun:"staff_email"`
	CreatedAt   Time   `bun:"created_at"`
	LastSeenAt  Time   `bun:"last_seen_at"`
}

// SignInFailureRow counts an e-mail's failed sign-ins in its window.
type SignInFailureRow struct {
	bun.BaseModel `bun:"table:signin_failures"`

	Email       string `bun:"email,pk"`
	Failures    int    `bun:"failures"`
	WindowStart Time   `bun:"window_start"`
}

// Models lists a value of every model, one per table.
func Models() []any {
	return []any{
		(*WorkspaceRow)(nil), (*BalanceRow)(nil), (*APIKeyRow)(nil), (*PayoutRow)(nil), (*OrderRow)(nil),
		(*LedgerEntryRow)(nil), (*EventRow)(nil), (*DeliveryAttemptRow)(nil), (*CustomerRow)(nil),
		(*StaffUserRow)(nil), (*StaffSessionRow)(nil), (*SignInFailureRow)(nil),
	}
}
