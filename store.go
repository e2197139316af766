package payoutkit

import (
	"context"
	"strconv"
	"time"
)

// Store is where the engine keeps its state. Every method that changes money
// is one atomic operation that happens whole, with its ledger entry and its
// event, or not at all; the engine never composes a balance change out of
// several calls. Implementations live in package storage; the conformance
// suite in storage/storetest checks any of them.
//
// Stores report missing rows with ErrNotFound, taken ids with ErrConflict and
// an overdraft with ErrInsufficientBalance (all matched with errors.Is);
// anything else is an internal error that must not reach a caller verbatim.
//
// Every capability the engine and its loops use is a method here, with no
// optional interface discovered at run time, so that a store wrapped by its
// caller keeps all of them and a store that lacks one does not compile.
type Store interface {
	WorkspaceStore
	KeyStore
	KeyBalanceReader
	PayoutStore
	OrderStore
	LedgerStore
	Outbox
	WorkNotifier
	ControlStore
	Close() error
}

// WorkNotifier tells the engine's loops in its own process when the store
// has committed work for them (a new event, a payout to hand over, an event
// sent again), so that they claim it at once instead of at their next poll.
// Work that another process commits, or that is written in a caller's
// transaction, is found by the poll (DeliveryConfig.PollInterval).
type WorkNotifier interface {
	// SubscribeWork returns a channel that receives after work is
	// committed (a burst may send once), and cancel, which ends the
	// subscription.
	SubscribeWork() (ch <-chan struct{}, cancel func())
}

// WorkspaceStore keeps workspaces.
type WorkspaceStore interface {
	// CreateWorkspace stores a new workspace with a zero balance, its first
	// staff user and its first API key, atomically.
	CreateWorkspace(ctx context.Context, ws Workspace, staff StaffUser, key APIKey) error
	// Workspace returns one workspace.
	Workspace(ctx context.Context, id string) (Workspace, error)
	// SetWebhook replaces a workspace's webhook URL and signing secret and
	// appends log, atomically.
	SetWebhook(ctx context.Context, workspaceID, url, secret string, log SecurityLogEntry) error
	// SwapWebhookSecret replaces a workspace's stored webhook secret with
	// next only while it is still old, so that a concurrent rotation wins:
	// otherwise ErrConflict (ErrNotFound for an unknown workspace). It
	// changes nothing else.
	SwapWebhookSecret(ctx context.Context, workspaceID, old, next string) error
	// WorkspaceIDs lists every workspace's id, oldest first, for audits and
	// for a server telling an empty database on its first start.
	WorkspaceIDs(ctx context.Context) ([]string, error)
}

// KeyStore keeps hashed API keys.
type KeyStore interface {
	// InsertAPIKey stores a new key and appends log, atomically; a taken
	// prefix is ErrConflict. With revokeOthers it first revokes every active
	// key of the workspace, in the same transaction (a reset), returns how
	// many it revoked and records that count in log's Details as
	// "revoked".
	InsertAPIKey(ctx context.Context, key APIKey, revokeOthers bool, log SecurityLogEntry) (revoked int, err error)
	// APIKey returns the key with the given prefix, revoked or not.
	APIKey(ctx context.Context, prefix string) (APIKey, error)
	// APIKeys lists a workspace's keys, newest first.
	APIKeys(ctx context.Context, workspaceID string) ([]APIKey, error)
	// RevokeAPIKeys revokes the workspace's active keys with the given prefix,
	// or all of them when prefix is empty, returns how many it revoked and,
	// when that is any, appends log, atomically.
	RevokeAPIKeys(ctx context.Context, workspaceID, prefix string, at time.Time, log SecurityLogEntry) (int, error)
	// TouchAPIKey records that the key was used at the given time.
	TouchAPIKey(ctx context.Context, prefix string, at time.Time) error
}

