package payoutkit

import (
	"context"
	"strconv"
	"time"
)

// Store is where the engine keeps its state. Every method that changes money
// is one atomic operation, with its ledger entry and its event, or changes
// nothing; the engine never composes a balance change out of several calls.
// Events enter the outbox only so, in their change's transaction; one whose
// workspace has no webhook URL then enters it failed with NoWebhookURLError
// and is never claimed unless resent. Every change of a payout control
// appends its security log entry in the same transaction. Package
// storage/storetest is the conformance suite.
//
// A missing row is ErrNotFound, a taken id ErrConflict and an overdraft
// ErrInsufficientBalance (matched with errors.Is); any other error is
// internal and must not reach a caller verbatim. Listings are newest first
// (by creation time, then insertion order) unless said otherwise, and an
// unreadable cursor is ErrInvalidInput. No capability is an optional
// interface, so that a wrapped store keeps them all.
type Store interface {
	// CreateWorkspace stores a workspace with a zero balance, its first
	// staff user and its first API key, atomically.
	CreateWorkspace(ctx context.Context, ws Workspace, staff StaffUser, key APIKey) error
	Workspace(ctx context.Context, id string) (Workspace, error)
	// SetWebhook sets the webhook URL and secret and appends log, atomically.
	SetWebhook(ctx context.Context, workspaceID, url, secret string, log SecurityLogEntry) error
	// SwapWebhookSecret sets the secret to next only while it is old, else
	// ErrConflict, so that a concurrent rotation wins.
	SwapWebhookSecret(ctx context.Context, workspaceID, old, next string) error
	// WorkspaceIDs lists every workspace's id, oldest first.
	WorkspaceIDs(ctx context.Context) ([]string, error)
	// InsertAPIKey stores key and appends log, atomically, first revoking
	// the workspace's active keys with revokeOthers (their count in
	// log.Details["revoked"]). A taken prefix is ErrConflict.
	InsertAPIKey(ctx context.Context, key APIKey, revokeOthers bool, log SecurityLogEntry) (revoked int, err error)
	// APIKey returns a key by prefix, revoked or not; APIKeyBalance returns
	// it with its workspace's balance in one query.
	APIKey(ctx context.Context, prefix string) (APIKey, error)
	APIKeyBalance(ctx context.Context, prefix string) (APIKey, Balance, error)
	APIKeys(ctx context.Context, workspaceID string) ([]APIKey, error)
	// RevokeAPIKeys revokes the workspace's active keys with prefix (all of
	// them when empty) and, when it revoked any, appends log, atomically.
	RevokeAPIKeys(ctx context.Context, workspaceID, prefix string, at time.Time, log SecurityLogEntry) (int, error)
	TouchAPIKey(ctx context.Context, prefix string, at time.Time) error

	// Payouts, orders and balances.

	// CreatePayout stores p, debits p.Amount with a payout_debit ledger
	// entry, and stores ev, atomically. A taken p.PayoutID changes nothing
	// and returns the stored payout with created false; an overdraft is
	// ErrInsufficientBalance. After the replay check and before the debit
	// it judges p with a PolicyCheck, as exact under concurrency as the
	// balance: a refusal is its error, else p and ev's body get its Approval.
	//
	// With lease.Owner set, p is stored claimed for hand-off with fencing
	// token 1 (unless held for approval) and ev leased (unless the
	// workspace has no webhook URL), both to lease.Owner until lease.Until,
	// as ClaimPayoutHandoffs and ClaimEvents would have; such a create is
	// no new work for SubscribeWork.
	CreatePayout(ctx context.Context, p Payout, ev Event, lease Lease) (stored Payout, created bool, err error)
	// CreatePayoutBatch stores the batch b with its items applied in
	// order, atomically: it reads a BatchCheck under the balance's lock
	// (with the payouts already stored among the items' payout_ids) and
	// stores what BatchCheck.Apply accepts as CreatePayout stores a payout
	// (its debit, ledger entry, customer totals and event, leased as
	// lease says), with b's record and results. A taken b.BatchID changes nothing and returns
	// the stored batch (as PayoutBatch does) with created false; a refused
	// all-or-nothing batch stores nothing and is ErrBatchRefused with the
	// batch as judged.
	CreatePayoutBatch(ctx context.Context, b PayoutBatch, items []BatchItem, lease Lease) (stored PayoutBatch, created bool, err error)
	// PayoutBatch returns a batch with its results in request order, each
	// accepted item's payout as it is now.
	PayoutBatch(ctx context.Context, workspaceID, batchID string) (PayoutBatch, error)
	// PayoutBatches lists the workspace's batches without their results.
	PayoutBatches(ctx context.Context, workspaceID string, page PageRequest) (Page[PayoutBatch], error)
	// SettlePayout moves a submitted payout to p.Status with p.TxID or
	// p.FailureReason and p.UpdatedAt, and stores ev, atomically; a failed
	// payout's amount is credited back (payout_refund) and leaves the
	// 24-hour sum. A payout no longer submitted is ErrConflict.
	SettlePayout(ctx context.Context, p Payout, ev Event) error
	Payout(ctx context.Context, workspaceID, payoutID string) (Payout, error)
	Payouts(ctx context.Context, workspaceID string, f PayoutFilter, page PageRequest) (Page[Payout], error)
	// PayoutsPerDay counts the payouts by status per UTC day of creation
	// (PayoutDay), over the days that [from, to) touches, from per-day
	// counters kept in the transaction of every create and settlement. It
	// returns the days that have payouts, oldest first, each Day at midnight
	// UTC; an unknown workspace is ErrNotFound.
	PayoutsPerDay(ctx context.Context, workspaceID string, from, to time.Time) ([]DayCount, error)
	// ClaimPayoutHandoffs leases to owner until leaseUntil up to limit
	// submitted payouts not yet handed off, not ApprovalPending and with no
	// live lease, oldest first, each with a fencing token larger than any
	// earlier one. A store may resume after its last full claim, but comes
	// back for older ones when a claim would come up short, and at least
	// once per lease length.
	ClaimPayoutHandoffs(ctx context.Context, owner string, now, leaseUntil time.Time, limit int) ([]PayoutLease, error)
	// MarkPayoutHandedOff records the hand-off only while l is the payout's
	// latest claim, else ErrConflict; again under the same claim is no error.
	MarkPayoutHandedOff(ctx context.Context, l PayoutLease, at time.Time) error
	// CreateOrder stores a pending order; a taken o.OrderID changes nothing
	// and returns the stored order with created false.
	CreateOrder(ctx context.Context, o Order) (stored Order, created bool, err error)
	// MarkOrderPaid moves a pending order to paid (o.PaidAt, o.UpdatedAt),
	// credits its amount with an order_credit ledger entry and stores ev,
	// atomically. An order that is not pending is ErrConflict.
	MarkOrderPaid(ctx context.Context, o Order, ev Event) error
	Order(ctx context.Context, workspaceID, orderID string) (Order, error)
	Orders(ctx context.Context, workspaceID string, f OrderFilter, page PageRequest) (Page[Order], error)
	Balance(ctx context.Context, workspaceID string) (Balance, error)
	Ledger(ctx context.Context, workspaceID string, page PageRequest) (Page[LedgerEntry], error)
	// Audit recomputes the workspace's money from its rows in one
	// consistent read.
	Audit(ctx context.Context, workspaceID string) (Audit, error)
	// Customers lists the payer_ids that money moved for, newest first by
	// the first movement; their sums change in the transaction that moves
	// the money.
	Customers(ctx context.Context, workspaceID string, page PageRequest) (Page[Customer], error)

	// The outbox.

	// ClaimEvents leases to owner until leaseUntil up to limit due events
	// (pending, next attempt at or before now, no live lease, no earlier
	// pending event of the same subject), the soonest due first and returned
	// oldest first, passing over the workspaces in except (those whose
	// DeliveryConfig.MaxPerWorkspace is busy). Events not yet due cost it
	// nothing.
	ClaimEvents(ctx context.Context, owner string, now, leaseUntil time.Time, limit int, except []string) ([]Event, error)
	// RecordAttempt stores an attempt of a leased event and moves the event
	// to next. It is ErrConflict when owner no longer holds the lease or the
	// event is no longer pending.
	RecordAttempt(ctx context.Context, owner string, a DeliveryAttempt, next EventDelivery) error
	Events(ctx context.Context, workspaceID string, page PageRequest) (Page[Event], error)
	Event(ctx context.Context, workspaceID, eventID string) (Event, error)
	// SubjectEvents and DeliveryAttempts list oldest first.
	SubjectEvents(ctx context.Context, workspaceID, subject string) ([]Event, error)
	DeliveryAttempts(ctx context.Context, workspaceID, eventID string) ([]DeliveryAttempt, error)
	// ResendEvent makes a failed or delivered event pending, due at now.
	ResendEvent(ctx context.Context, workspaceID, eventID string, now time.Time) error
	// PruneEvents deletes up to limit delivered events recorded before
	// before, oldest first, with their attempts, and returns how many.
	PruneEvents(ctx context.Context, before time.Time, limit int) (int, error)
	// OutboxHealth reads the outbox's counts in one consistent read.
	OutboxHealth(ctx context.Context) (OutboxHealth, error)
	// SubscribeWork returns a channel that receives (a burst may send
	// once) after this process commits work for the loops outside a
	// caller's transaction, so that they need not wait for their next
	// poll, and cancel, which unsubscribes.
	SubscribeWork() (ch <-chan struct{}, cancel func())

	// Payout controls and the security log.

	// PayoutPolicy returns DefaultPayoutPolicy until the policy is changed.
	PayoutPolicy(ctx context.Context, workspaceID string) (PayoutPolicy, error)
	UpdatePayoutPolicy(ctx context.Context, workspaceID string, patch PolicyPatch, log SecurityLogEntry) (PayoutPolicy, error)
	// AddAddress stores e with ev and log, atomically; an entry of the same
	// network and Key is ErrConflict.
	AddAddress(ctx context.Context, e AddressEntry, ev Event, log SecurityLogEntry) error
	// Addresses lists the address book, oldest first.
	Addresses(ctx context.Context, workspaceID string) ([]AddressEntry, error)
	// RemoveAddress deletes the entry of network and key, returning how
	// many it deleted (0 or 1), and appends log, atomically.
	RemoveAddress(ctx context.Context, workspaceID, network, key string, log SecurityLogEntry) (int, error)
	// ApprovePayout moves a held payout (submitted, ApprovalPending) to
	// ApprovalApproved, so that the hand-off claims it; RejectPayout
	// settles it as SettlePayout does p (failed, ApprovalRejected). Any
	// other payout is ErrConflict.
	ApprovePayout(ctx context.Context, workspaceID, payoutID string, at time.Time, log SecurityLogEntry) error
	RejectPayout(ctx context.Context, p Payout, ev Event, log SecurityLogEntry) error
	SecurityLog(ctx context.Context, workspaceID string, page PageRequest) (Page[SecurityLogEntry], error)

	Close() error
}

