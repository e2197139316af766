package bitcoin

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/processor/bitcoin/btcdtest"
)

// TestBtcdConflict spends an input of a stored batch elsewhere with the
// wallet's key (a replacement paying someone else, from outside the
// processor), and mines it: until it is Confirmations deep the payouts
// stay in their batch; then the batch is marked conflicted, its payouts go
// into a new batch paid from other outputs, and each address is paid once.
func TestBtcdConflict(t *testing.T) {
	t.Parallel() // each test runs a btcd of its own
	eachEngine(t, func(t *testing.T, e *testEngine) {
		ctx := context.Background()
		r := newBtcdRig(t, e, func(c *Config) { c.BatchWindow = time.Millisecond })
		var subs []payoutkit.Submission
		for i, a := range payees(t, &chaincfg.RegressionNetParams)[:2] {
			sub := e.payout(t, fmt.Sprintf("po-%d", i), "900.00", a.EncodeAddress())
			if err := r.proc.Submit(ctx, sub, e); err != nil {
				t.Fatal(err)
			}
			subs = append(subs, sub)
		}
		time.Sleep(5 * time.Millisecond)
		if err := r.proc.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		var first txRow
		if err := e.db.NewSelect().Model(&first).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		batchTx := wire.NewMsgTx(2)
		if err := batchTx.Deserialize(bytes.NewReader(first.Raw)); err != nil {
			t.Fatal(err)
		}

		// Someone with the key spends the batch's first input elsewhere,
		// at a higher fee: it replaces the batch's transaction.
		r.spendElsewhere(t, e, batchTx.TxIn[0].PreviousOutPoint)
		r.node.Generate(t, 1)
		if err := r.proc.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		for _, sub := range subs { // one confirmation of two: not yet
			if row, _ := loadPayout(ctx, e.db, sub.IdempotencyKey); row.State != stateSent || row.BatchID != first.TxID {
				t.Fatalf("payout %s after one confirmation of the conflict: %+v", sub.PayoutID, row)
			}
		}
		r.node.Generate(t, 1)
		if err := r.proc.Tick(ctx, e); err != nil { // conflicted, queued again, batched again
			t.Fatal(err)
		}
		r.node.Generate(t, 2)
		if err := r.proc.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		var txs []txRow
		if err := e.db.NewSelect().Model(&txs).Order("created_at").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if len(txs) != 2 || txs[0].State != stateConflicted || txs[1].State != stateConfirmed {
			t.Fatalf("transactions %+v", txs)
		}
		for _, sub := range subs {
			p := e.status(t, sub.PayoutID)
			if p.Status != payoutkit.PayoutCompleted || p.TxID != txs[1].TxID {
				t.Fatalf("payout %s: %s %s", sub.PayoutID, p.Status, p.TxID)
			}
			script, _ := PayeeScript(sub.Address, &chaincfg.RegressionNetParams)
			if n := outputsTo(t, r, script, btcdtest.ActivationHeight+1); n != 1 {
				t.Fatalf("%s paid %d times", sub.PayoutID, n)
			}
		}
		if s := r.proc.Stats(); s.Conflicted != 1 || s.Batches != 2 || s.Completed != 2 {
			t.Fatalf("stats %+v", s)
		}
		// The conflicted batch's other inputs are free again; the spent
		// one is spent.
		if n, _ := e.db.NewSelect().Model((*utxoRow)(nil)).Where("reserved_by = ? AND spent_txid = ''", first.TxID).Count(ctx); n != 0 {
			t.Fatalf("%d outputs still reserved by the conflicted batch", n)
		}
	})
}

// spendElsewhere spends one of the wallet's outputs with its key outside
// the processor (to another address, at a fee of 100,000 satoshis) and
// broadcasts it.
func (r *btcdRig) spendElsewhere(t *testing.T, e *testEngine, out wire.OutPoint) {
	t.Helper()
	ctx := context.Background()
	var u utxoRow
	if err := e.db.NewSelect().Model(&u).Where("txid = ? AND vout = ?", out.Hash.String(), int64(out.Index)).Scan(ctx); err != nil {
		t.Fatal(err)
	}
	elsewhere, _ := txscript.PayToAddrScript(payees(t, &chaincfg.RegressionNetParams)[2])
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(&out, nil, nil))
	tx.AddTxOut(wire.NewTxOut(u.Value-100_000, elsewhere))
	if err := r.key.SignTx(ctx, tx, []*wire.TxOut{wire.NewTxOut(u.Value, u.PkScript)}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.node.Client.SendRawTransaction(tx, false); err != nil {
		t.Fatalf("the spend elsewhere: %v", err)
	}
}
