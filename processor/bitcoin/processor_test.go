package bitcoin

import (
	"context"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/txscript"
	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/processor/bitcoin/btcdtest"
)

// btcdRig is a btcd --regtest whose mined coins fund a hot wallet, and a
// processor paying from it for an engine, all loops running.
type btcdRig struct {
	node  *btcdtest.Node
	eng   *testEngine
	proc  *Processor
	hooks *webhooks
	key   *LocalKey
}

func newBtcdRig(t *testing.T, eng *testEngine, tweak func(*Config)) *btcdRig {
	t.Helper()
	net := &chaincfg.RegressionNetParams
	priv, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, err := NewLocalKey(hex.EncodeToString(priv.Serialize()), net)
	if err != nil {
		t.Fatal(err)
	}
	node := btcdtest.Start(t, key.Address().EncodeAddress())
	node.Generate(t, btcdtest.ActivationHeight+1)
	cfg := Config{
		Net: net, Signer: key, Rates: FixedRates{"BTC": decimal.RequireFromString("50000")},
		// Scanning from 300 finds 35 mature coinbases of 12.5 BTC, and
		// keeps the scan (slow under the race detector) short.
		StartHeight: 300,
		BatchWindow: time.Second, Confirmations: 2, FeeRateFloor: 2,
		PollInterval: 100 * time.Millisecond, RebroadcastAfter: time.Second, Logger: quiet,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	proc, err := New(context.Background(), eng.db, node.Client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &btcdRig{node: node, eng: eng, proc: proc, key: key}
}

// mine mines a block every interval until the test ends.
func (r *btcdRig) mine(t *testing.T, interval time.Duration) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(interval):
				r.node.Client.Generate(1)
			}
		}
	}()
	t.Cleanup(func() { close(stop); wg.Wait() })
}

// settled waits for the payout to leave submitted, and for its webhook.
func (r *btcdRig) settled(t *testing.T, id string) payoutkit.Payout {
	t.Helper()
	var p payoutkit.Payout
	btcdtest.Wait(t, time.Minute, "payout "+id+" settled", func() bool {
		p = r.eng.status(t, id)
		return p.Status != payoutkit.PayoutSubmitted
	})
	want := "payout.completed"
	if p.Status == payoutkit.PayoutFailed {
		want = "payout.failed"
	}
	btcdtest.Wait(t, time.Minute, "the "+want+" webhook of "+id, func() bool { return r.hooks.Has(id, want) })
	return p
}

// TestBtcdProcessorBatches hands the processor twelve payouts to every
// address type through the engine, and sees them paid in one transaction
// on a real btcd: each address receives exactly its amount, each payout
// completes with its txid, amount and fee share (the shares of a
// transaction adding up to its fee), and the webhooks arrive. A payout to
// a mainnet address, and one below the dust limit, fail.
func TestBtcdProcessorBatches(t *testing.T) {
	t.Parallel() // each test runs a btcd of its own
	eachEngine(t, func(t *testing.T, e *testEngine) {
		ctx := context.Background()
		// A full batch goes at once: the twelve payouts share one
		// transaction however slowly they are handed off.
		r := newBtcdRig(t, e, func(c *Config) { c.MaxBatchSize, c.BatchWindow = 12, time.Hour })
		r.hooks = e.run(t, r.proc)
		r.mine(t, 300*time.Millisecond)

		type sent struct {
			id     string
			addr   btcutil.Address
			amount string
			sats   int64
		}
		var all []sent
		for i := range 3 {
			for j, a := range payees(t, &chaincfg.RegressionNetParams) {
				usd := decimal.NewFromInt(int64(100 + 37*(4*i+j))).Add(decimal.RequireFromString("0.13"))
				sats, _ := decimal.New(usd.Shift(2).IntPart(), 6).QuoRem(decimal.NewFromInt(50000), 0)
				all = append(all, sent{id: fmt.Sprintf("po-%d-%d", i, j), addr: a, amount: usd.StringFixed(2), sats: sats.IntPart()})
			}
		}
		for _, s := range all {
			e.payout(t, s.id, s.amount, s.addr.EncodeAddress())
		}
		e.payout(t, "mainnet", "10.00", "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq")
		e.payout(t, "dust", "0.10", payees(t, &chaincfg.RegressionNetParams)[2].EncodeAddress()) // 200 satoshis

		for _, id := range []string{"mainnet", "dust"} {
			if p := r.settled(t, id); p.Status != payoutkit.PayoutFailed {
				t.Fatalf("payout %s: %s", id, p.Status)
			}
		}
		fees := map[string]decimal.Decimal{}
		for _, s := range all {
			p := r.settled(t, s.id)
			if p.Status != payoutkit.PayoutCompleted || p.TxID == "" || !p.AssetAmount.Decimal.Equal(BTC(s.sats)) || !p.NetworkFee.Valid || p.NetworkFee.Decimal.Sign() <= 0 {
				t.Fatalf("payout %s: %+v, want %d satoshis", s.id, p, s.sats)
			}
			fees[p.TxID] = fees[p.TxID].Add(p.NetworkFee.Decimal)
		}
		t.Logf("%d payouts in %d transactions; stats %+v", len(all), len(fees), r.proc.Stats())
		if len(fees) != 1 {
			t.Errorf("%d payouts in %d transactions", len(all), len(fees))
		}
		for txid, shares := range fees {
			h, _ := chainhash.NewHashFromStr(txid)
			tx, err := r.node.Client.GetRawTransaction(h)
			if err != nil {
				t.Fatal(err)
			}
			var in, out int64
			for _, ti := range tx.MsgTx().TxIn {
				prev, err := r.node.Client.GetRawTransaction(&ti.PreviousOutPoint.Hash)
				if err != nil {
					t.Fatal(err)
				}
				in += prev.MsgTx().TxOut[ti.PreviousOutPoint.Index].Value
			}
			for _, o := range tx.MsgTx().TxOut {
				out += o.Value
			}
			if !shares.Equal(BTC(in - out)) {
				t.Errorf("tx %s: fee %d, the payouts' shares %s", txid, in-out, shares)
			}
		}
		// Each address received exactly its amount, once.
		for _, s := range all {
			p := r.eng.status(t, s.id)
			h, _ := chainhash.NewHashFromStr(p.TxID)
			tx, err := r.node.Client.GetRawTransaction(h)
			if err != nil {
				t.Fatal(err)
			}
			script, _ := txscript.PayToAddrScript(s.addr)
			n := 0
			for _, o := range tx.MsgTx().TxOut {
				if string(o.PkScript) == string(script) {
					n++
					if o.Value != s.sats {
						t.Errorf("%s received %d, want %d", s.id, o.Value, s.sats)
					}
				}
			}
			if n != 1 {
				t.Errorf("%s: %d outputs", s.id, n)
			}
		}
		// A later Submit of a settled payout sends nothing.
		before := r.proc.Stats()
		if err := r.proc.Submit(ctx, e.payoutSubmission(t, all[0].id), e); err != nil {
			t.Fatal(err)
		}
		if after := r.proc.Stats(); after.Broadcasts != before.Broadcasts || after.Batches != before.Batches {
			t.Fatalf("stats %+v, then %+v", before, after)
		}
	})
}
