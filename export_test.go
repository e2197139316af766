package payoutkit

import (
	"context"
	"time"
)

// The engine's loops, for the tests of package payoutkit_test that run
// them with the parts the engine supplies replaced (a hand-off or a
// workspace source that counts, a fake clock) or look inside them.

type (
	Dispatcher      = dispatcher
	PayoutHandOff   = payoutHandOff
	WorkspaceSource = workspaceSource
)

// NewDispatcher is newDispatcher: the engine's loops over store, handing
// payouts to handOff (none when nil) and reading workspaces from
// workspaces.
func NewDispatcher(store Store, cfg *DeliveryConfig, handOff PayoutHandOff, workspaces WorkspaceSource) (*Dispatcher, error) {
	var ds dispatchStore
	if store != nil {
		ds = store
	}
	return newDispatcher(ds, cfg, handOff, workspaces)
}

func (d *dispatcher) Run(ctx context.Context) error { return d.run(ctx) }
func (d *dispatcher) Owner() string                 { return d.cfg.Owner }
func (d *dispatcher) Config() DeliveryConfig        { return *d.cfg }
func (d *dispatcher) Running() bool                 { return d.running.Load() }
func (d *dispatcher) Resend(ctx context.Context, workspaceID, eventID string) error {
	return d.resend(ctx, workspaceID, eventID)
}

const MaxAnswer = maxAnswer

// NotifierTimeout is the timeout n applies to one delivery.
func NotifierTimeout(n *HTTPNotifier) time.Duration { return n.timeout() }

// HandOffPayout is the engine's hand-off of one claimed payout, for the
// tests that drive it by hand or count it as a PayoutHandOff.
func (e *Engine) HandOffPayout(ctx context.Context, l PayoutLease) error {
	return e.handOffPayout(ctx, l)
}
