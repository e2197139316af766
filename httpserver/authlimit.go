package httpserver

import (
	"container/list"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// The defaults of the failed-authentication limit.
const (
	// DefaultAuthFailureLimit is how many failed authentications one client
	// address may make per DefaultAuthFailureWindow.
	DefaultAuthFailureLimit = 20
	// DefaultAuthFailureWindow is the window of DefaultAuthFailureLimit.
	DefaultAuthFailureWindow = time.Minute
	// DefaultAuthFailureAddresses is how many client addresses the limit
	// tracks at most (about 150 bytes each).
	DefaultAuthFailureAddresses = 16384
)

// failureLimiter counts failed authentications per client address, in
// memory, so that a client guessing keys is refused before each guess costs
// a database lookup. Each address has a token bucket of limit tokens that
// refills at limit per window; each failure takes one, and an address with
// less than one token left is refused until it has one again. Addresses
// with no recent failure have no entry; the table holds at most max
// entries, and a new one evicts the address whose last failure is oldest.
type failureLimiter struct {
	limit  float64
	window time.Duration
	max    int
	now    func() time.Time

	mu      sync.Mutex
	entries map[string]*list.Element // of *failureEntry
	lru     list.List                // front: the latest failure
}

type failureEntry struct {
	addr   string
	tokens float64   // left at the time at
	at     time.Time // when tokens was computed
}

func newFailureLimiter(limit int, window time.Duration, maxAddrs int, now func() time.Time) *failureLimiter {
	return &failureLimiter{
		limit: float64(limit), window: window, max: maxAddrs, now: now,
		entries: make(map[string]*list.Element),
	}
}

// refill brings e's tokens up to now; it reports whether the bucket is full
// again (the entry then says nothing an absent one would not).
func (l *failureLimiter) refill(e *failureEntry, now time.Time) bool {
	if elapsed := now.Sub(e.at); elapsed > 0 {
		e.tokens = min(l.limit, e.tokens+l.limit*elapsed.Seconds()/l.window.Seconds())
		e.at = now
	}
	return e.tokens >= l.limit
}

// wait is how long until e has one token again.
func (l *failureLimiter) wait(e *failureEntry) time.Duration {
	return time.Duration((1 - e.tokens) / l.limit * float64(l.window))
}

// blocked reports whether addr has used up its failures, and how long
// until it may try again. It changes nothing an absent entry would not.
func (l *failureLimiter) blocked(addr string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	el := l.entries[addr]
	if el == nil {
		return false, 0
	}
	e := el.Value.(*failureEntry)
	if l.refill(e, now) {
		l.lru.Remove(el)
		delete(l.entries, addr)
		return false, 0
	}
	if e.tokens >= 1 {
		return false, 0
	}
	return true, l.wait(e)
}

// failed counts one failed authentication of addr. It reports whether this
// failure used up the address's last token (so that the caller logs the
// moment once), and how long the address is refused.
func (l *failureLimiter) failed(addr string) (nowBlocked bool, wait time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var e *failureEntry
	if el := l.entries[addr]; el != nil {
		e = el.Value.(*failureEntry)
		l.refill(e, now)
		l.lru.MoveToFront(el)
	} else {
		if len(l.entries) >= l.max {
			oldest := l.lru.Back()
			l.lru.Remove(oldest)
			delete(l.entries, oldest.Value.(*failureEntry).addr)
		}
		e = &failureEntry{addr: addr, tokens: l.limit, at: now}
		l.entries[addr] = l.lru.PushFront(e)
	}
	before := e.tokens
	e.tokens = max(e.tokens-1, 0)
	if e.tokens >= 1 {
		return false, 0
	}
	return before >= 1, l.wait(e)
}

// clientKey is the limiter's key of a client address: an IPv4 address as
// it is, an IPv6 address by its /64 (one subscriber commonly holds a whole
// /64, so single addresses would be free), anything unparsable as given.
func clientKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is4() {
		return ip.String()
	}
	return netip.PrefixFrom(ip, 64).Masked().String()
}

// remoteHost is the default client address: the host of r.RemoteAddr.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
