package httpserver

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter keeps one token bucket per API key prefix. Buckets idle long
// enough to be full again are dropped, so memory follows the keys in use.
type limiter struct {
	rate  rate.Limit
	burst int
	now   func() time.Time

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	lim      *rate.Limiter
	lastSeen time.Time
}

func newLimiter(perSecond float64, burst int, now func() time.Time) *limiter {
	if burst <= 0 {
		burst = max(1, int(math.Ceil(perSecond)))
	}
	return &limiter{rate: rate.Limit(perSecond), burst: burst, now: now, buckets: make(map[string]*bucket)}
}

// idle is how long an unused bucket takes to refill: after that, dropping
// it changes nothing.
func (l *limiter) idle() time.Duration {
	return time.Duration(float64(l.burst)/float64(l.rate)*float64(time.Second)) + time.Second
}

// allow takes a token for key. When none is left it returns false and how
// long until one will be.
func (l *limiter) allow(key string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) > time.Minute {
		l.lastSweep = now
		for k, b := range l.buckets {
			if now.Sub(b.lastSeen) > l.idle() {
				delete(l.buckets, k)
			}
		}
	}
	b := l.buckets[key]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(l.rate, l.burst)}
		l.buckets[key] = b
	}
	b.lastSeen = now
	if b.lim.AllowN(now, 1) {
		return true, 0
	}
	r := b.lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now)
	return false, wait
}
