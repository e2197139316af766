package httpserver_test

import (
	"context"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/httpserver"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// balanceReads counts how the engine reads a key and a balance: together
// (APIKeyBalance) or one after the other (APIKey, Balance).
type balanceReads struct {
	*memstore.Store
	together, key, balance atomic.Int64
}

func (s *balanceReads) APIKeyBalance(ctx context.Context, prefix string) (payoutkit.APIKey, payoutkit.Balance, error) {
	s.together.Add(1)
	return s.Store.APIKeyBalance(ctx, prefix)
}

func (s *balanceReads) APIKey(ctx context.Context, prefix string) (payoutkit.APIKey, error) {
	s.key.Add(1)
	return s.Store.APIKey(ctx, prefix)
}

func (s *balanceReads) Balance(ctx context.Context, workspaceID string) (payoutkit.Balance, error) {
	s.balance.Add(1)
	return s.Store.Balance(ctx, workspaceID)
}

// metered is a Service that wraps the engine, as the Service interface
// invites (here counting payouts created), without knowing about balances.
type metered struct {
	payoutkit.Service
	created atomic.Int64
}

func (m *metered) CreatePayout(ctx context.Context, workspaceID string, req payoutkit.CreatePayoutRequest) (payoutkit.Payout, bool, error) {
	m.created.Add(1)
	return m.Service.CreatePayout(ctx, workspaceID, req)
}

// A Service that wraps the engine serves GET /v1/balance correctly and
// keeps its one-query read of the key and the balance.
func TestWrappedServiceKeepsOneQueryBalance(t *testing.T) {
	mem := memstore.New()
	reads := &balanceReads{Store: mem}
	engine, err := payoutkit.New(reads, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, mem, engine, &metered{Service: engine}, httpserver.Options{})
	ws, key := e.workspace()
	e.fund(ws, "12.34")
	reads.together.Store(0)
	reads.key.Store(0)
	reads.balance.Store(0)

	b, err := e.client(key).Balance(t.Context())
	if err != nil || b.Available.String() != "12.34" || b.InProgress.String() != "0.00" {
		t.Fatalf("balance through the wrapper = %+v, %v; want 12.34 available", b, err)
	}
	if got := [3]int64{reads.together.Load(), reads.key.Load(), reads.balance.Load()}; got != [3]int64{1, 0, 0} {
		t.Fatalf("reads (together, key, balance) = %v; want one read of both together", got)
	}
	e.do("GET", "/v1/balance", "sk_AAAAAAAA_"+"00000000000000000000000000000000", nil).wantCode(t, 40100)
}
