package delivery

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit/internal/logbudget"
)

type item struct {
	id, key, tenant string
}

// queue is a store of due items: a claim takes up to limit of them, passing
// over the tenants in full.
type queue struct {
	mu     sync.Mutex
	items  []item
	claims int
}

func (q *queue) claim(_ context.Context, _, _ time.Time, limit int, full []string) ([]item, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.claims++
	var out []item
	q.items = slices.DeleteFunc(q.items, func(it item) bool {
		if len(out) == limit || slices.Contains(full, it.tenant) {
			return false
		}
		out = append(out, it)
		return true
	})
	return out, nil
}

// gauge records how many items run at once, overall, per key and per
// tenant, and how often each item was worked on.
type gauge struct {
	mu                 sync.Mutex
	running            int
	byKey, byTenant    map[string]int
	maxRunning, maxKey int
	maxTenant          int
	worked             map[string]int
	total              atomic.Int64
}

func newGauge() *gauge {
	return &gauge{byKey: map[string]int{}, byTenant: map[string]int{}, worked: map[string]int{}}
}

func (g *gauge) work(_ context.Context, it item, _ time.Time) time.Time {
	g.mu.Lock()
	g.running++
	g.byKey[it.key]++
	g.byTenant[it.tenant]++
	g.maxRunning = max(g.maxRunning, g.running)
	g.maxKey = max(g.maxKey, g.byKey[it.key])
	g.maxTenant = max(g.maxTenant, g.byTenant[it.tenant])
	g.worked[it.id]++
	g.mu.Unlock()
	time.Sleep(time.Millisecond)
	g.mu.Lock()
	g.running--
	g.byKey[it.key]--
	g.byTenant[it.tenant]--
	g.mu.Unlock()
	g.total.Add(1)
	return time.Time{}
}

func testConfig(concurrency int) Config {
	now := func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }
	return Config{
		Concurrency: concurrency, BatchSize: 5, Lease: time.Minute, PollInterval: 20 * time.Millisecond,
		Now: now, At: func(t time.Time) <-chan time.Time { return time.After(time.Until(t)) },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Quiet: logbudget.New(),
	}
}

// run runs l until want items were worked on.
func run(t *testing.T, cfg Config, l Loop[item], done func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		Run(ctx, cfg, l)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal("the loop did not finish its work")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-returned
}

func loopOver(q *queue, g *gauge) Loop[item] {
	return Loop[item]{
		Name:  "items",
		Claim: q.claim,
		Key:   func(it item) string { return it.key },
		ID:    func(it item) string { return it.id },
		Newer: func(item, item) bool { return true },
		Work:  g.work,
	}
}

// Every claimed item is worked on once, at most Concurrency at a time, one
// per key at a time, and at most PerTenant of one tenant at a time.
func TestRunBoundsTheWork(t *testing.T) {
	q := &queue{}
	const n = 300
	for i := range n {
		q.items = append(q.items, item{id: fmt.Sprint(i), key: fmt.Sprint(i % 25), tenant: fmt.Sprint(i % 4)})
	}
	g := newGauge()
	l := loopOver(q, g)
	l.Tenant, l.PerTenant = func(it item) string { return it.tenant }, 3
	run(t, testConfig(8), l, func() bool { return g.total.Load() == n })
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.maxRunning > 8 || g.maxKey > 1 || g.maxTenant > 3 {
		t.Errorf("at most %d running, %d of a key, %d of a tenant; want 8, 1, 3", g.maxRunning, g.maxKey, g.maxTenant)
	}
	for id, times := range g.worked {
		if times != 1 {
			t.Errorf("item %s worked on %d times", id, times)
		}
	}
}

// Offered items start without a claim, and count out of the offers' room
// once done.
func TestRunTakesOffers(t *testing.T) {
	q := &queue{}
	g := newGauge()
	l := loopOver(q, g)
	l.Offered = NewOffers[item](10)
	var adopted atomic.Int64
	l.Adopt = func(items []item) { adopted.Add(int64(len(items))) }
	cfg := testConfig(4)
	cfg.PollInterval = time.Hour // no poll: only the offers bring work
	until := time.Now().Add(time.Minute)
	for i := range 10 {
		l.Offered.Add(item{id: fmt.Sprint(i), key: fmt.Sprint(i)}, until)
	}
	if l.Offered.Room() {
		t.Fatal("room for an eleventh item of ten")
	}
	run(t, cfg, l, func() bool { return g.total.Load() == 10 && l.Offered.Room() })
	if adopted.Load() != 10 {
		t.Errorf("%d offered items adopted; want 10", adopted.Load())
	}
	if q.claims != 1 {
		t.Errorf("%d claims; want the first one only", q.claims)
	}
}

// An item whose work asks to be run again is, within its lease.
func TestRunWorksAgain(t *testing.T) {
	q := &queue{items: []item{{id: "a", key: "a"}}}
	var calls atomic.Int64
	l := loopOver(q, newGauge())
	l.Work = func(context.Context, item, time.Time) time.Time {
		if calls.Add(1) == 1 {
			return time.Now().Add(5 * time.Millisecond)
		}
		return time.Time{}
	}
	run(t, testConfig(2), l, func() bool { return calls.Load() == 2 })
}

// A wake makes an idle loop claim at once, long before its poll.
func TestRunWakes(t *testing.T) {
	q := &queue{}
	g := newGauge()
	l := loopOver(q, g)
	wake := make(chan struct{}, 1)
	l.Wake = wake
	cfg := testConfig(2)
	cfg.PollInterval = time.Hour
	go func() {
		time.Sleep(20 * time.Millisecond)
		q.mu.Lock()
		q.items = append(q.items, item{id: "late", key: "late"})
		q.mu.Unlock()
		Poke(wake)
	}()
	run(t, cfg, l, func() bool { return g.total.Load() == 1 })
}

func TestRetryDelay(t *testing.T) {
	delays := []time.Duration{10 * time.Second, time.Minute}
	if got := RetryDelay(delays, 0, 2); got != time.Minute {
		t.Errorf("without jitter: %s; want 1m", got)
	}
	for range 100 {
		if got := RetryDelay(delays, 0.1, 1); got < 10*time.Second || got > 11*time.Second {
			t.Fatalf("with jitter 0.1: %s; want 10s to 11s", got)
		}
	}
}

func TestReadsOncePerKey(t *testing.T) {
	r := NewReads[string]()
	var loads atomic.Int64
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			key := fmt.Sprint(i % 2)
			v, err := r.Get(key, func() (string, error) {
				loads.Add(1)
				return "v" + key, nil
			})
			if err != nil || v != "v"+key {
				t.Errorf("Get(%s) = %q, %v", key, v, err)
			}
		})
	}
	wg.Wait()
	if loads.Load() != 2 {
		t.Errorf("%d loads for 2 keys", loads.Load())
	}
}
