package delivery

import (
	"sync"
	"sync/atomic"
	"time"
)

// A payout created while the engine's loops run is leased to them in its
// own transaction (Store.CreatePayout's Lease): its hand-off and its
// payout.submitted event are then given to the loops straight from memory
// after the commit, instead of being claimed back from the tables. That
// spares each payout two claims, each a write of its row (on PostgreSQL a
// new version of it in every index). The lease is what makes it safe: no
// other engine claims the work before it expires, and when this one dies
// with the work undone, any engine claims it then, as after a crash
// mid-delivery.

// Offers is the work one loop leased to itself as it was created, waiting
// for the loop to take it (Loop.Offered).
type Offers[T any] struct {
	mu    sync.Mutex
	items []Offer[T]
	// ready holds a token while items wait.
	ready chan struct{}
	// held counts the items offered and not finished yet, so that the
	// engine leases no more than the loop can start.
	held  atomic.Int64
	limit int64
}

// Offer is one offered item and the end of its lease.
type Offer[T any] struct {
	Item       T
	LeaseUntil time.Time
}

// NewOffers returns the offers of a loop that starts at most limit items
// at once.
func NewOffers[T any](limit int) *Offers[T] {
	return &Offers[T]{ready: make(chan struct{}, 1), limit: int64(limit)}
}

// Room reports whether the loop can take another item before its running
// work finishes.
func (o *Offers[T]) Room() bool { return o.held.Load() < o.limit }

// Add queues item, leased until leaseUntil, for the loop.
func (o *Offers[T]) Add(item T, leaseUntil time.Time) {
	o.held.Add(1)
	o.mu.Lock()
	o.items = append(o.items, Offer[T]{item, leaseUntil})
	o.mu.Unlock()
	Poke(o.ready)
}

// take returns every queued item.
func (o *Offers[T]) take() []Offer[T] {
	o.mu.Lock()
	defer o.mu.Unlock()
	items := o.items
	o.items = nil
	return items
}

// finished counts an offered item out: worked on, or dropped when its lease ran out.
func (o *Offers[T]) finished() { o.held.Add(-1) }
