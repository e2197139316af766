package bitcoin

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/processor/bitcoin/btcdtest"
)

func TestBumpRate(t *testing.T) {
	for _, c := range []struct{ old, estimate, ceiling, want int64 }{
		{1, 1, 100, 2},     // at least one more
		{8, 1, 100, 10},    // at least a quarter more
		{8, 30, 100, 30},   // the estimate when higher
		{8, 30, 9, 9},      // at most the ceiling
		{100, 1, 100, 100}, // at the ceiling: no bump
	} {
		if got := bumpRate(c.old, c.estimate, c.ceiling); got != c.want {
			t.Errorf("bumpRate(%d, %d, %d) = %d, want %d", c.old, c.estimate, c.ceiling, got, c.want)
		}
	}
}

func TestReplaceTx(t *testing.T) {
	prev := []*wire.TxOut{wire.NewTxOut(1_000_000, wallet), wire.NewTxOut(500_000, wallet)}
	build := func(change int64) *wire.MsgTx {
		tx := wire.NewMsgTx(2)
		for i := range prev {
			in := wire.NewTxIn(&wire.OutPoint{Hash: chainhash.Hash{9}, Index: uint32(i)}, nil, nil)
			in.Sequence = wire.MaxTxInSequenceNum - 2
			tx.AddTxIn(in)
		}
		tx.AddTxOut(wire.NewTxOut(600_000, p2tr))
		tx.AddTxOut(wire.NewTxOut(700_000, p2pkh))
		if change > 0 {
			tx.AddTxOut(wire.NewTxOut(change, wallet))
		}
		return tx
	}
	old := build(199_000) // a fee of 1,000
	tx, fee, weight, err := replaceTx(old, prev, 2, wallet, 10, 546)
	if err != nil {
		t.Fatal(err)
	}
	if len(tx.TxIn) != 2 || len(tx.TxOut) != 3 || tx.TxIn[1].PreviousOutPoint != old.TxIn[1].PreviousOutPoint || tx.TxIn[0].Sequence != old.TxIn[0].Sequence ||
		tx.TxOut[0].Value != 600_000 || tx.TxOut[1].Value != 700_000 || fee != VSize(weight)*10 || tx.TxOut[2].Value != 200_000-fee {
		t.Fatalf("replacement %+v, fee %d", tx, fee)
	}
	// Change that would fall below the dust limit goes to the fee: at 784
	// sat/vB the 255 vB with change would leave 80 satoshis of change.
	tx, fee, _, err = replaceTx(old, prev, 2, wallet, 784, 546)
	if err != nil || len(tx.TxOut) != 2 || fee != 200_000 {
		t.Fatalf("%v %d %v", tx, fee, err)
	}
	// No change, and not enough to pay the new rate: no bump.
	if _, _, _, err := replaceTx(build(0), prev, 2, wallet, 10_000, 546); !errors.Is(err, errNoBump) {
		t.Fatalf("err %v", err)
	}
	// A new fee not above the old by the new size: no bump.
	if _, _, _, err := replaceTx(build(199_000), prev, 2, wallet, 1, 546); !errors.Is(err, errNoBump) {
		t.Fatalf("err %v", err)
	}
}

