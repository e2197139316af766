package bitcoin

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
	"github.com/uptrace/bun"
)

// fakeNode is a chain of blocks in memory, for the wallet's scan.
type fakeNode struct {
	mu     sync.Mutex
	blocks []*wire.MsgBlock
}

func (n *fakeNode) GetBlockCount() (int64, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return int64(len(n.blocks) - 1), nil
}

func (n *fakeNode) GetBlockHash(h int64) (*chainhash.Hash, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if h < 0 || h >= int64(len(n.blocks)) {
		return nil, errors.New("no such height")
	}
	hash := n.blocks[h].BlockHash()
	return &hash, nil
}

func (n *fakeNode) GetBlock(hash *chainhash.Hash) (*wire.MsgBlock, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, b := range n.blocks {
		if b.BlockHash() == *hash {
			return b, nil
		}
	}
	return nil, errors.New("no such block")
}

func (n *fakeNode) SendRawTransaction(*wire.MsgTx, bool) (*chainhash.Hash, error) {
	return nil, errors.New("fakeNode sends nothing")
}

// mine appends a block of a coinbase paying coinbaseTo (value) and txs,
// after the first keep blocks (a reorg when keep is below the height).
func (n *fakeNode) mine(keep int, coinbaseTo []byte, value int64, txs ...*wire.MsgTx) *wire.MsgBlock {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.blocks = n.blocks[:keep]
	cb := wire.NewMsgTx(1)
	cb.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&chainhash.Hash{}, wire.MaxPrevOutIndex), []byte{byte(keep), byte(len(txs)), byte(value)}, nil))
	cb.AddTxOut(wire.NewTxOut(value, coinbaseTo))
	var prev chainhash.Hash
	if keep > 0 {
		prev = n.blocks[keep-1].BlockHash()
	}
	root := cb.TxHash() // a stand-in merkle root: it tells blocks of other coinbases apart
	b := wire.NewMsgBlock(wire.NewBlockHeader(1, &prev, &root, 0, uint32(keep)))
	b.AddTransaction(cb)
	for _, tx := range txs {
		b.AddTransaction(tx)
	}
	n.blocks = append(n.blocks, b)
	return b
}

func spend(from wire.OutPoint, outs ...*wire.TxOut) *wire.MsgTx {
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(&from, nil, nil))
	for _, o := range outs {
		tx.AddTxOut(o)
	}
	return tx
}

func testWallet(t *testing.T, db *bun.DB, n Node) *Wallet {
	t.Helper()
	k, err := NewLocalKey(strings.Repeat("44", 32), &chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWallet(context.Background(), db, n, k, &chaincfg.RegressionNetParams, 0)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWalletSyncAndReorg(t *testing.T) {
	eachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		n := &fakeNode{}
		w := testWallet(t, db, n)
		other := []byte{txscript.OP_TRUE}
		n.mine(0, other, 50)
		b1 := n.mine(1, w.script, 5_000_000_000)
		funding := wire.OutPoint{Hash: b1.Transactions[0].TxHash(), Index: 0}
		pay := spend(funding, wire.NewTxOut(3_000_000_000, other), wire.NewTxOut(1_999_990_000, w.script))
		n.mine(2, other, 50, pay)
		n.mine(3, other, 50)
		n.mine(4, other, 50)

		// A wallet of another key on the same database sees nothing.
		k2, _ := NewLocalKey(strings.Repeat("55", 32), &chaincfg.RegressionNetParams)
		w2, err := NewWallet(ctx, db, n, k2, &chaincfg.RegressionNetParams, 0)
		if err != nil {
			t.Fatal(err)
		}

		if h, err := w.Sync(ctx); err != nil || h != 4 {
			t.Fatalf("sync: %d %v", h, err)
		}
		utxos, tip, err := w.Spendable(ctx)
		if err != nil || tip != 4 || len(utxos) != 1 || utxos[0].Value != 1_999_990_000 || utxos[0].Confirmations != 3 || utxos[0].OutPoint.Hash != pay.TxHash() {
			t.Fatalf("spendable %+v at %d: %v", utxos, tip, err)
		}
		var spent utxoRow
		if err := db.NewSelect().Model(&spent).Where("txid = ?", funding.Hash.String()).Scan(ctx); err != nil || spent.SpentTxID != pay.TxHash().String() || spent.SpentHeight != 2 || !spent.Coinbase {
			t.Fatalf("the funding output %+v %v", spent, err)
		}
		if _, err := w2.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if u, _, _ := w2.Spendable(ctx); len(u) != 0 {
			t.Fatalf("another wallet's outputs: %+v", u)
		}

		// A reorg from height 2: the spend is gone, a coinbase pays the
		// wallet at 3 instead, and the chain is longer.
		n.mine(2, other, 51)
		b3 := n.mine(3, w.script, 2_500_000_000)
		n.mine(4, other, 51)
		n.mine(5, other, 51)
		if h, err := w.Sync(ctx); err != nil || h != 5 {
			t.Fatalf("sync after the reorg: %d %v", h, err)
		}
		var rows []utxoRow
		if err := db.NewSelect().Model(&rows).Where("wallet = ?", w.addr).Order("height").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || rows[0].TxID != funding.Hash.String() || rows[0].SpentTxID != "" || rows[0].SpentHeight != 0 ||
			rows[1].TxID != b3.Transactions[0].TxHash().String() || rows[1].Height != 3 {
			t.Fatalf("after the reorg: %+v", rows)
		}
		var blocks []blockRow
		if err := db.NewSelect().Model(&blocks).Where("wallet = ?", w.addr).Order("height").Scan(ctx); err != nil || len(blocks) != 6 {
			t.Fatalf("blocks %+v %v", blocks, err)
		}
		for i, b := range blocks {
			if h, _ := n.GetBlockHash(int64(i)); b.Height != int64(i) || b.Hash != h.String() {
				t.Fatalf("block %d: %+v, the node's %s", i, b, h)
			}
		}
		// Coinbase outputs are not spendable before maturity (100 on regtest).
		if u, _, _ := w.Spendable(ctx); len(u) != 0 {
			t.Fatalf("immature coinbase outputs are spendable: %+v", u)
		}
		for h := 6; h < 102; h++ {
			n.mine(h, other, 1)
		}
		if _, err := w.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if u, _, _ := w.Spendable(ctx); len(u) != 1 || u[0].Value != 5_000_000_000 || u[0].Confirmations != 101 {
			t.Fatalf("mature at 101: %+v", u)
		}
	})
}

func TestNewWalletRefusesAnotherNetwork(t *testing.T) {
	k, _ := NewLocalKey(strings.Repeat("44", 32), &chaincfg.MainNetParams)
	if _, err := NewWallet(context.Background(), sqliteDB(t), &fakeNode{}, k, &chaincfg.RegressionNetParams, 0); err == nil {
		t.Fatal("a mainnet key's wallet on regtest")
	}
}
