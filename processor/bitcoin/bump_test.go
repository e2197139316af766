package bitcoin

import (
	"bytes"
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
	tx, fee, weight, err := replaceTx(old, prev, nil, 2, wallet, 10, 546)
	if err != nil {
		t.Fatal(err)
	}
	if len(tx.TxIn) != 2 || len(tx.TxOut) != 3 || tx.TxIn[1].PreviousOutPoint != old.TxIn[1].PreviousOutPoint || tx.TxIn[0].Sequence != old.TxIn[0].Sequence ||
		tx.TxOut[0].Value != 600_000 || tx.TxOut[1].Value != 700_000 || fee != VSize(weight)*10 || tx.TxOut[2].Value != 200_000-fee {
		t.Fatalf("replacement %+v, fee %d", tx, fee)
	}
	// Change that would fall below the dust limit goes to the fee: at 784
	// sat/vB the 255 vB with change would leave 80 satoshis of change.
	tx, fee, _, err = replaceTx(old, prev, nil, 2, wallet, 784, 546)
	if err != nil || len(tx.TxOut) != 2 || fee != 200_000 {
		t.Fatalf("%v %d %v", tx, fee, err)
	}
	// No change, and not enough to pay the new rate: it needs an input.
	if _, _, _, err := replaceTx(build(0), prev, nil, 2, wallet, 10_000, 546); !errors.Is(err, errNeedsInput) || !errors.Is(err, errNoBump) {
		t.Fatalf("err %v", err)
	}
	// A rate whose fee would not exceed the old by the new size (BIP 125's
	// incremental relay fee) pays the old fee and the new size.
	tx, fee, weight, err = replaceTx(build(199_000), prev, nil, 2, wallet, 1, 546)
	if err != nil || fee != 1_000+VSize(weight) || tx.TxOut[2].Value != 200_000-fee {
		t.Fatalf("%v %d %v", tx, fee, err)
	}
	// Without change (a fee of 200,000), nothing is left to pay a higher
	// fee: an output of the wallet's pays it, appended as an input,
	// replaceable, with change of its own.
	if _, _, _, err := replaceTx(build(0), prev, nil, 2, wallet, 10, 546); !errors.Is(err, errNeedsInput) {
		t.Fatalf("err %v", err)
	}
	extra := Utxo{OutPoint: wire.OutPoint{Hash: chainhash.Hash{7}, Index: 3}, Value: 50_000, PkScript: wallet, Confirmations: 6}
	tx, fee, weight, err = replaceTx(build(0), prev, []Utxo{extra}, 2, wallet, 10, 546)
	if err != nil || len(tx.TxIn) != 3 || tx.TxIn[2].PreviousOutPoint != extra.OutPoint || tx.TxIn[2].Sequence != wire.MaxTxInSequenceNum-2 ||
		len(tx.TxOut) != 3 || fee != 200_000+VSize(weight) || tx.TxOut[2].Value != 50_000-VSize(weight) {
		t.Fatalf("with an extra input: %+v, fee %d, %v", tx, fee, err)
	}
	// Too small an extra output still falls short.
	extra.Value = 500
	if _, _, _, err := replaceTx(build(0), prev, []Utxo{extra}, 2, wallet, 10_000, 546); !errors.Is(err, errNeedsInput) {
		t.Fatalf("err %v", err)
	}
}

