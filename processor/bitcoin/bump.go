package bitcoin

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/btcsuite/btcd/wire"
	"github.com/uptrace/bun"
)

// errNoBump is a transaction that cannot be replaced as it is: its fee
// rate is at the ceiling, or what it leaves cannot pay a higher fee.
var errNoBump = errors.New("bitcoin: the transaction cannot be bumped")

// errNeedsInput is a replacement whose inputs cannot pay the higher fee: it
// needs another of the wallet's outputs.
var errNeedsInput = fmt.Errorf("%w: its inputs cannot pay the higher fee", errNoBump)

// maxBumpInputs is the most outputs of the wallet's a fee bump adds.
const maxBumpInputs = 10

// bumpRate is the fee rate of a replacement of a transaction at old sat/vB:
// the node's estimate, and at least a quarter more than old and one
// sat/vB more (BIP 125 asks a replacement to pay for its own size at the
// incremental relay rate, 1 sat/vB, on top of the fee it replaces); at most
// ceiling.
func bumpRate(old, estimate, ceiling int64) int64 {
	return min(max(estimate, old+max(1, old/4)), ceiling)
}

// replaceTx builds the fee bump (BIP 125) of a batch's transaction at the
// given fee rate: the same inputs, then extra (confirmed outputs of the
// wallet's, when old's cannot pay the higher fee), and the same payments
// in the same order, with change last (change below dustLimit is dropped,
// the fee taking it). prevOuts are old's inputs' previous outputs. It
// answers errNeedsInput when the inputs cannot pay the higher fee, and
// errNoBump when the new fee does not exceed the old by the new size (the
// incremental relay fee). The transaction returned is unsigned; its
// inputs' previous outputs are prevOuts and then extra's.
func replaceTx(old *wire.MsgTx, prevOuts []*wire.TxOut, extra []Utxo, payments int, changeScript []byte, rate, dustLimit int64) (*wire.MsgTx, int64, int64, error) {
	if len(prevOuts) != len(old.TxIn) || payments < 1 || payments > len(old.TxOut) {
		return nil, 0, 0, errors.New("bitcoin: replaceTx: the transaction does not match its inputs or payments")
	}
	var in, pay, out int64
	for _, po := range prevOuts {
		in += po.Value
	}
	for _, o := range old.TxOut {
		out += o.Value
	}
	oldFee := in - out
	scripts := make([][]byte, 0, payments+1)
	for _, o := range old.TxOut[:payments] {
		pay += o.Value
		scripts = append(scripts, o.PkScript)
	}
	tx := wire.NewMsgTx(old.Version)
	tx.LockTime = old.LockTime
	for _, ti := range old.TxIn {
		n := wire.NewTxIn(&ti.PreviousOutPoint, nil, nil)
		n.Sequence = ti.Sequence
		tx.AddTxIn(n)
	}
	for _, u := range extra {
		n := wire.NewTxIn(&u.OutPoint, nil, nil)
		n.Sequence = wire.MaxTxInSequenceNum - 2 // BIP 125: replaceable
		tx.AddTxIn(n)
		in += u.Value
	}
	for _, o := range old.TxOut[:payments] {
		tx.AddTxOut(wire.NewTxOut(o.Value, o.PkScript))
	}
	weight := TxWeight(len(tx.TxIn), P2WPKHInputWeight, append(scripts, changeScript))
	fee := max(VSize(weight)*rate, oldFee+VSize(weight))
	if change := in - pay - fee; change >= dustLimit {
		tx.AddTxOut(wire.NewTxOut(change, changeScript))
	} else {
		weight = TxWeight(len(tx.TxIn), P2WPKHInputWeight, scripts)
		fee = in - pay
		if fee < VSize(weight)*rate || fee < oldFee+VSize(weight) {
			return nil, 0, 0, errNeedsInput
		}
	}
	return tx, fee, weight, nil
}

// bump replaces each batch whose latest transaction has been unmined for
// ReplaceAfter with one paying a higher fee (replaceTx), signed and stored
// as the batch's next attempt before it is broadcast; every transaction of
// the batch is kept, and whichever confirms settles it.
func (p *Processor) bump(ctx context.Context) error {
	open, err := p.openBatches(ctx, p.db)
	if err != nil {
		return err
	}
	cutoff := p.cfg.Now().Add(-p.cfg.ReplaceAfter).UnixMilli()
	for _, t := range open {
		if t.CreatedAt > cutoff {
			continue
		}
		if err := p.bumpOne(ctx, t); errors.Is(err, errNoBump) {
			p.log.Warn("bitcoin transaction unmined and not bumped", "txid", t.TxID, "fee_rate", t.FeeRate, "fee_rate_ceiling", p.cfg.FeeRateCeiling, "reason", err)
		} else if err != nil {
			return err
		}
	}
	return nil
}

