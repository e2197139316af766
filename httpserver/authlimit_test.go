package httpserver_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/httpserver"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// countingStore counts the store calls authentication makes (APIKey,
// APIKeyBalance, TouchAPIKey) and every workspace read.
type countingStore struct {
	payoutkit.Store
	calls atomic.Int64
}

func (s *countingStore) APIKey(ctx context.Context, prefix string) (payoutkit.APIKey, error) {
	s.calls.Add(1)
	return s.Store.APIKey(ctx, prefix)
}

// APIKeyBalance is the key read of GET /v1/balance, which a wrapped store
// keeps (it is part of payoutkit.Store).
func (s *countingStore) APIKeyBalance(ctx context.Context, prefix string) (payoutkit.APIKey, payoutkit.Balance, error) {
	s.calls.Add(1)
	return s.Store.APIKeyBalance(ctx, prefix)
}

func (s *countingStore) TouchAPIKey(ctx context.Context, prefix string, at time.Time) error {
	s.calls.Add(1)
	return s.Store.TouchAPIKey(ctx, prefix, at)
}

func (s *countingStore) Workspace(ctx context.Context, id string) (payoutkit.Workspace, error) {
	s.calls.Add(1)
	return s.Store.Workspace(ctx, id)
}

// fakeNow is a clock the test moves.
type fakeNow struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeNow) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeNow) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// from returns a copy of e whose requests come from the loopback address
// ip (any of 127.0.0.0/8), through the same real listener.
func (e *env) from(ip string) *env {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: dialer.DialContext}
	e.t.Cleanup(tr.CloseIdleConnections)
	c := *e
	c.http = &http.Client{Transport: &validatingTransport{t: e.t, next: tr}}
	return &c
}

func countingEnv(t *testing.T, opts httpserver.Options) (*env, *countingStore) {
	t.Helper()
	mem := memstore.New()
	counting := &countingStore{Store: mem}
	engine, err := payoutkit.New(counting, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, mem, engine, engine, opts), counting
}

