// Package delivery runs the engine's leased work: the scheduling that the
// webhook delivery loop and the payout hand-off loop share, with no notion
// of events or payouts. Run claims due items from the store under a lease
// and works on them on a pool of workers; Offers brings it work that the
// engine leased to itself as it created it; Reads shares one read among the
// items of a claim; RetryDelay jitters a retry schedule.
package delivery

import (
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/payoutkit/payoutkit/internal/logbudget"
)

// Config is what Run needs of the engine's DeliveryConfig, defaults applied.
type Config struct {
	// Concurrency is how many items are worked on at once; BatchSize caps
	// one claim.
	Concurrency, BatchSize int
	// Lease is how long claimed work stays reserved; PollInterval how
	// often the store is asked for due work when nothing else came up.
	Lease, PollInterval time.Duration
	// Now is the loops' clock, as stores keep time; At returns a channel
	// that receives once that clock has reached t.
	Now func() time.Time
	At  func(t time.Time) <-chan time.Time
	// Log and Quiet receive the loop's lines; Quiet bounds repeated ones.
	Log   *slog.Logger
	Quiet *logbudget.Budget
}

// Poke makes a loop waiting on wake claim at once; a loop that already has
// a wake-up pending needs no second one.
func Poke(wake chan<- struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}

// RetryDelay returns the wait after failed attempt n (from 1) of a
// schedule: delays[n-1], plus a random wait of up to jitter of it (none when
// jitter is 0), so that items that failed together do not all come back
// together.
func RetryDelay(delays []time.Duration, jitter float64, n int) time.Duration {
	delay := delays[n-1]
	if jitter > 0 {
		delay += time.Duration(rand.Int64N(int64(float64(delay)*jitter) + 1))
	}
	return delay
}

// Reads reads each key once for all the items of one claim: under load a
// claim brings many events of one workspace, and a read per event was a
// large part of a delivery's work. The reads still happen after the claim
// returned, as they did item by item, so no item is worked on with a read
// older than its claim. The zero Reads is not usable; make one with
// NewReads.
type Reads[V any] struct {
	mu   sync.Mutex
	byID map[string]*read[V]
}

// read is one key's read, made by the first item to need it while the
// others of the claim wait for it.
type read[V any] struct {
	once sync.Once
	v    V
	err  error
}

// NewReads returns the reads of one claim.
func NewReads[V any]() *Reads[V] { return &Reads[V]{byID: make(map[string]*read[V], 1)} }

// Get returns what load gave the first item of the claim that asked for
// key, error included.
func (c *Reads[V]) Get(key string, load func() (V, error)) (V, error) {
	c.mu.Lock()
	r := c.byID[key]
	if r == nil {
		r = &read[V]{}
		c.byID[key] = r
	}
	c.mu.Unlock()
	r.once.Do(func() { r.v, r.err = load() })
	return r.v, r.err
}
