package payoutkit

import (
	"context"
	"sync"
	"time"
)

// Processor hands accepted payouts to the rail that actually sends the coins.
// Submit returns once the rail has taken the payout, not when it settles; the
// outcome comes back later through settler. Submit may be called more than
// once for one payout (hand-off is at least once), so it must be idempotent
// by workspace and payout_id.
type Processor interface {
	Submit(ctx context.Context, p Payout, settler Settler) error
}

// Settler records a payout's outcome. *Engine implements it.
type Settler interface {
	CompletePayout(ctx context.Context, workspaceID, payoutID, txid string) (Payout, error)
	FailPayout(ctx context.Context, workspaceID, payoutID, reason string) (Payout, error)
}

// handOff gives a newly accepted payout to the processor. A failed hand-off
// is logged; the payout stays submitted and unhanded in the store.
func (e *Engine) handOff(ctx context.Context, p Payout) {
	if e.processor == nil {
		return
	}
	if err := e.processor.Submit(ctx, p, e); err != nil {
		e.log.WarnContext(ctx, "handing payout to processor", "workspace_id", p.WorkspaceID, "payout_id", p.PayoutID, "err", err)
		return
	}
	if err := e.store.MarkPayoutHandedOff(ctx, p.WorkspaceID, p.PayoutID, e.clock()); err != nil {
		e.log.WarnContext(ctx, "recording payout hand-off", "workspace_id", p.WorkspaceID, "payout_id", p.PayoutID, "err", err)
	}
}

// SandboxProcessor is a processor for testing and demos: it moves no money.
// With SettleAfter zero, payouts stay submitted until settled by hand
// (CompletePayout, FailPayout); otherwise each payout completes with a fake
// txid SettleAfter after it was submitted.
type SandboxProcessor struct {
	// SettleAfter is how long after submission a payout completes. Defaults to
	// zero: never by itself.
	SettleAfter time.Duration

	mu      sync.Mutex
	timers  map[string]*time.Timer
	stopped bool
}

// Submit schedules the payout's completion when SettleAfter is set.
func (s *SandboxProcessor) Submit(_ context.Context, p Payout, settler Settler) error {
	if s.SettleAfter <= 0 {
		return nil
	}
	key := p.WorkspaceID + "/" + p.PayoutID
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.timers[key] != nil {
		return nil
	}
	if s.timers == nil {
		s.timers = make(map[string]*time.Timer)
	}
	s.timers[key] = time.AfterFunc(s.SettleAfter, func() {
		s.mu.Lock()
		delete(s.timers, key)
		s.mu.Unlock()
		// A payout settled by hand meanwhile is a conflict here, which is fine.
		_, _ = settler.CompletePayout(context.Background(), p.WorkspaceID, p.PayoutID, "sandbox-"+randomBase62(16))
	})
	return nil
}

// Stop cancels every scheduled settlement; later submits are ignored.
func (s *SandboxProcessor) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for k, t := range s.timers {
		t.Stop()
		delete(s.timers, k)
	}
}
