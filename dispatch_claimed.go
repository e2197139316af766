package payoutkit

import (
	"context"
	"sync"
)

// claimedEvent is an event as the delivery loop works on it: with the
// workspace reads it shares with the other events of its claim.
type claimedEvent struct {
	Event
	reads *claimReads
	// offered: leased to this engine as it was created, not claimed.
	offered bool
}

// claimReads reads each workspace once for all the events of one claim:
// under load a claim brings many events of one workspace, and a read per
// event was a large part of a delivery's work. The reads still happen
// after the claim returned, as they did event by event, so no event
// is signed or sent with settings older than its claim.
type claimReads struct {
	mu   sync.Mutex
	byID map[string]*workspaceRead
}

// workspaceRead is one workspace's read, made by the first event to need
// it while the others of the claim wait for it.
type workspaceRead struct {
	once sync.Once
	ws   Workspace
	err  error
}

// withReads wraps the events of one claim so that they share reads.
func withReads(evs []Event) []claimedEvent {
	if len(evs) == 0 {
		return nil
	}
	reads := &claimReads{byID: make(map[string]*workspaceRead, 1)}
	out := make([]claimedEvent, len(evs))
	for i, ev := range evs {
		out[i] = claimedEvent{Event: ev, reads: reads}
	}
	return out
}

// workspace returns workspace id as src gave it to the first event of the
// claim that asked, error included.
func (c *claimReads) workspace(ctx context.Context, src workspaceSource, id string) (Workspace, error) {
	c.mu.Lock()
	r := c.byID[id]
	if r == nil {
		r = &workspaceRead{}
		c.byID[id] = r
	}
	c.mu.Unlock()
	r.once.Do(func() { r.ws, r.err = src.Workspace(ctx, id) })
	return r.ws, r.err
}
