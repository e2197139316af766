package bitcoin

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
	"github.com/uptrace/bun"
)

// Wallet is the hot wallet's outputs, tracked in the engine's database from
// the node's blocks (never from a wallet of the node's): Sync reads each
// block from the last one seen (or Config.StartHeight) to the tip, records
// the outputs paying the wallet and marks the ones spent, and rewinds what
// a reorg took away. BuildTx spends them.
type Wallet struct {
	db     *bun.DB
	node   Node
	signer Signer
	net    *chaincfg.Params
	addr   string
	script []byte
	start  int64
	now    func() time.Time
}

// fence runs first in each database transaction that records scanned
// blocks or rewinds them: the processor's lease check, which also renews
// the lease through a long scan.
type fence func(context.Context, bun.Tx) error

func (f fence) check(ctx context.Context, tx bun.Tx) error {
	if f == nil {
		return nil
	}
	return f(ctx, tx)
}

// syncBatch is how many blocks Sync records in one database transaction.
const syncBatch = 50

// NewWallet returns the wallet of signer on net, its outputs stored in db
// (SQLite or PostgreSQL; it migrates the processor's tables) and read
// from node's blocks from startHeight on.
func NewWallet(ctx context.Context, db *bun.DB, node Node, signer Signer, net *chaincfg.Params, startHeight int64) (*Wallet, error) {
	if signer == nil || node == nil || net == nil {
		return nil, errors.New("bitcoin: NewWallet needs a node, a signer and a network")
	}
	addr := signer.Address()
	if !addr.IsForNet(net) {
		return nil, fmt.Errorf("bitcoin: the wallet's address %s is not of %s", addr.EncodeAddress(), net.Name)
	}
	script, err := txscript.PayToAddrScript(addr)
	if err != nil {
		return nil, fmt.Errorf("bitcoin: the wallet's script: %w", err)
	}
	if startHeight < 0 {
		return nil, errors.New("bitcoin: a negative start height")
	}
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	return &Wallet{db: db, node: node, signer: signer, net: net, addr: addr.EncodeAddress(), script: script, start: startHeight, now: time.Now}, nil
}

// Address is the wallet's address, which its funding and change pay.
func (w *Wallet) Address() string { return w.addr }

// Script is the wallet's output script.
func (w *Wallet) Script() []byte { return bytes.Clone(w.script) }

// cursor is the highest block scanned, or (start-1, "") before the first.
func (w *Wallet) cursor(ctx context.Context, db bun.IDB) (int64, string, error) {
	var b blockRow
	err := db.NewSelect().Model(&b).Where("wallet = ?", w.addr).Order("height DESC").Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return w.start - 1, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("bitcoin: the scan's cursor: %w", err)
	}
	return b.Height, b.Hash, nil
}

// Sync records the wallet's outputs of every block up to the node's tip,
// and returns the height scanned to.
func (w *Wallet) Sync(ctx context.Context) (int64, error) { return w.sync(ctx, nil) }

// sync is Sync, each of its database transactions fenced by f.
func (w *Wallet) sync(ctx context.Context, f fence) (int64, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		tip, err := w.node.GetBlockCount()
		if err != nil {
			return 0, fmt.Errorf("bitcoin: getblockcount: %w", err)
		}
		height, hash, err := w.cursor(ctx, w.db)
		if err != nil {
			return 0, err
		}
		if hash != "" {
			nh, err := w.node.GetBlockHash(height)
			if err != nil || nh.String() != hash { // a reorg, or a node behind us
				if err := w.rewind(ctx, f); err != nil {
					return 0, err
				}
				continue
			}
		}
		if height >= tip {
			return height, nil
		}
		var batch []scanned
		prev := hash
		for h := height + 1; h <= tip && len(batch) < syncBatch; h++ {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			bh, err := w.node.GetBlockHash(h)
			if err != nil {
				return 0, fmt.Errorf("bitcoin: getblockhash %d: %w", h, err)
			}
			b, err := w.node.GetBlock(bh)
			if err != nil {
				return 0, fmt.Errorf("bitcoin: getblock %s: %w", bh, err)
			}
			if prev != "" && b.Header.PrevBlock.String() != prev {
				break // the chain moved meanwhile: the next round sees where
			}
			batch = append(batch, scanned{height: h, hash: *bh, block: b})
			prev = bh.String()
		}
		if len(batch) == 0 {
			continue
		}
		if err := w.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if err := f.check(ctx, tx); err != nil {
				return err
			}
			return w.apply(ctx, tx, batch)
		}); err != nil {
			return 0, fmt.Errorf("bitcoin: record blocks %d to %d: %w", batch[0].height, batch[len(batch)-1].height, err)
		}
	}
}

