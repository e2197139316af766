package payoutkit_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
)

// countingWorkspaces counts the workspace reads the dispatcher makes.
type countingWorkspaces struct {
	payoutkit.WorkspaceSource
	reads atomic.Int64
}

func (c *countingWorkspaces) Workspace(ctx context.Context, id string) (payoutkit.Workspace, error) {
	c.reads.Add(1)
	return c.WorkspaceSource.Workspace(ctx, id)
}

// TestClaimSharesWorkspaceReads: the events of one claim read their
// workspace once between them, and events claimed after a change of the
// webhook URL go to the new URL.
func TestClaimSharesWorkspaceReads(t *testing.T) {
	e := newEnv(t, nil)
	first := newReceiver(t)
	ws := e.workspace(first)
	e.fund(ws.ID, "100.00")
	const payouts = 20
	for i := range payouts {
		e.payout(ws.ID, fmt.Sprintf("po-%d", i), "1.00")
	}
	src := &countingWorkspaces{WorkspaceSource: e.eng}
	e.startWith(payoutkit.DeliveryConfig{}, nil, src)
	first.waitCount(payouts + 1) // the order's event and the payouts'
	// Every event was due when the dispatcher started: its first claim took
	// them all, and they went out on one read.
	if n := src.reads.Load(); n != 1 {
		t.Errorf("%d workspace reads for the %d events of one claim; want 1", n, payouts+1)
	}

	second := newReceiver(t)
	second.setSecret(ws.WebhookSecret)
	if _, err := e.eng.SetWebhookURL(e.ctx, ws.ID, second.srv.URL, payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	po := e.payout(ws.ID, "po-after", "1.00")
	waitFor(t, "the webhook at the new URL", func() bool {
		e.clock.Advance(time.Second) // the dispatcher's next poll
		return second.count() >= 1
	})
	if got, want := second.requests()[0].Event.ID, e.event(ws.ID, payoutkit.EventPayoutSubmitted, "payout:"+po.PayoutID).ID; got != want {
		t.Errorf("the new URL received event %s; want %s, po-after's", got, want)
	}
	if n := first.count(); n != payouts+1 {
		t.Errorf("the old URL received %d events; want %d", n, payouts+1)
	}
}
