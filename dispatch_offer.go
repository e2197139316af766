package payoutkit

import (
	"sync"
	"sync/atomic"
	"time"
)

// A payout created while the engine's loops run is leased to them in its
// own transaction (PayoutStore.CreatePayout's Lease): its hand-off and its
// payout.submitted event are then given to the loops straight from memory
// after the commit, instead of being claimed back from the tables. That
// spares each payout two claims, each a write of its row (on PostgreSQL a
// new version of it in every index). The lease is what makes it safe: no
// other engine claims the work before it expires, and when this one dies
// with the work undone, any engine claims it then, as after a crash
// mid-delivery.

// offers is the work one loop leased to itself as it was created, waiting
// for the loop to take it.
type offers[T any] struct {
	mu    sync.Mutex
	items []offer[T]
	// ready holds a token while items wait.
	ready chan struct{}
	// held counts the items offered and not finished yet, so that the
	// engine leases no more than the loop can start.
	held  atomic.Int64
	limit int64
}

type offer[T any] struct {
	item       T
	leaseUntil time.Time
}

func newOffers[T any](limit int) *offers[T] {
	return &offers[T]{ready: make(chan struct{}, 1), limit: int64(limit)}
}

// room reports whether the loop can take another item before its running
// work finishes.
func (o *offers[T]) room() bool { return o.held.Load() < o.limit }

// add queues item, leased until leaseUntil, for the loop.
func (o *offers[T]) add(item T, leaseUntil time.Time) {
	o.held.Add(1)
	o.mu.Lock()
	o.items = append(o.items, offer[T]{item, leaseUntil})
	o.mu.Unlock()
	poke(o.ready)
}

// take returns every queued item.
func (o *offers[T]) take() []offer[T] {
	o.mu.Lock()
	defer o.mu.Unlock()
	items := o.items
	o.items = nil
	return items
}

// finished counts an offered item out: worked on, or dropped when its lease ran out.
func (o *offers[T]) finished() { o.held.Add(-1) }

// offerLease is the lease for a payout about to be created, when the
// loops can take its work now: they hand payouts over (a Processor is set)
// and neither loop has more offered work than workers. Otherwise it is the
// zero Lease, and the work is claimed as usual.
func (d *dispatcher) offerLease() Lease {
	if d.handOver == nil || !d.handOffOffers.room() || !d.eventOffers.room() {
		return Lease{}
	}
	return Lease{Owner: d.cfg.Owner, Until: d.now().Add(d.cfg.Lease)}
}

// offer gives the loops the work of payout p, created with lease and the
// event ev: its hand-off, unless its policy holds it, and its event. ev is
// the event as the engine built it; a held payout's event body is rendered
// again with the hold, as the store stored it.
func (d *dispatcher) offer(p Payout, ev Event, lease Lease) {
	if p.approval() == ApprovalPending {
		var err error
		if ev, err = ev.WithPayout(p); err != nil {
			return // the stored event is claimed once its lease expires
		}
	} else {
		d.handOffOffers.add(PayoutLease{Payout: p, Owner: lease.Owner, Token: 1, ReadAt: d.now()}, lease.Until)
	}
	d.eventOffers.add(claimedEvent{Event: ev, offered: true}, lease.Until)
}