// TestBtcdFeeBump leaves a batch unmined past ReplaceAfter on a real btcd:
// it is replaced (BIP 125) with a higher fee, the replacement confirms and
// settles the payouts with its txid and its fee, and both txids are kept.
// Then a second batch's bump is stored but never reaches the node, and the
// first transaction confirms: it settles the payouts, and the bump is
// marked replaced. Each address is paid once.
func TestBtcdFeeBump(t *testing.T) {
	t.Parallel() // each test runs a btcd of its own
	eachEngine(t, func(t *testing.T, e *testEngine) {
		ctx := context.Background()
		r := newBtcdRig(t, e, nil)
		flaky := &flakyNode{Node: r.node.Client}
		cfg := r.proc.cfg
		cfg.BatchWindow, cfg.ReplaceAfter, cfg.RebroadcastAfter = time.Millisecond, time.Second, time.Hour
		proc, err := New(ctx, e.db, flaky, cfg)
		if err != nil {
			t.Fatal(err)
		}
		batch := func(prefix string, n int) []payoutkit.Submission {
			var subs []payoutkit.Submission
			for i, a := range payees(t, &chaincfg.RegressionNetParams)[:n] {
				sub := e.payout(t, fmt.Sprintf("%s-%d", prefix, i), "700.00", a.EncodeAddress())
				if err := proc.Submit(ctx, sub, e); err != nil {
					t.Fatal(err)
				}
				subs = append(subs, sub)
			}
			time.Sleep(5 * time.Millisecond)
			if err := proc.Tick(ctx, e); err != nil {
				t.Fatal(err)
			}
			return subs
		}
		txsOf := func(batchID string) []txRow {
			var rows []txRow
			if err := e.db.NewSelect().Model(&rows).Where("batch_id = ?", batchID).Order("attempt").Scan(ctx); err != nil {
				t.Fatal(err)
			}
			return rows
		}
		checkPaid := func(subs []payoutkit.Submission, txid string, fee int64) {
			t.Helper()
			var shares int64
			for _, sub := range subs {
				p := e.status(t, sub.PayoutID)
				if p.Status != payoutkit.PayoutCompleted || p.TxID != txid {
					t.Fatalf("payout %s: %s %s, want %s", sub.PayoutID, p.Status, p.TxID, txid)
				}
				shares += p.NetworkFee.Decimal.Shift(8).IntPart()
				script, _ := PayeeScript(sub.Address, &chaincfg.RegressionNetParams)
				if n := outputsTo(t, r, script, btcdtest.ActivationHeight+1); n != 1 {
					t.Fatalf("%s paid %d times", sub.PayoutID, n)
				}
			}
			if shares != fee {
				t.Fatalf("fee shares %d, fee %d", shares, fee)
			}
		}

		// The replacement confirms.
		first := batch("a", 4)
		row, _ := loadPayout(ctx, e.db, first[0].IdempotencyKey)
		time.Sleep(1100 * time.Millisecond)
		if err := proc.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		txs := txsOf(row.BatchID)
		if len(txs) != 2 || txs[1].FeeRate <= txs[0].FeeRate || txs[1].Fee <= txs[0].Fee {
			t.Fatalf("after ReplaceAfter: %+v", txs)
		}
		mp, err := r.node.Client.GetRawMempool()
		if err != nil || len(mp) != 1 || mp[0].String() != txs[1].TxID {
			t.Fatalf("mempool %v, want the bump %s: %v", mp, txs[1].TxID, err)
		}
		if err := proc.Submit(ctx, first[0], e); err != nil { // handed off again: the bump is sent again, nothing new
			t.Fatal(err)
		}
		r.node.Generate(t, 2)
		if err := proc.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		txs = txsOf(row.BatchID)
		if txs[0].State != stateReplaced || txs[1].State != stateConfirmed {
			t.Fatalf("settled: %+v", txs)
		}
		checkPaid(first, txs[1].TxID, txs[1].Fee)

		// The bump is stored but never reaches the node; the first
		// transaction confirms.
		second := batch("b", 3)
		row, _ = loadPayout(ctx, e.db, second[0].IdempotencyKey)
		time.Sleep(1100 * time.Millisecond)
		flaky.down.Store(true)
		if err := proc.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		flaky.down.Store(false)
		if txs = txsOf(row.BatchID); len(txs) != 2 || txs[1].SentAt != 0 {
			t.Fatalf("the unsent bump: %+v", txs)
		}
		r.node.Generate(t, 2)
		if err := proc.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		txs = txsOf(row.BatchID)
		if txs[0].State != stateConfirmed || txs[1].State != stateReplaced {
			t.Fatalf("settled: %+v", txs)
		}
		checkPaid(second, txs[0].TxID, txs[0].Fee)
		if s := proc.Stats(); s.Batches != 2 || s.Bumps != 2 || s.Completed != 7 {
			t.Fatalf("stats %+v", s)
		}
	})
}
