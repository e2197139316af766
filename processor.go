package payoutkit

import (
	"context"
	"errors"
	"time"
)

// Processor hands accepted payouts to the rail that actually sends the coins.
// Submit returns once the rail has taken the payout, not when it settles; the
// outcome comes back later through settler. Submit may be called more than
// once for one payout (hand-off is at least once), so it must be idempotent
// by workspace and payout_id.
//
// Payouts reach the processor through Engine.HandOffPayout, which a leased
// loop (delivery.Dispatcher) calls for every submitted payout not yet handed
// over, until Submit returns nil. A processor that cannot take a payout yet
// returns an error matching ErrNotDue (a *NotDueError says when to retry);
// any other error is logged, and the hand-off is retried after the lease.
type Processor interface {
	Submit(ctx context.Context, p Payout, settler Settler) error
}

// Settler records a payout's outcome. *Engine implements it.
type Settler interface {
	CompletePayout(ctx context.Context, workspaceID, payoutID, txid string) (Payout, error)
	FailPayout(ctx context.Context, workspaceID, payoutID, reason string) (Payout, error)
}

// ErrNotDue is what a Processor returns, or wraps, when it will not take a
// payout yet. The hand-off loop retries later and logs nothing.
var ErrNotDue = errors.New("payoutkit: payout not due for hand-off yet")

// NotDueError is an ErrNotDue that says when the payout will be due, so that
// the hand-off loop can retry then instead of after its whole lease.
type NotDueError struct {
	At time.Time
}

func (e *NotDueError) Error() string {
	return ErrNotDue.Error() + " (due at " + e.At.UTC().Format(time.RFC3339Nano) + ")"
}

// Is makes a NotDueError match ErrNotDue.
func (e *NotDueError) Is(target error) bool { return target == ErrNotDue }

// HandOffPayout gives one submitted payout to the configured Processor and,
// when the processor accepts it, records the hand-off so that it is never
// given again. It reads the payout afresh first: a payout settled meanwhile
// is not handed over (and nil is returned). Without a processor it only
// records the hand-off. Errors from the processor are returned as they are
// (ErrNotDue among them); the caller retries later.
//
// The hand-off loop in package delivery calls it for payouts it claimed with
// PayoutStore.ClaimPayoutHandoffs; call it directly only under such a lease.
func (e *Engine) HandOffPayout(ctx context.Context, p Payout) error {
	p, err := e.store.Payout(ctx, p.WorkspaceID, p.PayoutID)
	if err != nil {
		return err
	}
	if p.Status != PayoutSubmitted {
		return nil
	}
	if e.processor != nil {
		if err := e.processor.Submit(ctx, p, e); err != nil {
			return err
		}
	}
	return e.store.MarkPayoutHandedOff(ctx, p.WorkspaceID, p.PayoutID, e.clock())
}

// SandboxProcessor is a processor for testing and demos: it moves no money.
// With SettleAfter zero, it accepts every payout at once and payouts stay
// submitted until settled by hand (CompletePayout, FailPayout). Otherwise it
// answers ErrNotDue until SettleAfter has passed since the payout was created,
// then completes the payout with a fake txid. The delay lives in the payout's
// stored creation time, not in a timer, so a restart in the middle of it
// still settles the payout on time.
type SandboxProcessor struct {
	// SettleAfter is how long after creation a payout completes. Defaults to
	// zero: never by itself.
	SettleAfter time.Duration
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// Submit implements Processor.
func (s *SandboxProcessor) Submit(ctx context.Context, p Payout, settler Settler) error {
	if s.SettleAfter <= 0 {
		return nil
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	if due := p.CreatedAt.Add(s.SettleAfter); now().Before(due) {
		return &NotDueError{At: due}
	}
	_, err := settler.CompletePayout(ctx, p.WorkspaceID, p.PayoutID, "sandbox-"+randomBase62(16))
	if errors.Is(err, ErrConflict) { // settled by hand meanwhile
		return nil
	}
	return err
}
