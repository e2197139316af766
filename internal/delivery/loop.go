package delivery

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Loop is one kind of work that Run claims from the store under a lease:
// webhook events, or payouts to hand over.
type Loop[T any] struct {
	// Name names the work in log lines ("events").
	Name string
	// Claim leases up to limit due items, passing over those of the
	// tenants in full where it can (they are busy with their share).
	Claim func(ctx context.Context, now, leaseUntil time.Time, limit int, full []string) ([]T, error)
	// Key groups items that must never be worked on at the same time; ID
	// names one item.
	Key, ID func(T) string
	// Newer reports whether claimed, an item with the same id as running,
	// was claimed after running's work recorded its outcome (so it is due
	// again) rather than because running's lease ran out mid-work.
	Newer func(claimed, running T) bool
	// Tenant, when set, names the workspace of an item: at most PerTenant
	// items of one tenant are worked on at once, so that one workspace's
	// hanging receiver cannot take every worker.
	Tenant    func(T) string
	PerTenant int
	// Work handles one item whose lease ends at leaseUntil. It returns when
	// to work on the item again within the same lease, or the zero time when
	// it is done with it (handled, or left for the lease to expire).
	Work func(ctx context.Context, item T, leaseUntil time.Time) (again time.Time)
	// Wake, when it receives, makes the loop claim at once.
	Wake <-chan struct{}
	// Offered, when set, brings items this engine leased to itself as it
	// created them: they start like claimed ones, without a claim. Adopt,
	// when set, prepares each batch taken from it as a claim's items are.
	Offered *Offers[T]
	Adopt   func([]T)
}

type job[T any] struct {
	item       T
	key        string
	tenant     string
	leaseUntil time.Time
	again      time.Time
	offered    bool
}