type scanned struct {
	height int64
	hash   chainhash.Hash
	block  *wire.MsgBlock
}

// apply records blocks, in order, in tx.
func (w *Wallet) apply(ctx context.Context, tx bun.Tx, blocks []scanned) error {
	var rows []utxoRow
	if err := tx.NewSelect().Model(&rows).Column("txid", "vout").Where("wallet = ? AND spent_txid = ''", w.addr).Scan(ctx); err != nil {
		return err
	}
	unspent := make(map[wire.OutPoint]bool, len(rows))
	for _, r := range rows {
		h, err := chainhash.NewHashFromStr(r.TxID)
		if err != nil {
			return fmt.Errorf("stored txid %q: %w", r.TxID, err)
		}
		unspent[wire.OutPoint{Hash: *h, Index: uint32(r.Vout)}] = true
	}
	var open []string
	// The processor's transactions out of the chain: those of open
	// batches, and those of settled batches whose settling transaction a
	// reorg took away (it, or another of its batch, may be mined again).
	if err := tx.NewSelect().Model((*txRow)(nil)).Column("txid").Where("wallet = ? AND height = 0", w.addr).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("state = ?", statePending).WhereOr("batch_id IN (?)", tx.NewSelect().Model((*txRow)(nil)).Column("batch_id").
				Where("wallet = ? AND state = ? AND height = 0", w.addr, stateConfirmed))
		}).Scan(ctx, &open); err != nil {
		return err
	}
	ours := make(map[chainhash.Hash]bool, len(open))
	for _, id := range open {
		if h, err := chainhash.NewHashFromStr(id); err == nil {
			ours[*h] = true
		}
	}
	now := w.now().UnixMilli()
	for _, b := range blocks {
		for i, t := range b.block.Transactions {
			txid := t.TxHash()
			if ours[txid] {
				delete(ours, txid)
				if _, err := tx.NewUpdate().Model((*txRow)(nil)).Set("height = ?", b.height).Where("txid = ?", txid.String()).Exec(ctx); err != nil {
					return err
				}
			}
			if i > 0 {
				for _, in := range t.TxIn {
					if !unspent[in.PreviousOutPoint] {
						continue
					}
					delete(unspent, in.PreviousOutPoint)
					if _, err := tx.NewUpdate().Model((*utxoRow)(nil)).
						Set("spent_txid = ?", txid.String()).Set("spent_height = ?", b.height).
						Where("txid = ? AND vout = ?", in.PreviousOutPoint.Hash.String(), int64(in.PreviousOutPoint.Index)).Exec(ctx); err != nil {
						return err
					}
				}
			}
			for vout, out := range t.TxOut {
				if !bytes.Equal(out.PkScript, w.script) {
					continue
				}
				r := utxoRow{
					Wallet: w.addr, TxID: txid.String(), Vout: int64(vout), Value: out.Value, PkScript: out.PkScript,
					Height: b.height, Coinbase: i == 0, CreatedAt: now,
				}
				if _, err := tx.NewInsert().Model(&r).
					On("CONFLICT (txid, vout) DO UPDATE").Set("height = EXCLUDED.height").Exec(ctx); err != nil {
					return err
				}
				unspent[wire.OutPoint{Hash: txid, Index: uint32(vout)}] = true
			}
		}
		// Another instance scanning the same wallet may have recorded the
		// block meanwhile; what it recorded is the same.
		if _, err := tx.NewInsert().Model(&blockRow{Wallet: w.addr, Height: b.height, Hash: b.hash.String()}).
			On("CONFLICT (wallet, height) DO NOTHING").Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// rewind undoes the blocks a reorg took away: it finds the highest block
// scanned that is still on the node's chain and forgets what came after
// (outputs made after it, spends recorded after it, the blocks).
func (w *Wallet) rewind(ctx context.Context, f fence) error {
	fork := w.start - 1
	var blocks []blockRow
	if err := w.db.NewSelect().Model(&blocks).Where("wallet = ?", w.addr).Order("height DESC").Scan(ctx); err != nil {
		return fmt.Errorf("bitcoin: rewind: %w", err)
	}
	tip, err := w.node.GetBlockCount()
	if err != nil {
		return fmt.Errorf("bitcoin: getblockcount: %w", err)
	}
	for _, b := range blocks {
		if b.Height > tip {
			continue
		}
		h, err := w.node.GetBlockHash(b.Height)
		if err != nil {
			return fmt.Errorf("bitcoin: getblockhash %d: %w", b.Height, err)
		}
		if h.String() == b.Hash {
			fork = b.Height
			break
		}
	}
	return w.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := f.check(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*utxoRow)(nil)).Where("wallet = ? AND height > ?", w.addr, fork).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewUpdate().Model((*utxoRow)(nil)).Set("spent_txid = ''").Set("spent_height = 0").
			Where("wallet = ? AND spent_height > ?", w.addr, fork).Exec(ctx); err != nil {
			return err
		}
		// The processor's transactions in the blocks taken away are
		// watched again.
		if _, err := tx.NewUpdate().Model((*txRow)(nil)).Set("height = 0").Where("wallet = ? AND height > ?", w.addr, fork).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewDelete().Model((*blockRow)(nil)).Where("wallet = ? AND height > ?", w.addr, fork).Exec(ctx)
		return err
	})
}