// TestBtcdFeeBump leaves a batch unmined past ReplaceAfter on a real btcd:
// it is replaced (BIP 125) with a higher fee, the replacement confirms and
// settles the payouts with its txid and its fee, and both txids are kept.
// A reorg then takes the replacement's block away after it settled: it is
// watched again and mined again, once. Then a second batch's bump is
// stored but never reaches the node, and the first transaction confirms:
// it settles the payouts, and the bump is marked replaced. Each address is
// paid once.
func TestBtcdFeeBump(t *testing.T) {
	t.Parallel() // each test runs a btcd of its own
	eachEngine(t, func(t *testing.T, e *testEngine) {
		ctx := context.Background()
		r, flaky, proc := newBumpRig(t, e, nil)
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

		// A reorg takes the settled replacement's block away: it is watched
		// again, its payouts stay completed, and the new chain mines it
		// once.
		mined, err := r.node.Client.GetBlockHash(txs[1].Height)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.node.Client.InvalidateBlock(mined); err != nil {
			t.Fatal(err)
		}
		if err := proc.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		if txs = txsOf(row.BatchID); txs[1].Height != 0 || txs[1].State != stateConfirmed || txs[0].State != stateReplaced {
			t.Fatalf("after the reorg: %+v", txs)
		}
		time.Sleep(1100 * time.Millisecond) // another timestamp: the new blocks differ from those taken away
		r.node.Generate(t, 3)
		if err := proc.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		if txs = txsOf(row.BatchID); txs[1].Height == 0 || txs[1].State != stateConfirmed {
			t.Fatalf("in the new chain: %+v", txs)
		}
		if h, _ := r.node.Client.GetBlockHash(txs[1].Height); *h == *mined {
			t.Fatal("the block taken away is back")
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

// TestBtcdFeeBumpAddsInput bumps batches whose transaction has no change:
// the higher fee needs another of the wallet's outputs. The first bump,
// with its added input, confirms, and that input is spent. The second
// batch's bump is stored but its first transaction confirms instead: the
// input the bump added goes back to the wallet. A third batch's bump has
// its added input spent elsewhere: only that bump is conflicted, and the
// batch's next bump confirms. Each payout is paid once.
func TestBtcdFeeBumpAddsInput(t *testing.T) {
	t.Parallel() // each test runs a btcd of its own
	eachEngine(t, func(t *testing.T, e *testEngine) {
		ctx := context.Background()
		// From 334, one mature coinbase of 12.5 BTC; each block mined
		// matures the next.
		r, flaky, proc := newBumpRig(t, e, func(c *Config) { c.StartHeight = 334 })
		tick := func() {
			t.Helper()
			if err := proc.Tick(ctx, e); err != nil && !flaky.down.Load() {
				t.Fatal(err)
			}
		}
		// A batch of one payout that leaves 500 satoshis of a coinbase:
		// too little for change, so all of it is the fee.
		batch := func(id string) (payoutkit.Submission, txRow) {
			t.Helper()
			a := payees(t, &chaincfg.RegressionNetParams)[2]
			sub := e.payout(t, id, "624999.75", a.EncodeAddress()) // 1,249,999,500 satoshis
			if err := proc.Submit(ctx, sub, e); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
			flaky.down.Store(true) // stored, not broadcast: no block mines it
			tick()
			row, _ := loadPayout(ctx, e.db, sub.IdempotencyKey)
			txs := batchTxs(t, e, row.BatchID)
			if tx := decodeTx(t, txs[0].Raw); len(txs) != 1 || len(tx.TxIn) != 1 || len(tx.TxOut) != 1 || txs[0].Fee != 500 {
				t.Fatalf("the first transaction: %+v", txs)
			}
			r.node.Generate(t, 1) // matures another coinbase
			time.Sleep(1100 * time.Millisecond)
			return sub, txs[0]
		}
		reservedBy := func(op wire.OutPoint) utxoRow {
			t.Helper()
			var u utxoRow
			if err := e.db.NewSelect().Model(&u).Where("txid = ? AND vout = ?", op.Hash.String(), int64(op.Index)).Scan(ctx); err != nil {
				t.Fatal(err)
			}
			return u
		}

		// The bump, with an input added, confirms.
		sub, first := batch("a")
		flaky.down.Store(false)
		tick()
		txs := batchTxs(t, e, first.BatchID)
		bump := decodeTx(t, txs[len(txs)-1].Raw)
		if len(txs) != 2 || len(bump.TxIn) != 2 || len(bump.TxOut) != 2 || txs[1].Fee <= first.Fee {
			t.Fatalf("the bump: %+v", txs)
		}
		added := bump.TxIn[1].PreviousOutPoint
		if u := reservedBy(added); u.ReservedBy != first.BatchID {
			t.Fatalf("the added input %+v", u)
		}
		r.node.Generate(t, 2)
		tick()
		if p := e.status(t, sub.PayoutID); p.Status != payoutkit.PayoutCompleted || p.TxID != txs[1].TxID ||
			p.NetworkFee.Decimal.Shift(8).IntPart() != txs[1].Fee {
			t.Fatalf("payout a: %+v", p)
		}
		if u := reservedBy(added); u.SpentTxID != txs[1].TxID {
			t.Fatalf("the added input %+v", u)
		}

		// The bump is stored but never sent; the first transaction reaches
		// a miner and confirms. The input the bump added is released.
		sub, first = batch("b")
		tick() // the node still down: the bump is stored, not sent
		txs = batchTxs(t, e, first.BatchID)
		if len(txs) != 2 || txs[1].SentAt != 0 {
			t.Fatalf("the unsent bump: %+v", txs)
		}
		added = decodeTx(t, txs[1].Raw).TxIn[1].PreviousOutPoint
		flaky.down.Store(false)
		if _, err := r.node.Client.SendRawTransaction(decodeTx(t, first.Raw), false); err != nil {
			t.Fatal(err)
		}
		r.node.Generate(t, 2)
		tick()
		txs = batchTxs(t, e, first.BatchID)
		if txs[0].State != stateConfirmed || txs[1].State != stateReplaced {
			t.Fatalf("settled: %+v", txs)
		}
		if p := e.status(t, sub.PayoutID); p.Status != payoutkit.PayoutCompleted || p.TxID != first.TxID {
			t.Fatalf("payout b: %+v", p)
		}
		if u := reservedBy(added); u.ReservedBy != "" || u.SpentTxID != "" {
			t.Fatalf("the input the unsent bump added: %+v", u)
		}
		// The input a stored bump added is spent elsewhere (the key used
		// outside the processor): only that bump is conflicted, the first
		// transaction stands, and its next bump, with another input, is the
		// batch's third attempt and confirms.
		sub, first = batch("c")
		tick() // the node still down: the bump is stored, not sent
		txs = batchTxs(t, e, first.BatchID)
		added = decodeTx(t, txs[1].Raw).TxIn[1].PreviousOutPoint
		r.spendElsewhere(t, e, added)
		r.node.Generate(t, 2) // the foreign spend Confirmations deep
		tick()                // the bump conflicted; the first transaction bumped again
		flaky.down.Store(false)
		tick() // the new bump sent
		r.node.Generate(t, 2)
		tick()
		txs = batchTxs(t, e, first.BatchID)
		if len(txs) != 3 || txs[0].State != stateReplaced || txs[1].State != stateConflicted || txs[2].State != stateConfirmed ||
			txs[2].Attempt != 3 || decodeTx(t, txs[2].Raw).TxIn[1].PreviousOutPoint == added {
			t.Fatalf("after the added input's conflict: %+v", txs)
		}
		if p := e.status(t, sub.PayoutID); p.Status != payoutkit.PayoutCompleted || p.TxID != txs[2].TxID {
			t.Fatalf("payout c: %+v", p)
		}
		for _, id := range []string{"a", "b", "c"} {
			script, _ := PayeeScript(e.status(t, id).Address, &chaincfg.RegressionNetParams)
			if n := outputsTo(t, r, script, btcdtest.ActivationHeight+1); n != 1 {
				t.Fatalf("%s paid %d times", id, n)
			}
		}
	})
}

// newBumpRig is a btcd rig and a processor of its wallet through a node
// whose broadcasts can fail, batching at once, bumping after a second and
// rebroadcasting only when a test says.
func newBumpRig(t *testing.T, e *testEngine, tweak func(*Config)) (*btcdRig, *flakyNode, *Processor) {
	t.Helper()
	r := newBtcdRig(t, e, tweak)
	flaky := &flakyNode{Node: r.node.Client}
	cfg := r.proc.cfg
	cfg.BatchWindow, cfg.ReplaceAfter, cfg.RebroadcastAfter = time.Millisecond, time.Second, time.Hour
	proc, err := New(context.Background(), e.db, flaky, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, flaky, proc
}

// batchTxs returns a batch's stored transactions, first to last.
func batchTxs(t *testing.T, e *testEngine, batchID string) []txRow {
	t.Helper()
	var rows []txRow
	if err := e.db.NewSelect().Model(&rows).Where("batch_id = ?", batchID).Order("attempt").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rows
}

func decodeTx(t *testing.T, raw []byte) *wire.MsgTx {
	t.Helper()
	tx := wire.NewMsgTx(2)
	if err := tx.Deserialize(bytes.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
	return tx
}
