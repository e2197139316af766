package httpserver

import (
	"fmt"
	"testing"
	"time"
)

func TestFailureLimiterBoundedMemory(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newFailureLimiter(2, time.Minute, 3, func() time.Time { return now })
	// "a" is blocked; then three other addresses fail once each.
	l.failed("a")
	if nowBlocked, wait := l.failed("a"); !nowBlocked || wait != 30*time.Second {
		t.Fatalf("second failure of a: %v, %v", nowBlocked, wait)
	}
	if blocked, _ := l.blocked("a"); !blocked {
		t.Fatal("a not blocked")
	}
	for i := range 3 {
		l.failed(fmt.Sprint("b", i))
	}
	// The table holds three addresses: a, the oldest, was evicted.
	if len(l.entries) != 3 || l.lru.Len() != 3 {
		t.Fatalf("%d entries, %d in the list", len(l.entries), l.lru.Len())
	}
	if blocked, _ := l.blocked("a"); blocked {
		t.Fatal("a is still tracked")
	}
	// A refilled bucket is dropped when looked at.
	now = now.Add(time.Minute)
	for i := range 3 {
		if blocked, _ := l.blocked(fmt.Sprint("b", i)); blocked {
			t.Fatal("blocked after a window")
		}
	}
	if len(l.entries) != 0 || l.lru.Len() != 0 {
		t.Fatalf("%d entries left after refill", len(l.entries))
	}
}

func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1":            "192.0.2.1",
		"::ffff:192.0.2.1":     "192.0.2.1",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::/64",
		"fe80::1%eth0":         "fe80::/64",
		"not an address":       "not an address",
		"2001:db8:1:3:3:4:5:6": "2001:db8:1:3::/64",
	} {
		if got := clientKey(in); got != want {
			t.Errorf("clientKey(%q) = %q, want %q", in, got, want)
		}
	}
}
