package bitcoin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/processor/bitcoin/btcdtest"
)

// flakyNode is a node whose broadcasts fail while down is set, as if the
// process stopped between storing a transaction and sending it.
type flakyNode struct {
	Node
	down atomic.Bool
}

func (n *flakyNode) SendRawTransaction(tx *wire.MsgTx, allowHighFees bool) (*chainhash.Hash, error) {
	if n.down.Load() {
		return nil, errors.New("connection refused")
	}
	return n.Node.SendRawTransaction(tx, allowHighFees)
}

// outputsTo counts the outputs paying script in the node's blocks from
// height from to the tip.
func outputsTo(t *testing.T, r *btcdRig, script []byte, from int64) int {
	t.Helper()
	tip, err := r.node.Client.GetBlockCount()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for h := from; h <= tip; h++ {
		hash, err := r.node.Client.GetBlockHash(h)
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.node.Client.GetBlock(hash)
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range b.Transactions {
			for _, o := range tx.TxOut {
				if bytes.Equal(o.PkScript, script) {
					n++
				}
			}
		}
	}
	return n
}

// TestBtcdStoredBeforeBroadcast stores a batch whose broadcast fails (the
// process "stops" there), then, in a new Processor on the same database,
// submits its payouts again: the stored transaction is sent, never a new
// one, and each address is paid once.
func TestBtcdStoredBeforeBroadcast(t *testing.T) {
	t.Parallel() // each test runs a btcd of its own
	eachEngine(t, func(t *testing.T, e *testEngine) {
		ctx := context.Background()
		r := newBtcdRig(t, e, func(c *Config) { c.BatchWindow = time.Millisecond; c.Lease = 300 * time.Millisecond })
		flaky := &flakyNode{Node: r.node.Client}
		flaky.down.Store(true)
		cfg := r.proc.cfg
		first, err := New(ctx, e.db, flaky, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var subs []payoutkit.Submission
		for i, a := range payees(t, &chaincfg.RegressionNetParams) {
			sub := e.payout(t, fmt.Sprintf("po-%d", i), "250.00", a.EncodeAddress())
			if err := first.Submit(ctx, sub, e); err != nil {
				t.Fatal(err)
			}
			subs = append(subs, sub)
		}
		time.Sleep(5 * time.Millisecond)
		if err := first.Tick(ctx, e); err == nil {
			t.Fatal("the broadcast did not fail")
		}
		var stored []txRow
		if err := e.db.NewSelect().Model(&stored).Scan(ctx); err != nil || len(stored) != 1 || stored[0].SentAt != 0 {
			t.Fatalf("stored %+v %v", stored, err)
		}
		if mp, _ := r.node.Client.GetRawMempool(); len(mp) != 0 {
			t.Fatalf("mempool %v", mp)
		}

		// "Restarted": the engine hands the payouts off again.
		second, err := New(ctx, e.db, r.node.Client, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, sub := range subs {
			if err := second.Submit(ctx, sub, e); err != nil {
				t.Fatal(err)
			}
		}
		mp, err := r.node.Client.GetRawMempool()
		if err != nil || len(mp) != 1 || mp[0].String() != stored[0].TxID {
			t.Fatalf("mempool %v, stored %s: %v", mp, stored[0].TxID, err)
		}
		r.node.Generate(t, 2)
		time.Sleep(cfg.Lease) // the stopped process's lease lapses
		if err := second.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		if s := second.Stats(); s.Batches != 0 || s.Completed != 4 {
			t.Fatalf("stats %+v", s)
		}
		for _, sub := range subs {
			p := e.status(t, sub.PayoutID)
			if p.Status != payoutkit.PayoutCompleted || p.TxID != stored[0].TxID {
				t.Fatalf("payout %s: %s %s", sub.PayoutID, p.Status, p.TxID)
			}
			// Handed off again after settling, as after a crash before the
			// hand-off was recorded: nothing new.
			if err := second.Submit(ctx, sub, e); err != nil {
				t.Fatal(err)
			}
		}
		if s := second.Stats(); s.Batches != 0 {
			t.Fatalf("stats %+v", s)
		}
		for _, sub := range subs {
			script, _ := PayeeScript(sub.Address, &chaincfg.RegressionNetParams)
			if n := outputsTo(t, r, script, btcdtest.ActivationHeight+1); n != 1 {
				t.Fatalf("%s paid %d times", sub.PayoutID, n)
			}
		}
	})
}

// TestBtcdTwoProcessorsOneWallet runs two processors of one wallet on one
// database, their rounds at once. One holds the wallet's lease and does
// the work; the other, batching on its own, stores nothing (the lease
// fences its writes); when the holder gives the lease up the other takes
// over, and a process whose clock says the lease lapsed takes it too.
// Every payout is in exactly one stored transaction, and no output of the
// wallet is spent by two.
func TestBtcdTwoProcessorsOneWallet(t *testing.T) {
	t.Parallel() // each test runs a btcd of its own
	eachEngine(t, func(t *testing.T, e *testEngine) {
		ctx := context.Background()
		r := newBtcdRig(t, e, func(c *Config) { c.BatchWindow = time.Millisecond; c.MaxBatchSize = 7 })
		other, err := New(ctx, e.db, r.node.Client, r.proc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		submit := func(from, to int) {
			for i := from; i < to; i++ {
				a := payees(t, &chaincfg.RegressionNetParams)[i%4]
				if err := r.proc.Submit(ctx, e.payout(t, fmt.Sprintf("po-%d", i), "1000.00", a.EncodeAddress()), e); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(5 * time.Millisecond) // past the batch window
		}
		rounds := func(n int) {
			for range n {
				var wg sync.WaitGroup
				for _, p := range []*Processor{r.proc, other} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := p.Tick(ctx, e); err != nil {
							t.Errorf("tick: %v", err)
						}
					}()
				}
				wg.Wait()
				r.node.Generate(t, 1)
			}
		}
		submit(0, 14)
		rounds(3)
		leader, follower := r.proc, other
		if other.Stats().Leader {
			leader, follower = other, r.proc
		}
		if l, f := leader.Stats(), follower.Stats(); !l.Leader || f.Leader || l.Leases != 1 || f.Leases != 0 || l.Batches != 2 || f.Batches != 0 {
			t.Fatalf("after 3 rounds: leader %+v, follower %+v", l, f)
		}

		// The follower batching on its own builds a transaction and stores
		// nothing: it does not hold the lease.
		submit(14, 21)
		if err := follower.batch(ctx, e); err != nil {
			t.Fatal(err)
		}
		if f := follower.Stats(); f.Batches != 0 {
			t.Fatalf("the follower stored a batch without the lease: %+v", f)
		}

		// The leader gives the lease up (its Stop): the follower takes over.
		if err := leader.releaseLease(ctx); err != nil {
			t.Fatal(err)
		}
		if err := follower.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		rounds(2)
		if l, f := leader.Stats(), follower.Stats(); l.Leader || !f.Leader || f.Leases != 1 || f.Batches != 1 {
			t.Fatalf("after the hand-over: leader %+v, follower %+v", l, f)
		}

		// A third process whose clock is past the lease takes it over, as
		// after the holder's crash.
		cfg := r.proc.cfg
		cfg.Now = func() time.Time { return time.Now().Add(2 * cfg.Lease) }
		third, err := New(ctx, e.db, r.node.Client, cfg)
		if err != nil {
			t.Fatal(err)
		}
		submit(21, 30)
		if err := third.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		rounds(3) // the others' clocks: the lease is the third's
		for range 3 {
			if err := third.Tick(ctx, e); err != nil {
				t.Fatal(err)
			}
			r.node.Generate(t, 1)
		}
		if err := third.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		if f, th := follower.Stats(), third.Stats(); f.Leader || !th.Leader || th.Batches < 1 {
			t.Fatalf("after the lapse: follower %+v, third %+v", f, th)
		}

		var txs []txRow
		if err := e.db.NewSelect().Model(&txs).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		spent := map[wire.OutPoint]string{}
		for _, row := range txs {
			tx := wire.NewMsgTx(2)
			if err := tx.Deserialize(bytes.NewReader(row.Raw)); err != nil {
				t.Fatal(err)
			}
			for _, in := range tx.TxIn {
				if prev, dup := spent[in.PreviousOutPoint]; dup {
					t.Fatalf("%v spent by %s and %s", in.PreviousOutPoint, prev, row.TxID)
				}
				spent[in.PreviousOutPoint] = row.TxID
			}
		}
		var payouts []payoutRow
		if err := e.db.NewSelect().Model(&payouts).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		for _, po := range payouts {
			if po.State != stateCompleted {
				t.Errorf("payout %s not settled: %+v", po.PayoutID, po)
			}
		}
		s1, s2, s3 := r.proc.Stats(), other.Stats(), third.Stats()
		t.Logf("%d transactions; stats %+v, %+v and %+v", len(txs), s1, s2, s3)
		if len(txs) != int(s1.Batches+s2.Batches+s3.Batches) || len(payouts) != 30 || len(txs) < 5 || s1.Completed+s2.Completed+s3.Completed != 30 {
			t.Fatalf("%d transactions, %d payouts", len(txs), len(payouts))
		}
	})
}

// TestBtcdWalletTooSmall gives the processor a batch its wallet cannot pay
// whole: it pays the oldest payouts it can and lets the rest wait, without
// failing them, and pays them once the wallet has more.
func TestBtcdWalletTooSmall(t *testing.T) {
	t.Parallel() // each test runs a btcd of its own
	eachEngine(t, func(t *testing.T, e *testEngine) {
		ctx := context.Background()
		// From 334, a single mature coinbase of 12.5 BTC.
		r := newBtcdRig(t, e, func(c *Config) { c.BatchWindow = time.Millisecond; c.StartHeight = 334 })
		var subs []payoutkit.Submission
		for i, a := range payees(t, &chaincfg.RegressionNetParams)[:3] {
			sub := e.payout(t, fmt.Sprintf("po-%d", i), "250000.00", a.EncodeAddress()) // 5 BTC each
			if err := r.proc.Submit(ctx, sub, e); err != nil {
				t.Fatal(err)
			}
			subs = append(subs, sub)
			time.Sleep(2 * time.Millisecond) // distinct queue times: po-2 is the newest
		}
		if err := r.proc.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		for i, sub := range subs {
			want := stateSent
			if i == 2 {
				want = stateQueued
			}
			if row, err := loadPayout(ctx, e.db, sub.IdempotencyKey); err != nil || row.State != want {
				t.Fatalf("payout %s: %+v %v, want %s", sub.PayoutID, row, err, want)
			}
		}
		if s := r.proc.Stats(); s.WaitingForFunds != 1 || s.Batches != 1 || s.Failed != 0 {
			t.Fatalf("stats %+v", s)
		}
		// Each block matures another coinbase of the wallet's: the waiting
		// payout goes, and all settle.
		for range 4 {
			r.node.Generate(t, 1)
			if err := r.proc.Tick(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		for _, sub := range subs {
			if p := e.status(t, sub.PayoutID); p.Status != payoutkit.PayoutCompleted {
				t.Fatalf("payout %s: %s", sub.PayoutID, p.Status)
			}
		}
		if s := r.proc.Stats(); s.Batches != 2 || s.Failed != 0 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// TestBtcdReorg mines a batch's transaction, takes its block away
// (invalidateblock) before it has its confirmations, and mines another
// chain: the processor forgets the height, watches the transaction again,
// and settles its payouts once, from the new chain.
func TestBtcdReorg(t *testing.T) {
	t.Parallel() // each test runs a btcd of its own
	eachEngine(t, func(t *testing.T, e *testEngine) {
		ctx := context.Background()
		r := newBtcdRig(t, e, func(c *Config) { c.BatchWindow = time.Millisecond; c.Confirmations = 3 })
		var subs []payoutkit.Submission
		for i, a := range payees(t, &chaincfg.RegressionNetParams)[:2] {
			sub := e.payout(t, fmt.Sprintf("po-%d", i), "500.00", a.EncodeAddress())
			if err := r.proc.Submit(ctx, sub, e); err != nil {
				t.Fatal(err)
			}
			subs = append(subs, sub)
		}
		time.Sleep(5 * time.Millisecond)
		if err := r.proc.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		height := func() txRow {
			var rows []txRow
			if err := e.db.NewSelect().Model(&rows).Scan(ctx); err != nil || len(rows) != 1 {
				t.Fatalf("stored %+v %v", rows, err)
			}
			return rows[0]
		}
		block := r.node.Generate(t, 1)[0]
		if err := r.proc.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		first := height()
		if first.Height == 0 {
			t.Fatal("the mined transaction has no height")
		}
		if err := r.node.Client.InvalidateBlock(block); err != nil {
			t.Fatal(err)
		}
		if err := r.proc.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		if tx := height(); tx.Height != 0 || tx.State != statePending {
			t.Fatalf("after the reorg: %+v", tx)
		}
		for _, sub := range subs {
			if p := e.status(t, sub.PayoutID); p.Status != payoutkit.PayoutSubmitted {
				t.Fatalf("payout %s settled from a block taken away", sub.PayoutID)
			}
		}
		time.Sleep(1100 * time.Millisecond) // another timestamp: the new blocks differ from the one taken away
		// The transaction is back in the mempool (the node's, or the
		// processor's rebroadcast), and the new chain mines it.
		if err := r.proc.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		r.node.Generate(t, 3)
		if err := r.proc.Tick(ctx, e); err != nil {
			t.Fatal(err)
		}
		tx := height()
		if tx.Height == 0 || tx.State != stateConfirmed {
			t.Fatalf("in the new chain: %+v", tx)
		}
		if h, _ := r.node.Client.GetBlockHash(tx.Height); *h == *block {
			t.Fatal("the block taken away is back")
		}
		for _, sub := range subs {
			p := e.status(t, sub.PayoutID)
			if p.Status != payoutkit.PayoutCompleted || p.TxID != tx.TxID {
				t.Fatalf("payout %s: %s %s", sub.PayoutID, p.Status, p.TxID)
			}
			script, _ := PayeeScript(sub.Address, &chaincfg.RegressionNetParams)
			if n := outputsTo(t, r, script, btcdtest.ActivationHeight+1); n != 1 {
				t.Fatalf("%s paid %d times", sub.PayoutID, n)
			}
		}
		if s := r.proc.Stats(); s.Batches != 1 || s.Completed != 2 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// TestLeaseFromAProcessThatDied gives the wallet's lease, far from lapsing,
// to a process of this host that has exited (a crashed server): a new
// processor takes it over at its first round. A lease of a process that
// runs, or of another host, it leaves alone.
func TestLeaseFromAProcessThatDied(t *testing.T) {
	t.Parallel() // each test runs a btcd of its own
	ctx := context.Background()
	eachEngine(t, func(t *testing.T, e *testEngine) {
		proc := newBtcdRig(t, e, nil).proc
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		gone := exec.Command(exe, "-test.run=^$")
		if err := gone.Run(); err != nil {
			t.Fatal(err)
		}
		host, _ := os.Hostname()
		for _, c := range []struct {
			holder string
			taken  bool
		}{
			{fmt.Sprintf("%s/%d/0badc0de", host, os.Getppid()), false},             // alive
			{fmt.Sprintf("another-%s/%d/0badc0de", host, gone.Process.Pid), false}, // elsewhere
			{fmt.Sprintf("%s/%d/0badc0de", host, gone.Process.Pid), true},          // exited
		} {
			lease := leaseRow{Wallet: proc.Wallet().Address(), Holder: c.holder, ExpiresAt: time.Now().Add(time.Hour).UnixMilli()}
			if _, err := e.db.NewInsert().Model(&lease).On("CONFLICT (wallet) DO UPDATE").Set("holder = EXCLUDED.holder").Exec(ctx); err != nil {
				t.Fatal(err)
			}
			held, err := proc.takeLease(ctx)
			if err != nil || held != c.taken {
				t.Fatalf("lease of %s: taken %v, %v; want %v", c.holder, held, err, c.taken)
			}
		}
	})
}
