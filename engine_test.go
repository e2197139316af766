package payoutkit_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

func newEngine(t testing.TB, cfg *payoutkit.Config) *payoutkit.Engine {
	t.Helper()
	if cfg == nil {
		cfg = &payoutkit.Config{}
	}
	cfg.PasswordCost = bcrypt.MinCost
	eng, err := payoutkit.New(memstore.New(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := payoutkit.New(nil, nil); err == nil {
		t.Error("New accepted a nil store")
	}
	_, err := payoutkit.New(memstore.New(), &payoutkit.Config{Coins: []payoutkit.Coin{{Ticker: "FOO", Network: "FOONET"}}})
	if err == nil || !strings.Contains(err.Error(), "FOONET") {
		t.Errorf("unknown network: %v", err)
	}
}

func TestCustomCoins(t *testing.T) {
	eng := newEngine(t, &payoutkit.Config{
		Coins: []payoutkit.Coin{{Ticker: "USDT", Network: "TRON", Name: "Tether"}, {Ticker: "FOO", Network: "FOONET", Name: "Foo"}},
		AddressValidators: map[string]func(string) error{"FOONET": func(a string) error {
			if !strings.HasPrefix(a, "foo:") {
				return errors.New("not foo")
			}
			return nil
		}},
	})
	ctx := t.Context()
	coins, _ := eng.Coins(ctx, "ws")
	if len(coins) != 2 || coins[1].Network != "FOONET" {
		t.Fatalf("coins = %+v", coins)
	}
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	ws := nw.Workspace.ID
	fund(t, eng, ws, "10")
	req := payoutkit.CreatePayoutRequest{PayoutID: "p1", Amount: "1", Asset: "foo", Network: "foonet", Address: "bar", PayerID: "c"}
	if _, _, err := eng.CreatePayout(ctx, ws, req); !errors.Is(err, payoutkit.ErrInvalidInput) || !strings.Contains(err.Error(), "address") {
		t.Fatalf("bad custom address: %v", err)
	}
	req.Address = "foo:bar"
	p, _, err := eng.CreatePayout(ctx, ws, req)
	if err != nil || p.Asset != "FOO" || p.Network != "FOONET" {
		t.Fatalf("custom coin payout = %+v, %v", p, err)
	}
	// BTC is not in this list.
	req = payoutkit.CreatePayoutRequest{PayoutID: "p2", Amount: "1", Asset: "BTC", Network: "BTC", Address: "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", PayerID: "c"}
	if _, _, err := eng.CreatePayout(ctx, ws, req); !errors.Is(err, payoutkit.ErrInvalidInput) {
		t.Fatalf("unlisted coin: %v", err)
	}
}

func TestDefaultCoinsCoverContract(t *testing.T) {
	eng := newEngine(t, nil)
	coins, _ := eng.Coins(t.Context(), "ws")
	got := map[string]bool{}
	for _, c := range coins {
		got[c.Ticker+"/"+c.Network] = true
		if c.Name == "" {
			t.Errorf("coin %+v has no name", c)
		}
	}
	for _, want := range []string{
		"BTC/BTC", "LTC/LTC", "DOGE/DOGE", "ETH/ETH", "USDT/ETH", "USDC/ETH", "BNB/BSC", "USDT/BSC",
		"POL/POLYGON", "USDT/POLYGON", "TRX/TRON", "USDT/TRON", "SOL/SOL", "USDC/SOL", "TON/TON", "USDT/TON", "XRP/XRP",
	} {
		if !got[want] {
			t.Errorf("default coins lack %s", want)
		}
	}
	if len(coins) != 17 {
		t.Errorf("%d default coins; want 17", len(coins))
	}
}

func fund(t testing.TB, eng *payoutkit.Engine, ws, amount string) {
	t.Helper()
	ctx := context.Background()
	id := "fund-" + amount
	if _, _, err := eng.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: id, Amount: amount}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.MarkOrderPaid(ctx, ws, id); err != nil {
		t.Fatal(err)
	}
}

// FuzzAuthenticate feeds arbitrary Authorization values: none may panic, and
// only the workspace's own key, in one of the accepted forms, authenticates.
func FuzzAuthenticate(f *testing.F) {
	eng := newEngine(f, nil)
	nw, err := eng.CreateWorkspace(context.Background(), payoutkit.CreateWorkspaceRequest{Name: "x"})
	if err != nil {
		f.Fatal(err)
	}
	key := nw.APIKey.Key
	for _, s := range []string{key, "Bearer " + key, "bearer  " + key, "Basic " + key, "", "Bearer", "sk__", key + "\x00", "Bearer\t" + key} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		p, err := eng.Authenticate(context.Background(), h, netip.Addr{})
		if err != nil {
			if !errors.Is(err, payoutkit.ErrUnauthorized) {
				t.Fatalf("Authenticate(%q) = %v; want ErrUnauthorized", h, err)
			}
			return
		}
		if !strings.HasSuffix(h, key) || p.WorkspaceID != nw.Workspace.ID {
			t.Fatalf("Authenticate(%q) accepted as %+v", h, p)
		}
	})
}

// Many instances bootstrapping one store at once create one workspace.
func TestBootstrapOnce(t *testing.T) {
	store := memstore.New()
	var created atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			eng, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost})
			if err != nil {
				t.Error(err)
				return
			}
			_, ok, err := eng.Bootstrap(t.Context())
			if err != nil {
				t.Error(err)
			}
			if ok {
				created.Add(1)
			}
		})
	}
	wg.Wait()
	if ids, _ := store.WorkspaceIDs(t.Context()); created.Load() != 1 || len(ids) != 1 {
		t.Fatalf("%d bootstraps reported, workspaces %v; want 1 and 1", created.Load(), ids)
	}
}

// plainStore is a Store wrapped by its caller: it has only the Store
// interface's methods, which include every capability the engine uses.
type plainStore struct{ payoutkit.Store }

// Over a store wrapped by its caller, AuthenticateBalance gives the same
// answers: the one-query read is part of the Store contract, so the
// wrapper keeps it.
func TestAuthenticateBalanceThroughWrappedStore(t *testing.T) {
	ctx := t.Context()
	eng, err := payoutkit.New(plainStore{memstore.New()}, &payoutkit.Config{PasswordCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Plain"})
	if err != nil {
		t.Fatal(err)
	}
	o, _, err := eng.CreateOrder(ctx, nw.Workspace.ID, payoutkit.CreateOrderRequest{OrderID: "o-1", Amount: "7.50"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.MarkOrderPaid(ctx, nw.Workspace.ID, o.OrderID); err != nil {
		t.Fatal(err)
	}
	p, b, err := eng.AuthenticateBalance(ctx, "Bearer "+nw.APIKey.Key, netip.Addr{})
	if err != nil || p.WorkspaceID != nw.Workspace.ID || b.Available.String() != "7.50" {
		t.Fatalf("AuthenticateBalance = %+v, %+v, %v; want the workspace with 7.50 available", p, b, err)
	}
	if _, err := eng.RevokeAPIKey(ctx, nw.Workspace.ID, nw.APIKey.Prefix, payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	if _, b, err := eng.AuthenticateBalance(ctx, "Bearer "+nw.APIKey.Key, netip.Addr{}); !errors.Is(err, payoutkit.ErrUnauthorized) || b != (payoutkit.Balance{}) {
		t.Fatalf("revoked key: %+v, %v; want ErrUnauthorized and no balance", b, err)
	}
}