// PayoutStore keeps payouts and moves money for them.
type PayoutStore interface {
	// CreatePayout debits p.Amount from the available balance and stores p, a
	// payout_debit ledger entry and ev, atomically. When the workspace already
	// has a payout with p.PayoutID it changes nothing and returns the stored one
	// with created false. When the available balance does not cover p.Amount it
	// returns ErrInsufficientBalance and changes nothing.
	//
	// When lease.Owner is set, the payout is stored claimed for hand-off by
	// lease.Owner until lease.Until with fencing token 1, as
	// ClaimPayoutHandoffs would have claimed it (unless its policy holds it
	// for approval), and ev leased to lease.Owner until lease.Until, as
	// ClaimEvents would have leased it (unless its workspace has no webhook
	// URL): the engine that creates the payout hands it over and delivers
	// ev itself right after the commit, and any engine claims them once the
	// lease has expired. Such a create is no new work for SubscribeWork.
	CreatePayout(ctx context.Context, p Payout, ev Event, lease Lease) (stored Payout, created bool, err error)
	// SettlePayout moves a submitted payout to p.Status (completed or failed),
	// recording p.TxID or p.FailureReason and p.UpdatedAt, and stores ev. A
	// failed payout's amount is credited back with a payout_refund ledger
	// entry, in the same transaction. A payout that is no longer submitted is
	// ErrConflict and nothing changes.
	SettlePayout(ctx context.Context, p Payout, ev Event) error
	// Payout returns one payout of the workspace.
	Payout(ctx context.Context, workspaceID, payoutID string) (Payout, error)
	// Payouts lists the workspace's payouts that match f, newest first: by
	// creation time, then by insertion order among payouts created at the
	// same instant. Page.Next is the store's own position; an unreadable
	// cursor is ErrInvalidInput.
	Payouts(ctx context.Context, workspaceID string, f PayoutFilter, page PageRequest) (Page[Payout], error)
	// PayoutsPerDay counts the workspace's payouts per UTC day of their
	// creation and by status (submitted ones in InProgress), for the whole
	// days that [from, to) touches: from's day through the day of to's
	// last microsecond. The stores keep these counts per day (PayoutDay),
	// in the transaction of every create and settlement, and read at most
	// one row a day. It returns the days that have payouts, oldest first,
	// each Day at midnight UTC. An unknown workspace is ErrNotFound.
	PayoutsPerDay(ctx context.Context, workspaceID string, from, to time.Time) ([]DayCount, error)
	// ClaimPayoutHandoffs leases up to limit submitted payouts that have not
	// been handed to the processor, are not held for approval
	// (ApprovalPending), and hold no live lease, to owner until
	// leaseUntil, oldest first. Each claim gives the payout a new fencing
	// token, larger than any earlier one of that payout. A store may read
	// on from where its last claim that reached limit ended, so that a
	// backlog's claims do not each walk past the payouts in flight; it
	// comes back for older ones (a lease that expired, a payout approved)
	// in a claim that would otherwise come up short, and at least once per
	// lease's length (leaseUntil − now).
	ClaimPayoutHandoffs(ctx context.Context, owner string, now, leaseUntil time.Time, limit int) ([]PayoutLease, error)
	// MarkPayoutHandedOff records that the processor accepted the leased
	// payout, only while l's owner and token are the payout's latest claim:
	// otherwise ErrConflict (another claim took it over), or ErrNotFound for
	// an unknown payout. Recording it again under the same claim is no error.
	MarkPayoutHandedOff(ctx context.Context, l PayoutLease, at time.Time) error
}

// OrderStore keeps orders and credits paid ones.
type OrderStore interface {
	// CreateOrder stores a pending order. When the workspace already has an
	// order with o.OrderID it changes nothing and returns the stored one with
	// created false.
	CreateOrder(ctx context.Context, o Order) (stored Order, created bool, err error)
	// MarkOrderPaid moves a pending order to paid (o.PaidAt, o.UpdatedAt),
	// credits its amount with an order_credit ledger entry and stores ev,
	// atomically. An order that is not pending is ErrConflict and nothing changes.
	MarkOrderPaid(ctx context.Context, o Order, ev Event) error
	// Order returns one order of the workspace.
	Order(ctx context.Context, workspaceID, orderID string) (Order, error)
	// Orders lists the workspace's orders that match f, newest first, in
	// the order Payouts uses.
	Orders(ctx context.Context, workspaceID string, f OrderFilter, page PageRequest) (Page[Order], error)
}

// LedgerStore reads balances and the entries behind them.
type LedgerStore interface {
	// Balance returns the workspace's balance.
	Balance(ctx context.Context, workspaceID string) (Balance, error)
	// Ledger lists the workspace's ledger entries, newest first.
	Ledger(ctx context.Context, workspaceID string, page PageRequest) (Page[LedgerEntry], error)
	// Audit recomputes the workspace's money from its rows, in one consistent
	// read, so that callers can prove the balance invariants.
	Audit(ctx context.Context, workspaceID string) (Audit, error)
	// Customers lists the workspace's customers (payer_ids that money moved
	// for), newest first by the first movement. Their sums change in the
	// same transaction as the payout or order that moves them.
	Customers(ctx context.Context, workspaceID string, page PageRequest) (Page[Customer], error)
}