// Run claims due items and works on them, at most Concurrency at a time,
// until ctx is cancelled; then it waits for the running work to return.
//
// It claims only as many items as it has free workers, so that nothing it
// claims waits out its lease in a queue. It claims again as soon as a worker
// finishes (which is how a payout's next event follows its previous one
// without waiting for a poll), when the poll interval has passed, or when
// woken. A claimed item that may not start yet (its key is busy, or its
// tenant has its share of workers) waits in memory under its lease, briefly;
// one whose lease runs out there is dropped, to be claimed again later.
func Run[T any](ctx context.Context, cfg Config, l Loop[T]) {
	var (
		limit     = cfg.Concurrency
		running   = make(map[string]job[T]) // by key
		perTenant = make(map[string]int)    // running jobs by tenant
		waiting   []job[T]                  // leased items to work on later
		// minLease is no later than the earliest lease in waiting (zero:
		// not known).
		minLease time.Time
		done     = make(chan job[T], limit)
		jobs     = make(chan job[T], limit)
		workers  = 0 // started so far; those not running a job wait on jobs
		wg       sync.WaitGroup
	)
	// Items held back for their tenant wait at most this many at a time;
	// more start anyway, so the share never starves the tenant nor holds
	// more than a worker round of leases idle.
	maxHeldBack := limit
	// wait puts j in waiting, keeping minLease no later than its lease.
	wait := func(j job[T]) {
		waiting = append(waiting, j)
		if !minLease.IsZero() && j.leaseUntil.Before(minLease) {
			minLease = j.leaseUntil
		}
	}
	defer wg.Wait()
	defer close(jobs)
	// Workers outlive their jobs: a goroutine per job would start with a
	// small stack and grow it, copying, through the store's deep calls every
	// time. They are started as the work needs them, up to limit, and end
	// with Run.
	start := func(j job[T]) {
		running[j.key] = j
		perTenant[j.tenant]++
		if workers < len(running) {
			workers++
			wg.Go(func() {
				for j := range jobs {
					j.again = l.Work(ctx, j.item, j.leaseUntil)
					done <- j
				}
			})
		}
		jobs <- j
	}
	finished := func(j job[T]) {
		delete(running, j.key)
		if perTenant[j.tenant]--; perTenant[j.tenant] == 0 {
			delete(perTenant, j.tenant)
		}
		switch {
		case !j.again.IsZero():
			wait(j)
		case j.offered:
			l.Offered.finished()
		}
	}
	var offeredReady <-chan struct{}
	if l.Offered != nil {
		offeredReady = l.Offered.ready
	}
	// A claim that passes over busy tenants reads every due item of theirs
	// (a receiver that hangs, or a load faster than it, leaves thousands):
	// when one comes back short, the next waits a tenth of the poll interval
	// rather than follow every finished worker, so that the scans take a
	// bounded share of the store and other tenants' items still start
	// within a tenth of a poll.
	var nextPassOver time.Time
	passOverWait := cfg.PollInterval / 10
	tenantFull := func(tenant string) bool { return l.Tenant != nil && perTenant[tenant] >= l.PerTenant }
	// startable reports whether a job may start now, time permitting.
	startable := func(j job[T]) bool {
		_, busy := running[j.key]
		return len(running) < limit && !busy && !tenantFull(j.tenant)
	}
	// claim is false after a wake-up that found workers running: their
	// finishing claims anyway, and a claim per commit under load would
	// cost the store more than the work it finds (each walks past the
	// leased items at the head of the queue).
	//
	// A finished offered item claims only when the loop was woken since its
	// last claim: offered work is what the store's word of new work would
	// have brought, so under a load of new payouts the loop claims at its
	// poll, not once per payout.
	claim := true
	woken := false
	for ctx.Err() == nil {
		now := cfg.Now()
		heldBack := 0 // waiting items held back for their tenant's share
		// Once every worker runs, the rest of waiting can only lose items
		// whose lease ran out: none before minLease, so the walk leaves
		// them as they are (a batch's 1,000 offered items wait here, and
		// each finished item walks the list).
		var keptMin time.Time
		skipped := false
		waiting = slices.DeleteFunc(waiting, func(j job[T]) bool {
			if len(running) >= limit && !minLease.IsZero() && now.Before(minLease) {
				skipped = true
				return false
			}
			switch {
			case !j.leaseUntil.After(now): // the lease is gone, and the item with it
				if j.offered {
					l.Offered.finished()
				}
				return true
			case startable(j) && !j.again.After(now):
				start(j)
				return true
			}
			if tenantFull(j.tenant) {
				heldBack++
			}
			if keptMin.IsZero() || j.leaseUntil.Before(keptMin) {
				keptMin = j.leaseUntil
			}
			return false
		})
		if skipped && keptMin.After(minLease) {
			keptMin = minLease // the items passed over are no earlier
		}
		minLease = keptMin
		again := false
		var full []string // tenants with their share of workers
		for tenant := range perTenant {
			if tenantFull(tenant) {
				full = append(full, tenant)
			}
		}
		if free := limit - len(running); free > 0 && claim && (len(full) == 0 || !now.Before(nextPassOver)) {
			n := min(free, cfg.BatchSize)
			leaseUntil := now.Add(cfg.Lease)
			items, err := l.Claim(ctx, now, leaseUntil, n, full)
			woken = false
			if len(full) > 0 && len(items) < n {
				nextPassOver = now.Add(passOverWait)
			}
			if err != nil && ctx.Err() == nil {
				cfg.Quiet.Log(ctx, cfg.Log, slog.LevelWarn, "claim "+l.Name, "claiming "+l.Name+"; will try again", "err", err)
			}
			started, queued := 0, 0
			for _, it := range items {
				j := job[T]{item: it, key: l.Key(it), leaseUntil: leaseUntil}
				if l.Tenant != nil {
					j.tenant = l.Tenant(it)
				}
				r, busy := running[j.key]
				switch {
				case busy && l.ID(it) == l.ID(r.item) && !l.Newer(it, r.item):
					// Our lease ran out while we still work on it: the
					// running worker records the outcome.
					cfg.Log.WarnContext(ctx, "claimed "+l.Name+" still in progress here; leaving it to the running attempt", "id", l.ID(it))
				case busy:
					// A worker has just recorded its outcome for this key
					// but not reported back yet: run this right after it.
					wait(j)
				case tenantFull(j.tenant) && heldBack < maxHeldBack:
					wait(j)
					heldBack++
					queued++
				default:
					start(j)
					started++
				}
			}
			// A full claim means more may be due: claim again while workers
			// are free (items held back keep their leases, so the next claim
			// reaches other workspaces' items).
			again = len(items) == n && started+queued > 0 && len(running) < limit
			claim = again
		}
		if again {
			continue
		}
		wakeAt := now.Add(cfg.PollInterval)
		if len(full) > 0 && nextPassOver.After(now) && nextPassOver.Before(wakeAt) && len(running) < limit {
			wakeAt = nextPassOver
		}
		for _, j := range waiting {
			if len(running) >= limit {
				break // none is startable before a worker finishes, which wakes the loop
			}
			if startable(j) && j.again.Before(wakeAt) {
				wakeAt = j.again
			}
		}
		select {
		case <-ctx.Done():
		case j := <-done:
			finished(j)
			claim = !j.offered || woken
			// Take every other finished worker too, so that one claim
			// fills all the free slots.
			for drained := false; !drained; {
				select {
				case j := <-done:
					finished(j)
					claim = claim || !j.offered
				default:
					drained = true
				}
			}
			continue
		case <-offeredReady:
			offered := l.Offered.take()
			items := make([]T, len(offered))
			for i, o := range offered {
				items[i] = o.Item
			}
			if l.Adopt != nil {
				l.Adopt(items)
			}
			for i, it := range items {
				j := job[T]{item: it, key: l.Key(it), leaseUntil: offered[i].LeaseUntil, offered: true}
				if l.Tenant != nil {
					j.tenant = l.Tenant(it)
				}
				if startable(j) {
					start(j)
				} else {
					wait(j)
				}
			}
			continue
		case <-cfg.At(wakeAt):
		case <-l.Wake:
			woken = true
			claim = len(running) == 0
			continue
		}
		claim = true
	}
}
