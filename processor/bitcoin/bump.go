package bitcoin

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/wire"
	"github.com/uptrace/bun"
)

// errNoBump is a transaction that cannot be replaced as it is: its fee
// rate is at the ceiling, or its change cannot pay a higher fee.
var errNoBump = errors.New("bitcoin: the transaction cannot be bumped")

// bumpRate is the fee rate of a replacement of a transaction at old sat/vB:
// the node's estimate, and at least a quarter more than old and one
// sat/vB more (BIP 125 asks a replacement to pay for its own size at the
// incremental relay rate, 1 sat/vB, on top of the fee it replaces); at most
// ceiling.
func bumpRate(old, estimate, ceiling int64) int64 {
	return min(max(estimate, old+max(1, old/4)), ceiling)
}

// replaceTx builds the fee bump (BIP 125) of a batch's transaction at the
// given fee rate: the same inputs and the same payments, in the same order,
// with the higher fee taken from the change (change below dustLimit is
// dropped, the fee taking it). prevOuts are the inputs' previous outputs.
// It answers errNoBump when the change cannot pay the higher fee, or the
// new fee does not exceed the old by the new size (the incremental relay
// fee). The transaction returned is unsigned.
func replaceTx(old *wire.MsgTx, prevOuts []*wire.TxOut, payments int, changeScript []byte, rate, dustLimit int64) (*wire.MsgTx, int64, int64, error) {
	if len(prevOuts) != len(old.TxIn) || payments < 1 || payments > len(old.TxOut) {
		return nil, 0, 0, errors.New("bitcoin: replaceTx: the transaction does not match its inputs or payments")
	}
	var in, pay int64
	for _, po := range prevOuts {
		in += po.Value
	}
	scripts := make([][]byte, 0, payments+1)
	for _, o := range old.TxOut[:payments] {
		pay += o.Value
		scripts = append(scripts, o.PkScript)
	}
	var out int64
	for _, o := range old.TxOut {
		out += o.Value
	}
	oldFee := in - out
	tx := wire.NewMsgTx(old.Version)
	tx.LockTime = old.LockTime
	for _, ti := range old.TxIn {
		n := wire.NewTxIn(&ti.PreviousOutPoint, nil, nil)
		n.Sequence = ti.Sequence
		tx.AddTxIn(n)
	}
	for _, o := range old.TxOut[:payments] {
		tx.AddTxOut(wire.NewTxOut(o.Value, o.PkScript))
	}
	weight := TxWeight(len(tx.TxIn), P2WPKHInputWeight, append(scripts, changeScript))
	fee := VSize(weight) * rate
	if change := in - pay - fee; change >= dustLimit {
		tx.AddTxOut(wire.NewTxOut(change, changeScript))
	} else {
		weight = TxWeight(len(tx.TxIn), P2WPKHInputWeight, scripts)
		fee = in - pay
		if fee < VSize(weight)*rate {
			return nil, 0, 0, errNoBump
		}
	}
	if fee < oldFee+VSize(weight) {
		return nil, 0, 0, errNoBump
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
			p.log.Warn("bitcoin transaction unmined and not bumped", "txid", t.TxID, "fee_rate", t.FeeRate, "fee_rate_ceiling", p.cfg.FeeRateCeiling)
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
	tx, fee, weight, err := replaceTx(old, prevOuts, int(payments), p.wallet.script, rate, p.cfg.DustLimit)
	if err != nil {
		return err
	}
	if err := p.wallet.signer.SignTx(ctx, tx, prevOuts); err != nil {
		return err
	}
	var raw bytes.Buffer
	if err := tx.Serialize(&raw); err != nil {
		return err
	}
	row := txRow{
		TxID: tx.TxHash().String(), BatchID: t.BatchID, Attempt: t.Attempt + 1, Wallet: t.Wallet, Raw: raw.Bytes(),
		Fee: fee, FeeRate: rate, Weight: weight, State: statePending, CreatedAt: p.cfg.Now().UnixMilli(),
	}
	stored := false
	err = p.db.RunInTx(ctx, nil, func(ctx context.Context, dbtx bun.Tx) error {
		// Still the batch's latest and unmined (another process may have
		// bumped it, or the node mined it, meanwhile).
		latest, err := p.openBatches(ctx, dbtx)
		if err != nil {
			return err
		}
		for _, l := range latest {
			if l.BatchID == t.BatchID && l.TxID == t.TxID {
				res, err := dbtx.NewInsert().Model(&row).On("CONFLICT DO NOTHING").Exec(ctx)
				if err != nil {
					return err
				}
				n, _ := res.RowsAffected()
				stored = n == 1
			}
		}
		return nil
	})
	if err != nil || !stored {
		return err
	}
	p.stats.bumps.Add(1)
	p.log.Info("bitcoin transaction bumped", "batch", t.BatchID, "replaces", t.TxID, "txid", row.TxID,
		"attempt", row.Attempt, "fee", fee, "fee_rate", rate)
	if err := p.broadcast(ctx, row); err != nil {
		p.log.Warn("bitcoin bump broadcast", "txid", row.TxID, "err", err) // the rebroadcast tries again
	}
	return nil
}
