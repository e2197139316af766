package evm

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/processortest"
	"github.com/payoutkit/payoutkit/processor/evm/evmtest"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// gethRig is a geth --dev node with a funded hot wallet holding the test
// token, an engine on a real database and the processor between them,
// all loops running.
type gethRig struct {
	node  *evmtest.Node
	token common.Address
	eng   *testEngine
	proc  *Processor
	hooks *webhooks
}

func newGethRig(t *testing.T, newEngine func(testing.TB, []payoutkit.Coin) *testEngine, tweak func(*Config), before func(*Processor)) *gethRig {
	t.Helper()
	node := evmtest.Start(t)
	_, hot := testKey(t)
	node.Fund(t, hot.Address(), evmtest.Ether(10))
	token := node.DeployToken(t, 6, big.NewInt(1_000_000_000_000))
	node.TransferToken(t, token, hot.Address(), big.NewInt(100_000_000_000))
	eng := newEngine(t, nil)
	cfg := Config{
		Networks: []Network{{Name: "ETH", RPCURL: node.URL, ChainID: evmtest.ChainID, Confirmations: 2,
			ExplorerTxURL: "https://explorer.invalid/tx/{txid}",
			Tokens:        []Token{{Ticker: "USDT", Contract: token, Decimals: 6}}}},
		Signer: hot, Rates: FixedRates{"ETH": decimal.RequireFromString("3000")},
		PollInterval: 200 * time.Millisecond, Logger: quiet,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	proc, err := New(context.Background(), eng.db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(proc)
	}
	return &gethRig{node: node, token: token, eng: eng, proc: proc, hooks: eng.run(t, proc)}
}

// settled waits for the payout to leave submitted, and for its webhook.
func (g *gethRig) settled(t *testing.T, id string) payoutkit.Payout {
	t.Helper()
	var p payoutkit.Payout
	evmtest.Wait(t, 2*time.Minute, "payout "+id+" settled", func() bool {
		p = g.eng.status(t, id)
		return p.Status != payoutkit.PayoutSubmitted
	})
	want := "payout.completed"
	if p.Status == payoutkit.PayoutFailed {
		want = "payout.failed"
	}
	evmtest.Wait(t, time.Minute, "the "+want+" webhook of "+id, func() bool { return g.hooks.Has(id, want) })
	return p
}

// checkFee checks the payout's txid is a mined transaction whose fee
// (gas used × effective price) is the payout's network_fee.
func (g *gethRig) checkFee(t *testing.T, p payoutkit.Payout) {
	t.Helper()
	r, err := g.node.Client.TransactionReceipt(context.Background(), common.HexToHash(p.TxID))
	if err != nil {
		t.Fatalf("txid %s: %v", p.TxID, err)
	}
	wei := new(big.Int).Mul(new(big.Int).SetUint64(r.GasUsed), r.EffectiveGasPrice)
	if want := decimal.NewFromBigInt(wei, -18); p.Asset == "ETH" && !p.NetworkFee.Decimal.Equal(want) {
		t.Fatalf("network_fee %s, want %s", p.NetworkFee.Decimal, want)
	}
}

func TestGethPayouts(t *testing.T) {
	for name, open := range map[string]func(testing.TB, []payoutkit.Coin) *testEngine{
		"sqlite": newSQLiteEngine, "postgres": newPostgresEngine,
	} {
		t.Run(name, func(t *testing.T) {
			g := newGethRig(t, open, nil, nil)
			ctx := context.Background()
			alice, bob, carol := recipient(t), recipient(t), recipient(t)
			g.node.Refuse(t, g.token, carol)
			before := g.eng.available(t)
			for _, p := range []struct {
				id, amount, asset string
				to                common.Address
			}{
				{"eth-1", "30.00", "ETH", alice}, {"usdt-1", "12.34", "USDT", bob}, {"usdt-refused", "5.00", "USDT", carol},
			} {
				g.eng.payout(t, p.id, p.amount, p.asset, "ETH", p.to)
			}

			eth := g.settled(t, "eth-1")
			if eth.Status != payoutkit.PayoutCompleted || eth.AssetAmount.Decimal.String() != "0.01" {
				t.Fatalf("eth-1: %s %v %q", eth.Status, eth.AssetAmount, eth.FailureReason)
			}
			if got, _ := g.node.Client.BalanceAt(ctx, alice, nil); got.Cmp(new(big.Int).Div(evmtest.Ether(1), big.NewInt(100))) != 0 {
				t.Fatalf("alice holds %s wei, want exactly 0.01 ETH", got)
			}
			g.checkFee(t, eth)

			usdt := g.settled(t, "usdt-1")
			if usdt.Status != payoutkit.PayoutCompleted || usdt.AssetAmount.Decimal.String() != "12.34" || !usdt.NetworkFee.Valid {
				t.Fatalf("usdt-1: %s %v %v %q", usdt.Status, usdt.AssetAmount, usdt.NetworkFee, usdt.FailureReason)
			}
			if got := g.node.TokenBalance(t, g.token, bob); got.Cmp(big.NewInt(12_340_000)) != 0 {
				t.Fatalf("bob holds %s base units, want 12340000", got)
			}
			g.checkFee(t, usdt)

			refused := g.settled(t, "usdt-refused")
			if refused.Status != payoutkit.PayoutFailed || refused.FailureReason == "" {
				t.Fatalf("usdt-refused: %s %q", refused.Status, refused.FailureReason)
			}
			if g.node.Transfers(t, g.token, carol) != 0 {
				t.Fatal("carol received a transfer")
			}
			// Spent: the two completed payouts; the reverted one is back.
			if after := g.eng.available(t); after != before-3000-1234 {
				t.Fatalf("available %s, want %s less 42.34", after, before)
			}
			if got := g.proc.ExplorerURL("ETH", eth.TxID); got != "https://explorer.invalid/tx/"+eth.TxID {
				t.Fatalf("explorer %q", got)
			}
			// Exactly once: one stored transaction each, one transfer each.
			if n := count(t, g.eng.db, "payoutkit_evm_txs", ""); n != 3 {
				t.Fatalf("%d stored transactions, want 3", n)
			}
			if g.node.Transfers(t, g.token, bob) != 1 {
				t.Fatal("bob received more than one transfer")
			}
		})
	}
}

func TestGethStuckTransactionIsReplacedAndCompletesOnce(t *testing.T) {
	g := newGethRig(t, newSQLiteEngine, func(c *Config) { c.ReplaceAfter = 3 * time.Second }, func(p *Processor) {
		p.firstFees = func(tip, feeCap *big.Int) (*big.Int, *big.Int) {
			return big.NewInt(1), big.NewInt(1) // far under the base fee: never mined
		}
	})
	bob := recipient(t)
	g.eng.payout(t, "stuck-1", "12.34", "USDT", "ETH", bob)
	p := g.settled(t, "stuck-1")
	if p.Status != payoutkit.PayoutCompleted {
		t.Fatalf("%s %q", p.Status, p.FailureReason)
	}
	var hashes []string
	if err := g.eng.db.NewSelect().Table("payoutkit_evm_txs").Column("hash").Order("attempt").Scan(context.Background(), &hashes); err != nil {
		t.Fatal(err)
	}
	if len(hashes) < 2 || p.TxID == hashes[0] {
		t.Fatalf("transactions %v, txid %s: want the first replaced", hashes, p.TxID)
	}
	if got := g.node.TokenBalance(t, g.token, bob); got.Cmp(big.NewInt(12_340_000)) != 0 || g.node.Transfers(t, g.token, bob) != 1 {
		t.Fatalf("bob holds %s in %d transfers, want 12340000 in one", got, g.node.Transfers(t, g.token, bob))
	}
	if g.proc.Stats().Replaced < 1 {
		t.Fatal("no replacement counted")
	}
}

// Two instances (each an engine with its processor, its own connections)
// on one PostgreSQL database and one hot wallet pay 200 payouts: 200
// transfers, 200 distinct nonces.
func TestGethTwoInstancesOneWallet(t *testing.T) {
	dsn := pgtest.Postgres(t)
	node := evmtest.Start(t)
	_, hot := testKey(t)
	node.Fund(t, hot.Address(), evmtest.Ether(10))
	token := node.DeployToken(t, 6, big.NewInt(1_000_000_000_000))
	node.TransferToken(t, token, hot.Address(), big.NewInt(100_000_000_000))
	cfg := Config{
		Networks: []Network{{Name: "ETH", RPCURL: node.URL, ChainID: evmtest.ChainID, Confirmations: 1,
			Tokens: []Token{{Ticker: "USDT", Contract: token, Decimals: 6}}}},
		Signer: hot, PollInterval: 200 * time.Millisecond, Logger: quiet,
	}
	var first *testEngine
	for i := range 2 {
		store, db := processortest.OpenPostgres(t, dsn, quiet)
		e := &testEngine{db: db, store: store}
		if i == 0 {
			e = fundedEngine(t, store, db, nil)
			first = e
		} else {
			e.Engine, e.ws = first.Engine, first.ws
		}
		proc, err := New(context.Background(), db, cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.run(t, proc)
	}
	bob := recipient(t)
	const n = 200
	for i := range n {
		first.payout(t, fmt.Sprintf("p%03d", i), "1.00", "USDT", "ETH", bob)
	}
	evmtest.Wait(t, 5*time.Minute, "200 payouts completed", func() bool {
		l, err := first.ListPayouts(context.Background(), first.ws, payoutkit.ListPayoutsRequest{Status: payoutkit.PayoutCompleted, Limit: 500})
		return err == nil && len(l.Items) == n
	})
	if got := node.Transfers(t, token, bob); got != n {
		t.Fatalf("%d transfers to the recipient, want %d", got, n)
	}
	if got := node.TokenBalance(t, token, bob); got.Cmp(big.NewInt(n*1_000_000)) != 0 {
		t.Fatalf("recipient holds %s, want %d", got, n*1_000_000)
	}
	var nonces []int64
	if err := first.db.NewSelect().Table("payoutkit_evm_transfers").Column("nonce").Scan(context.Background(), &nonces); err != nil {
		t.Fatal(err)
	}
	slices.Sort(nonces)
	if len(slices.Compact(nonces)) != n {
		t.Fatalf("%d distinct nonces, want %d", len(slices.Compact(nonces)), n)
	}
	if c, err := node.Client.NonceAt(context.Background(), hot.Address(), nil); err != nil || c != n {
		t.Fatalf("the wallet's nonce is %d (%v), want %d: one transaction per payout", c, err, n)
	}
}