// OutboxHealth counts the events of the outbox by EventState, each once (so
// that Failed, which leaves out NotSent, speaks of receivers alone), and
// says when the oldest pending one was recorded (zero if none).
type OutboxHealth struct {
	Pending, Delivered, Failed, NotSent int64
	OldestPending                       time.Time
}

// PayoutFilter narrows a payout listing to the payouts that match each
// member set; CreatedFrom and CreatedTo keep [from, to). The zero value
// matches every payout.
type PayoutFilter struct {
	Status      PayoutStatus
	PayerID     string
	CreatedFrom time.Time
	CreatedTo   time.Time
	Approval    Approval
}

// OrderFilter narrows an order listing as PayoutFilter does a payout one.
type OrderFilter struct {
	Status      OrderStatus
	PayerID     string
	CreatedFrom time.Time
	CreatedTo   time.Time
}

// PageRequest asks for one page of a listing: Limit rows (see Normalize),
// from the Cursor of the previous Page (empty: the first page).
type PageRequest struct {
	Limit  int
	Cursor string
}

// Page is one page of a listing; Next, empty on the last page, is the
// following page's cursor.
type Page[T any] struct {
	Items []T
	Next  string
}

// Normalize returns r with Limit defaulted to DefaultListLimit and capped at
// MaxListLimit.
func (r PageRequest) Normalize() PageRequest {
	if r.Limit <= 0 {
		r.Limit = DefaultListLimit
	}
	r.Limit = min(r.Limit, MaxListLimit)
	return r
}

