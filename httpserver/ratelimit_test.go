package httpserver

import (
	"testing"
	"time"
)

func TestLimiterBucketsAndSweep(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLimiter(2, 0, func() time.Time { return now }) // burst defaults to 2
	for range 2 {
		if ok, _ := l.allow("a"); !ok {
			t.Fatal("burst refused")
		}
	}
	ok, wait := l.allow("a")
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("third request: %v, wait %v", ok, wait)
	}
	// A refused request takes no token: half a second later one is back.
	now = now.Add(500 * time.Millisecond)
	if ok, _ := l.allow("a"); !ok {
		t.Fatal("token not refilled")
	}
	// Idle buckets are dropped on the next sweep.
	now = now.Add(2 * time.Minute)
	l.allow("b")
	if _, kept := l.buckets["a"]; kept || len(l.buckets) != 1 {
		t.Fatalf("buckets after sweep: %v", l.buckets)
	}
}