// Spendable returns the wallet's unspent outputs as of the last Sync, with
// their confirmations, leaving out coinbase outputs not yet mature (the
// network's CoinbaseMaturity blocks) and outputs a stored transaction of
// the processor's spends, and the height synced to.
func (w *Wallet) Spendable(ctx context.Context) ([]Utxo, int64, error) {
	tip, _, err := w.cursor(ctx, w.db)
	if err != nil {
		return nil, 0, err
	}
	var rows []utxoRow
	if err := w.db.NewSelect().Model(&rows).Where("wallet = ? AND spent_txid = '' AND reserved_by = ''", w.addr).Order("height", "txid", "vout").Scan(ctx); err != nil {
		return nil, 0, fmt.Errorf("bitcoin: the wallet's outputs: %w", err)
	}
	var out []Utxo
	for _, r := range rows {
		confs := tip - r.Height + 1
		if r.Coinbase && confs < int64(w.net.CoinbaseMaturity) {
			continue
		}
		h, err := chainhash.NewHashFromStr(r.TxID)
		if err != nil {
			return nil, 0, fmt.Errorf("bitcoin: stored txid %q: %w", r.TxID, err)
		}
		out = append(out, Utxo{OutPoint: wire.OutPoint{Hash: *h, Index: uint32(r.Vout)}, Value: r.Value, PkScript: r.PkScript, Confirmations: confs})
	}
	return out, tip, nil
}

// BuildTx selects the wallet's outputs for payments (SelectCoins, with
// p.ChangeScript the wallet's), and returns the transaction signed: the
// payments' outputs in their order, then the change, if any, last. Every
// input signals replaceability (BIP 125), for a later fee bump. It stores
// nothing and reserves nothing.
func (w *Wallet) BuildTx(ctx context.Context, payments []*wire.TxOut, p SelectParams) (*wire.MsgTx, Selection, error) {
	utxos, _, err := w.Spendable(ctx)
	if err != nil {
		return nil, Selection{}, err
	}
	p.Payments, p.ChangeScript = payments, w.script
	sel, err := SelectCoins(utxos, p)
	if err != nil {
		return nil, Selection{}, err
	}
	tx := wire.NewMsgTx(2)
	prevOuts := make([]*wire.TxOut, len(sel.Inputs))
	for i, u := range sel.Inputs {
		in := wire.NewTxIn(&u.OutPoint, nil, nil)
		in.Sequence = wire.MaxTxInSequenceNum - 2 // BIP 125: replaceable
		tx.AddTxIn(in)
		prevOuts[i] = wire.NewTxOut(u.Value, u.PkScript)
	}
	for _, o := range payments {
		tx.AddTxOut(wire.NewTxOut(o.Value, o.PkScript))
	}
	if sel.Change > 0 {
		tx.AddTxOut(wire.NewTxOut(sel.Change, w.script))
	}
	if err := w.signer.SignTx(ctx, tx, prevOuts); err != nil {
		return nil, Selection{}, err
	}
	return tx, sel, nil
}