// Audit is a workspace's money recomputed from its rows, beside the stored
// balance (Available, InProgress) and per-customer totals. PayerPaidOrders
// sums the paid orders that name a payer_id; PayoutCounts counts the payouts
// submitted, completed and failed, and DayCounters the same from the per-day
// counters.
type Audit struct {
	Available, InProgress, LedgerSum, PaidOrders           Amount
	SubmittedPayouts, CompletedPayouts, PayerPaidOrders    Amount
	CustomersPaidIn, CustomersPaidOut, CustomersInProgress Amount
	PayoutCounts, DayCounters                              [3]int64
}

// Check returns an *AuditError for the first broken invariant, or nil: the
// available balance, never negative, equals the ledger sum and paid orders
// minus submitted and completed payouts; in-progress equals submitted
// payouts; the customers' totals and the per-day counters agree with the
// rows.
func (a Audit) Check() error {
	switch {
	case a.Available < 0:
		return auditError("available is negative", a)
	case a.Available != a.LedgerSum:
		return auditError("available differs from the ledger sum", a)
	case a.Available != a.PaidOrders-a.SubmittedPayouts-a.CompletedPayouts:
		return auditError("available differs from paid orders minus submitted and completed payouts", a)
	case a.InProgress != a.SubmittedPayouts:
		return auditError("in_progress differs from the sum of submitted payouts", a)
	case a.CustomersInProgress != a.SubmittedPayouts:
		return auditError("customers' in_progress differs from the sum of submitted payouts", a)
	case a.CustomersPaidOut != a.CompletedPayouts:
		return auditError("customers' paid_out differs from the sum of completed payouts", a)
	case a.CustomersPaidIn != a.PayerPaidOrders:
		return auditError("customers' paid_in differs from the sum of paid orders with a payer_id", a)
	case a.DayCounters != a.PayoutCounts:
		return auditError("the per-day payout counters differ from the payouts' counts by state", a)
	}
	return nil
}

// AuditError is a broken money invariant found by Audit.Check.
type AuditError struct {
	Reason string
	Audit  Audit
}

func auditError(reason string, a Audit) error { return &AuditError{Reason: reason, Audit: a} }

func (e *AuditError) Error() string {
	a := e.Audit
	return "audit: " + e.Reason + " (available " + a.Available.String() + ", ledger " + a.LedgerSum.String() +
		", in_progress " + a.InProgress.String() + ", paid orders " + a.PaidOrders.String() +
		", submitted " + a.SubmittedPayouts.String() + ", completed " + a.CompletedPayouts.String() +
		", customers paid in " + a.CustomersPaidIn.String() + " of " + a.PayerPaidOrders.String() +
		", customers paid out " + a.CustomersPaidOut.String() + ", customers in progress " + a.CustomersInProgress.String() +
		", payouts submitted/completed/failed " + counts(a.PayoutCounts) + ", day counters " + counts(a.DayCounters) + ")"
}

// counts writes three counts as "1/2/3".
func counts(c [3]int64) string {
	return strconv.FormatInt(c[0], 10) + "/" + strconv.FormatInt(c[1], 10) + "/" + strconv.FormatInt(c[2], 10)
}
