package payoutkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
)

// Processor hands accepted payouts to the rail that sends the coins. Submit
// returns once the rail has taken the payout; the outcome comes back later
// through settler. The hand-off loop calls it for every submitted payout
// until it returns nil: an error matching ErrNotDue is retried when due,
// any other logged and retried after the lease.
//
// Hand-off is at least once, so Submit may be called again for one payout.
// A processor must pass Submission.IdempotencyKey to its rail (or refuse a
// second send itself), so that money leaves once.
type Processor interface {
	Submit(ctx context.Context, s Submission, settler Settler) error
}

// Submission is one payout handed to a Processor, with its row of the coin
// list (zero if no longer configured) and IdempotencyKey of it.
type Submission struct {
	Payout
	Coin           Coin
	IdempotencyKey string
}

// IdempotencyKey returns the key of every Submit of the payout, on every
// instance, forever: "po_" and the first 32 hex digits of
// SHA-256(workspaceID, NUL, payoutID), 35 characters as payment APIs allow.
func IdempotencyKey(workspaceID, payoutID string) string {
	h := sha256.New()
	h.Write([]byte(workspaceID))
	h.Write([]byte{0})
	h.Write([]byte(payoutID))
	return "po_" + hex.EncodeToString(h.Sum(nil))[:32]
}

// PayoutLease is a submitted payout claimed for hand-off by Owner, with the
// claim's fencing token and when Payout was read (zero: unknown, so the
// hand-off reads it again).
type PayoutLease struct {
	Payout
	Owner  string
	Token  int64
	ReadAt time.Time
}

// freshLease is how long a claimed payout's copy stands for the stored
// payout in the hand-off. The hand-off loop hands a payout over moments
// after its claim read it, and reading it once more would cost a point read
// per payout for nothing new; a payout handed over later (a processor that
// said "not due", a claim that waited for a worker) is read again.
const freshLease = time.Second

// Lease reserves a new payout's hand-off and its first event to the engine
// that creates it (Store.CreatePayout); the zero Lease reserves nothing.
type Lease struct {
	Owner string // the engine's DeliveryConfig.Owner
	Until time.Time
}

// Settler records a payout's outcome. *Engine implements it.
type Settler interface {
	CompletePayout(ctx context.Context, workspaceID, payoutID string, c Completion) (Payout, error)
	FailPayout(ctx context.Context, workspaceID, payoutID, reason string) (Payout, error)
}

// ErrNotDue is what a Processor returns, or wraps, when it will not take a
// payout yet; the hand-off loop retries later and logs nothing.
var ErrNotDue = errors.New("payoutkit: payout not due for hand-off yet")

// NotDueError is an ErrNotDue that says when to retry.
type NotDueError struct {
	At time.Time
}

func (e *NotDueError) Error() string {
	return ErrNotDue.Error() + " (due at " + e.At.UTC().Format(time.RFC3339Nano) + ")"
}

// Is makes a NotDueError match ErrNotDue.
func (e *NotDueError) Is(target error) bool { return target == ErrNotDue }

// handOffPayout gives one claimed payout to the configured Processor and,
// when the processor accepts it, records the hand-off so that it is never
// given again. A payout settled since it was read is not handed over (and
// nil is returned): it reads the payout afresh unless the
// lease's copy was read within the last second (PayoutLease.ReadAt).
// Without a processor it only records the hand-off. Errors from the processor are returned as they are
// (ErrNotDue among them); the caller retries later. When another claim took
// the payout over meanwhile (this one's lease ran out), recording fails
// with ErrConflict: the newer claim's owner records it.
//
// The engine's hand-off loop (Engine.Start) calls it for payouts it claimed
// with Store.ClaimPayoutHandoffs.
func (e *Engine) handOffPayout(ctx context.Context, l PayoutLease) error {
	p := l.Payout
	if l.ReadAt.IsZero() || e.clock().Sub(l.ReadAt) >= freshLease {
		var err error
		if p, err = e.store.Payout(ctx, l.WorkspaceID, l.PayoutID); err != nil {
			return err
		}
	}
	if p.Status != PayoutSubmitted {
		return nil
	}
	if e.processor != nil {
		sub := Submission{Payout: p, IdempotencyKey: IdempotencyKey(p.WorkspaceID, p.PayoutID)}
		sub.Coin, _ = e.coins.coin(p.Asset, p.Network)
		if err := e.processor.Submit(ctx, sub, e); err != nil {
			return err
		}
	}
	l.Payout = p
	return e.store.MarkPayoutHandedOff(ctx, l, e.clock())
}
