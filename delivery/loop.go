package delivery

import (
	"context"
	"slices"
	"sync"
	"time"
)

// leased is one kind of work that the dispatcher claims from the store under
// a lease: webhook events, or payouts to hand over.
type leased[T any] struct {
	name  string
	claim func(ctx context.Context, now, leaseUntil time.Time, limit int) ([]T, error)
	// key groups items that must never be worked on at the same time; id
	// names one item.
	key, id func(T) string
	// newer reports whether claimed, an item with the same id as running,
	// was claimed after running's work recorded its outcome (so it is due
	// again) rather than because running's lease ran out mid-work.
	newer func(claimed, running T) bool
	// work handles one item whose lease ends at leaseUntil. It returns when
	// to work on the item again within the same lease, or the zero time when
	// it is done with it (handled, or left for the lease to expire).
	work func(ctx context.Context, item T, leaseUntil time.Time) (again time.Time)
	// wake, when it receives, makes the loop claim at once.
	wake <-chan struct{}
}

type job[T any] struct {
	item       T
	key        string
	leaseUntil time.Time
	again      time.Time
}

// run claims due items and works on them, at most Concurrency at a time,
// until ctx is cancelled; then it waits for the running work to return.
//
// It claims only as many items as it has free workers, so that nothing it
// claims waits out its lease in a queue. It claims again as soon as a worker
// finishes (which is how a payout's next event follows its previous one
// without waiting for a poll), when the poll interval has passed, or when
// woken.
func run[T any](ctx context.Context, d *Dispatcher, l leased[T]) {
	var (
		limit   = d.cfg.Concurrency
		running = make(map[string]job[T]) // by key
		waiting []job[T]                  // leased items to work on later
		done    = make(chan job[T], limit)
		wg      sync.WaitGroup
	)
	defer wg.Wait()
	start := func(j job[T]) {
		running[j.key] = j
		wg.Go(func() {
			j.again = l.work(ctx, j.item, j.leaseUntil)
			done <- j
		})
	}
	// startable reports whether a waiting job may start now.
	startable := func(j job[T]) bool {
		_, busy := running[j.key]
		return len(running) < limit && !busy
	}
	for ctx.Err() == nil {
		now := d.now()
		waiting = slices.DeleteFunc(waiting, func(j job[T]) bool {
			switch {
			case !j.leaseUntil.After(now): // the lease is gone, and the item with it
				return true
			case startable(j) && !j.again.After(now):
				start(j)
				return true
			}
			return false
		})
		again := false
		if free := limit - len(running); free > 0 {
			n := min(free, d.cfg.BatchSize)
			leaseUntil := now.Add(d.cfg.Lease)
			items, err := l.claim(ctx, now, leaseUntil, n)
			if err != nil && ctx.Err() == nil {
				d.log.WarnContext(ctx, "claiming "+l.name, "err", err)
			}
			started := 0
			for _, it := range items {
				j := job[T]{item: it, key: l.key(it), leaseUntil: leaseUntil}
				if r, busy := running[j.key]; busy {
					if id := l.id(it); id == l.id(r.item) && !l.newer(it, r.item) {
						// Our lease ran out while we still work on it: the
						// running worker records the outcome.
						d.log.WarnContext(ctx, "claimed "+l.name+" still in progress here; leaving it to the running attempt", "id", id)
						continue
					}
					// A worker has just recorded its outcome for this key
					// but not reported back yet: run this right after it.
					waiting = append(waiting, j)
					continue
				}
				start(j)
				started++
			}
			// A full claim means more may be due: claim again while workers are free.
			again = len(items) == n && started > 0 && len(running) < limit
		}
		if again {
			continue
		}
		wakeAt := now.Add(d.cfg.PollInterval)
		for _, j := range waiting {
			if startable(j) && j.again.Before(wakeAt) {
				wakeAt = j.again
			}
		}
		finished := func(j job[T]) {
			delete(running, j.key)
			if !j.again.IsZero() {
				waiting = append(waiting, j)
			}
		}
		select {
		case <-ctx.Done():
		case j := <-done:
			finished(j)
			// Take every other finished worker too, so that one claim
			// fills all the free slots.
			for drained := false; !drained; {
				select {
				case j := <-done:
					finished(j)
				default:
					drained = true
				}
			}
		case <-d.cfg.Clock.At(wakeAt):
		case <-l.wake:
		}
	}
}