// The rate limit is per workspace: two keys of one workspace share one
// bucket, another workspace has its own; the answer is 42900 with
// Retry-After, as for one key.
func TestRateLimitPerWorkspace(t *testing.T) {
	clock := &fakeNow{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	e := newEnv(t, httpserver.Options{RateLimit: 0.5, RateBurst: 2, Now: clock.Now})
	ws, key1 := e.workspace()
	second, err := e.engine.CreateAPIKey(context.Background(), ws, payoutkit.CreateAPIKeyRequest{}, payoutkit.ActorCLI)
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey := e.workspace()
	e.do("GET", "/v1/balance", key1, nil).wantCode(t, 0)
	e.do("GET", "/v1/balance", second.Key, nil).wantCode(t, 0)
	for _, k := range []string{key1, second.Key} {
		r := e.do("GET", "/v1/balance", k, nil).wantCode(t, 42900)
		if got := r.header.Get("Retry-After"); got != "2" {
			t.Fatalf("Retry-After %q, want 2", got)
		}
	}
	e.do("GET", "/v1/balance", otherKey, nil).wantCode(t, 0)
	clock.Advance(2 * time.Second)
	e.do("GET", "/v1/balance", second.Key, nil).wantCode(t, 0)
	e.do("GET", "/v1/balance", key1, nil).wantCode(t, 42900)
}

// After 20 failed authentications in a minute, an address is answered 42900
// with Retry-After before the store is asked, whatever key it sends; other
// addresses, and successes, are unaffected; tokens come back with time.
func TestFailedAuthLimitPerAddress(t *testing.T) {
	clock := &fakeNow{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	e, store := countingEnv(t, httpserver.Options{Now: clock.Now})
	logs := e.logs
	_, key := e.workspace()
	unknown := "sk_ZZZZZZZZ_" + strings.Repeat("b", 32) // well formed: each try costs a lookup
	attacker, neighbour, busy := e.from("127.0.0.1"), e.from("127.0.0.2"), e.from("127.0.0.3")

	for i := range httpserver.DefaultAuthFailureLimit {
		attacker.do("GET", "/v1/balance", unknown, nil).wantCode(t, 40100)
		if got := store.calls.Load(); got != int64(i+1) {
			t.Fatalf("after %d failures, %d store calls", i+1, got)
		}
	}
	before := store.calls.Load()
	for _, k := range []string{unknown, key, ""} {
		r := attacker.do("GET", "/v1/balance", k, nil).wantCode(t, 42900)
		if got := r.header.Get("Retry-After"); got != "3" { // 20 per minute: one every 3 s
			t.Fatalf("Retry-After %q, want 3", got)
		}
		attacker.do("POST", "/v1/payouts", k, `{}`).wantCode(t, 42900)
	}
	if got := store.calls.Load(); got != before {
		t.Fatalf("a refused address cost %d store calls", got-before)
	}
	if n := strings.Count(logs.String(), "too many failed authentications"); n != 1 {
		t.Fatalf("%d warnings logged; want 1:\n%s", n, logs)
	}
	if strings.Contains(logs.String(), unknown[12:]) {
		t.Fatal("a key reached the logs")
	}
	// Unauthenticated paths are not limited.
	attacker.do("GET", "/v1/openapi.yaml", "", nil)
	attacker.do("GET", "/v1/nope", "", nil).wantCode(t, 40400)

	// A valid key from another address works, and that address has its own
	// count.
	neighbour.do("GET", "/v1/balance", key, nil).wantCode(t, 0)
	neighbour.do("GET", "/v1/balance", unknown, nil).wantCode(t, 40100)
	neighbour.do("GET", "/v1/balance", key, nil).wantCode(t, 0)

	// Successes never count: many of them, then 19 failures, and the
	// address still authenticates.
	for range 50 {
		busy.do("GET", "/v1/balance", key, nil).wantCode(t, 0)
	}
	for range httpserver.DefaultAuthFailureLimit - 1 {
		busy.do("GET", "/v1/balance", unknown, nil).wantCode(t, 40100)
	}
	busy.do("GET", "/v1/balance", key, nil).wantCode(t, 0)

	// One token is back after 3 s: one more try, then refused again.
	clock.Advance(3 * time.Second)
	attacker.do("GET", "/v1/balance", key, nil).wantCode(t, 0)
	attacker.do("GET", "/v1/balance", unknown, nil).wantCode(t, 40100)
	attacker.do("GET", "/v1/balance", key, nil).wantCode(t, 42900)
	// A whole window later the address is forgotten.
	clock.Advance(time.Minute)
	attacker.do("GET", "/v1/balance", key, nil).wantCode(t, 0)
}

// The limit is configurable: a lower limit and window, or off.
func TestFailedAuthLimitOptions(t *testing.T) {
	e, store := countingEnv(t, httpserver.Options{AuthFailureLimit: 2, AuthFailureWindow: time.Hour})
	unknown := "sk_ZZZZZZZZ_" + strings.Repeat("b", 32)
	e.do("GET", "/v1/balance", unknown, nil).wantCode(t, 40100)
	e.do("GET", "/v1/balance", unknown, nil).wantCode(t, 40100)
	if r := e.do("GET", "/v1/balance", unknown, nil).wantCode(t, 42900); r.header.Get("Retry-After") != "1800" {
		t.Fatalf("Retry-After %q, want 1800", r.header.Get("Retry-After"))
	}
	if store.calls.Load() != 2 {
		t.Fatalf("%d store calls", store.calls.Load())
	}

	off, _ := countingEnv(t, httpserver.Options{AuthFailureLimit: -1})
	for range 3 * httpserver.DefaultAuthFailureLimit {
		off.do("GET", "/v1/balance", unknown, nil).wantCode(t, 40100)
	}

	// Behind a proxy, ClientAddress names the client.
	proxied, _ := countingEnv(t, httpserver.Options{AuthFailureLimit: 1, ClientAddress: func(r *http.Request) string {
		return r.Header.Get("X-Test-Client")
	}})
	proxied.do("GET", "/v1/balance", unknown, nil, "X-Test-Client", "203.0.113.7").wantCode(t, 40100)
	proxied.do("GET", "/v1/balance", unknown, nil, "X-Test-Client", "203.0.113.7").wantCode(t, 42900)
	proxied.do("GET", "/v1/balance", unknown, nil, "X-Test-Client", "203.0.113.8").wantCode(t, 40100)
}