// Outbox holds events until they are delivered. Events enter it only through
// the money-moving methods above, in the same transaction as their change;
// an event of a workspace that has no webhook URL at that moment enters it
// failed, with NoWebhookURLError (shown as EventStateNotSent), and is never
// claimed unless resent.
type Outbox interface {
	// ClaimEvents leases up to limit events that are due (pending, next attempt
	// at or before now, no live lease) to owner until leaseUntil: the soonest
	// due ones (events not yet due cost it nothing), returned oldest first.
	// An event is not due while an earlier event of the same subject is still
	// pending, so that a payout's events go out in order. It passes over
	// the events of the workspaces in except: the delivery loop names the
	// workspaces whose share of workers (DeliveryConfig.MaxPerWorkspace) is
	// busy, so that one workspace's backlog (a receiver that hangs,
	// thousands of events due) never keeps another workspace's events
	// waiting.
	ClaimEvents(ctx context.Context, owner string, now, leaseUntil time.Time, limit int, except []string) ([]Event, error)
	// RecordAttempt stores one delivery attempt of a leased event and moves the
	// event to next: delivered, failed, or pending again at next.NextAttemptAt.
	// It is ErrConflict when owner no longer holds the event's lease (or the
	// event is no longer pending), ErrNotFound for an unknown event.
	RecordAttempt(ctx context.Context, owner string, a DeliveryAttempt, next EventDelivery) error
	// Events lists the workspace's events, newest first.
	Events(ctx context.Context, workspaceID string, page PageRequest) (Page[Event], error)
	// Event returns one event of the workspace.
	Event(ctx context.Context, workspaceID, eventID string) (Event, error)
	// SubjectEvents lists the workspace's events of one subject
	// ("payout:<id>"), oldest first.
	SubjectEvents(ctx context.Context, workspaceID, subject string) ([]Event, error)
	// DeliveryAttempts lists an event's attempts, oldest first.
	DeliveryAttempts(ctx context.Context, workspaceID, eventID string) ([]DeliveryAttempt, error)
	// ResendEvent makes a failed or delivered event pending again, due at now.
	ResendEvent(ctx context.Context, workspaceID, eventID string, now time.Time) error
	// PruneEvents deletes up to limit delivered events recorded before
	// before, oldest first, with their delivery attempts, across
	// workspaces, and returns how many it deleted. Failed and pending events
	// are kept, as are payouts, orders and the ledger.
	PruneEvents(ctx context.Context, before time.Time, limit int) (int, error)
	// OutboxHealth counts the events per EventState and finds the oldest
	// pending one, across workspaces, in one consistent read.
	OutboxHealth(ctx context.Context) (OutboxHealth, error)
}

// ControlStore keeps the workspaces' payout controls (contract, section 10)
// and their security log (section 11). Every change of a control is
// appended to the log in the same transaction as the change.
//
// CreatePayout enforces the policy: after its replay check and before its
// debit, in the same transaction, it judges the payout with a PolicyCheck
// (refusing it with the check's error and changing nothing, or storing it
// with the Approval the check returns and its event's body rendered with
// it); the 24-hour sum it reads is exact under concurrency, like the
// balance. SettlePayout of a failed payout gives its amount back to that sum.
type ControlStore interface {
	// PayoutPolicy returns the workspace's policy, DefaultPayoutPolicy
	// until it is changed.
	PayoutPolicy(ctx context.Context, workspaceID string) (PayoutPolicy, error)
	// UpdatePayoutPolicy applies patch to the workspace's policy and
	// appends log, atomically, and returns the policy after the change.
	UpdatePayoutPolicy(ctx context.Context, workspaceID string, patch PolicyPatch, log SecurityLogEntry) (PayoutPolicy, error)
	// AddAddress stores e in the workspace's address book with ev (its
	// address.added event) and log, atomically. An entry of the same
	// network and Key is ErrConflict; an unknown workspace ErrNotFound.
	AddAddress(ctx context.Context, e AddressEntry, ev Event, log SecurityLogEntry) error
	// Addresses lists the workspace's address book, oldest first.
	Addresses(ctx context.Context, workspaceID string) ([]AddressEntry, error)
	// RemoveAddress deletes the entry of network and key and appends log,
	// atomically, and returns how many entries it deleted (0 or 1).
	RemoveAddress(ctx context.Context, workspaceID, network, key string, log SecurityLogEntry) (int, error)
	// ApprovePayout moves a held payout (submitted, ApprovalPending) to
	// ApprovalApproved, so that the hand-off claims it, and appends log,
	// atomically. Any other payout is ErrConflict; an unknown one
	// ErrNotFound.
	ApprovePayout(ctx context.Context, workspaceID, payoutID string, at time.Time, log SecurityLogEntry) error
	// RejectPayout is SettlePayout of p as failed (p.Approval
	// ApprovalRejected) for a held payout only, with log appended in the
	// same transaction. Any other payout is ErrConflict; an unknown one
	// ErrNotFound.
	RejectPayout(ctx context.Context, p Payout, ev Event, log SecurityLogEntry) error
	// SecurityLog lists the workspace's security log, newest first.
	SecurityLog(ctx context.Context, workspaceID string, page PageRequest) (Page[SecurityLogEntry], error)
}