func (p *Processor) bumpOne(ctx context.Context, t txRow) error {
	old := wire.NewMsgTx(2)
	if err := old.Deserialize(bytes.NewReader(t.Raw)); err != nil {
		return fmt.Errorf("bitcoin: stored transaction %s: %w", t.TxID, err)
	}
	rate := bumpRate(t.FeeRate, p.feeRate(), p.cfg.FeeRateCeiling)
	if rate <= t.FeeRate {
		return errNoBump
	}
	payments, err := p.db.NewSelect().Model((*payoutRow)(nil)).Where("batch_id = ?", t.BatchID).Count(ctx)
	if err != nil {
		return err
	}
	prevOuts := make([]*wire.TxOut, len(old.TxIn))
	for i, in := range old.TxIn {
		var u utxoRow
		if err := p.db.NewSelect().Model(&u).Where("txid = ? AND vout = ?", in.PreviousOutPoint.Hash.String(), int64(in.PreviousOutPoint.Index)).Scan(ctx); err != nil {
			return fmt.Errorf("bitcoin: input %v of %s: %w", in.PreviousOutPoint, t.TxID, err)
		}
		prevOuts[i] = wire.NewTxOut(u.Value, u.PkScript)
	}
	// When what the batch's inputs leave cannot pay the higher fee, the
	// wallet's confirmed outputs are added, largest first, one at a time.
	var extra []Utxo
	tx, fee, weight, err := replaceTx(old, prevOuts, nil, int(payments), p.wallet.script, rate, p.cfg.DustLimit)
	if errors.Is(err, errNeedsInput) {
		spendable, _, serr := p.wallet.Spendable(ctx)
		if serr != nil {
			return serr
		}
		slices.SortFunc(spendable, func(a, b Utxo) int { return cmp.Compare(b.Value, a.Value) })
		for _, u := range spendable {
			if len(extra) == maxBumpInputs {
				break
			}
			if u.Confirmations < 1 {
				continue
			}
			extra = append(extra, u)
			if tx, fee, weight, err = replaceTx(old, prevOuts, extra, int(payments), p.wallet.script, rate, p.cfg.DustLimit); !errors.Is(err, errNeedsInput) {
				break
			}
		}
	}
	if err != nil {
		return err
	}
	if weight > p.cfg.MaxWeight {
		return fmt.Errorf("%w: the replacement would weigh %d", errNoBump, weight)
	}
	for _, u := range extra {
		prevOuts = append(prevOuts, wire.NewTxOut(u.Value, u.PkScript))
	}
	if err := p.wallet.signer.SignTx(ctx, tx, prevOuts); err != nil {
		return err
	}
	var raw bytes.Buffer
	if err := tx.Serialize(&raw); err != nil {
		return err
	}
	row := txRow{
		TxID: tx.TxHash().String(), BatchID: t.BatchID, Wallet: t.Wallet, Raw: raw.Bytes(),
		Fee: fee, FeeRate: rate, Weight: weight, State: statePending, CreatedAt: p.cfg.Now().UnixMilli(),
	}
	stored := false
	err = p.inLease(ctx, func(ctx context.Context, dbtx bun.Tx) error {
		// Still the batch's latest and unmined (another process may have
		// bumped it, or the node mined it, meanwhile).
		latest, err := p.openBatches(ctx, dbtx)
		if err != nil {
			return err
		}
		for _, l := range latest {
			if l.BatchID == t.BatchID && l.TxID == t.TxID {
				// The batch's next attempt: after a conflicted bump, t is
				// not the batch's highest.
				var last int
				if err := dbtx.NewSelect().Model((*txRow)(nil)).ColumnExpr("MAX(attempt)").Where("batch_id = ?", t.BatchID).Scan(ctx, &last); err != nil {
					return err
				}
				row.Attempt = last + 1
				res, err := dbtx.NewInsert().Model(&row).On("CONFLICT DO NOTHING").Exec(ctx)
				if err != nil {
					return err
				}
				n, _ := res.RowsAffected()
				stored = n == 1
			}
		}
		if stored {
			// The extra inputs are the batch's from now on, as its own
			// are: released once another of its transactions confirms.
			return reserve(ctx, dbtx, extra, t.BatchID)
		}
		return nil
	})
	if errors.Is(err, errLost) || err == nil && !stored {
		return nil
	}
	if err != nil {
		return err
	}
	p.stats.bumps.Add(1)
	p.log.Info("bitcoin transaction bumped", "batch", t.BatchID, "replaces", t.TxID, "txid", row.TxID,
		"attempt", row.Attempt, "fee", fee, "fee_rate", rate, "extra_inputs", len(extra))
	if err := p.broadcast(ctx, row); err != nil {
		p.log.Warn("bitcoin bump broadcast", "txid", row.TxID, "err", err) // the rebroadcast tries again
	}
	return nil
}

// reserve marks inputs as spent by the batch, each only if still unspent
// and unreserved; errLost otherwise.
func reserve(ctx context.Context, tx bun.Tx, inputs []Utxo, batchID string) error {
	for _, u := range inputs {
		res, err := tx.NewUpdate().Model((*utxoRow)(nil)).Set("reserved_by = ?", batchID).
			Where("txid = ? AND vout = ? AND spent_txid = '' AND reserved_by = ''", u.OutPoint.Hash.String(), int64(u.OutPoint.Index)).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return errLost
		}
	}
	return nil
}