// OutboxHealth is the state of the outbox, for audits and operators. Each
// event is counted once, in the field of its EventState.
type OutboxHealth struct {
	Pending, Delivered int64
	// Failed counts the events given up on (EventStateFailed); it leaves out
	// the ones never sent for want of a webhook URL, so that an alert on it
	// speaks of receivers alone.
	Failed int64
	// NotSent counts the events not sent because their workspace had no
	// webhook URL (EventStateNotSent).
	NotSent int64
	// OldestPending is when the oldest pending event was recorded; zero
	// when none is pending.
	OldestPending time.Time
}

// PayoutFilter narrows a payout listing. The zero value matches every payout.
type PayoutFilter struct {
	// Status keeps the payouts in this state; empty keeps all.
	Status PayoutStatus
	// PayerID keeps the payouts of this customer; empty keeps all.
	PayerID string
	// CreatedFrom keeps the payouts created at or after it; zero keeps all.
	CreatedFrom time.Time
	// CreatedTo keeps the payouts created before it; zero keeps all.
	CreatedTo time.Time
	// Approval keeps the payouts in this approval state; empty keeps all.
	Approval Approval
}

// OrderFilter narrows an order listing. The zero value matches every order.
type OrderFilter struct {
	// Status keeps the orders in this state; empty keeps all.
	Status OrderStatus
	// PayerID keeps the orders of this customer; empty keeps all.
	PayerID string
	// CreatedFrom keeps the orders created at or after it; zero keeps all.
	CreatedFrom time.Time
	// CreatedTo keeps the orders created before it; zero keeps all.
	CreatedTo time.Time
}

// PageRequest asks for one page of a newest-first listing.
type PageRequest struct {
	// Limit is the page size. Defaults to DefaultListLimit; at most
	// MaxListLimit.
	Limit int
	// Cursor is the Next of the previous page; empty starts at the newest row.
	Cursor string
}

// Page is one page of a listing.
type Page[T any] struct {
	Items []T
	// Next is the cursor of the following page, empty on the last page.
	Next string
}

// Normalize applies the PageRequest defaults and bounds.
func (r PageRequest) Normalize() PageRequest {
	if r.Limit <= 0 {
		r.Limit = DefaultListLimit
	}
	r.Limit = min(r.Limit, MaxListLimit)
	return r
}

// Audit is a workspace's money recomputed from its rows.
type Audit struct {
	// Available is the stored available balance.
	Available Amount
	// InProgress is the stored sum of submitted payouts.
	InProgress Amount
	// LedgerSum is the sum of all ledger entries.
	LedgerSum Amount
	// PaidOrders is the sum of paid orders.
	PaidOrders Amount
	// SubmittedPayouts and CompletedPayouts are the sums of payouts in those states.
	SubmittedPayouts, CompletedPayouts Amount
	// PayerPaidOrders is the sum of paid orders that name a payer_id.
	PayerPaidOrders Amount
	// CustomersPaidIn, CustomersPaidOut and CustomersInProgress are the sums
	// of the stored per-customer totals.
	CustomersPaidIn, CustomersPaidOut, CustomersInProgress Amount
	// PayoutCounts is how many of the workspace's payouts are submitted,
	// completed and failed, in that order; DayCounters the same three
	// counts summed over the per-day counters that PayoutsPerDay reads.
	PayoutCounts, DayCounters [3]int64
}

// Check returns an error describing the first broken invariant, or nil: the
// available balance equals the ledger sum and paid orders minus submitted and
// completed payouts, in-progress equals submitted payouts, nothing is
// negative, the customers' totals add up to the same payouts and orders,
// and the per-day payout counters add up to the payouts' counts by state.
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
