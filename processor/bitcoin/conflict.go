package bitcoin

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/wire"
	"github.com/uptrace/bun"
)

// conflicts finds batches none of whose transactions can confirm any more:
// an input they all spend was spent on chain, Confirmations deep, by a
// transaction not of the batch (the same key used elsewhere, say). Each
// such batch is marked conflicted in one database transaction: its
// transactions conflicted, its other inputs released, and its payouts
// queued again for the next batch. Only then: while a transaction paying
// them can still confirm, they stay where they are.
func (p *Processor) conflicts(ctx context.Context, tip int64) error {
	var spent []utxoRow
	if err := p.db.NewSelect().Model(&spent).
		Where("spent_txid <> '' AND spent_height > 0 AND spent_height <= ?", tip-int64(p.cfg.Confirmations)+1).
		// Only the inputs of the wallet's open batches: a settled batch's
		// are history (and found through the index on reserved_by).
		Where("reserved_by IN (?)", p.db.NewSelect().Model((*txRow)(nil)).Column("batch_id").Where("wallet = ? AND state = ?", p.wallet.Address(), statePending)).
		Scan(ctx); err != nil {
		return fmt.Errorf("bitcoin: spent reserved outputs: %w", err)
	}
	for _, u := range spent {
		ours, err := p.db.NewSelect().Model((*txRow)(nil)).Where("txid = ? AND batch_id = ?", u.SpentTxID, u.ReservedBy).Count(ctx)
		if err != nil {
			return err
		}
		if ours > 0 {
			continue // the batch's own spend: settle handles it
		}
		var open []txRow
		if err := p.db.NewSelect().Model(&open).Where("batch_id = ? AND state = ?", u.ReservedBy, statePending).Order("attempt").Scan(ctx); err != nil {
			return err
		}
		dead, err := spending(open, u)
		if err != nil {
			return err
		}
		if len(dead) == 0 {
			continue // settled, or conflicted already
		}
		if len(dead) < len(open) {
			// An input a fee bump added: the bumps spending it cannot
			// confirm, the batch's earlier transactions still can, and the
			// latest of those is the one broadcast and bumped from now on.
			if err := p.markConflicted(ctx, dead); err != nil {
				return err
			}
			p.log.Warn("bitcoin fee bump conflicted: an input it added was spent elsewhere; the batch's earlier transaction stands",
				"batch", u.ReservedBy, "input", fmt.Sprintf("%s:%d", u.TxID, u.Vout), "spent_by", u.SpentTxID, "bumps", len(dead))
			continue
		}
		var requeued int
		err = p.inLease(ctx, func(ctx context.Context, tx bun.Tx) error {
			res, err := tx.NewUpdate().Model((*txRow)(nil)).Set("state = ?", stateConflicted).
				Where("batch_id = ? AND state = ?", u.ReservedBy, statePending).Exec(ctx)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return nil // settled, or conflicted already
			}
			if _, err := tx.NewUpdate().Model((*utxoRow)(nil)).Set("reserved_by = ''").
				Where("reserved_by = ? AND spent_txid = ''", u.ReservedBy).Exec(ctx); err != nil {
				return err
			}
			res, err = tx.NewUpdate().Model((*payoutRow)(nil)).
				Set("state = ?", stateQueued).Set("batch_id = ''").Set("vout = 0").Set("due_at = ?", p.cfg.Now().UnixMilli()).
				Where("batch_id = ? AND state = ?", u.ReservedBy, stateSent).Exec(ctx)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			requeued = int(n)
			return nil
		})
		if errors.Is(err, errLost) {
			return nil // another process runs the wallet now
		}
		if err != nil {
			return fmt.Errorf("bitcoin: conflicted batch %s: %w", u.ReservedBy, err)
		}
		if requeued > 0 {
			p.stats.conflicted.Add(1)
			p.log.Warn("bitcoin batch conflicted: an input was spent elsewhere; its payouts go into the next batch",
				"batch", u.ReservedBy, "input", fmt.Sprintf("%s:%d", u.TxID, u.Vout), "spent_by", u.SpentTxID, "payouts", requeued)
		}
	}
	return nil
}

// spending returns those of txs that spend u.
func spending(txs []txRow, u utxoRow) ([]string, error) {
	var ids []string
	for _, t := range txs {
		tx := wire.NewMsgTx(2)
		if err := tx.Deserialize(bytes.NewReader(t.Raw)); err != nil {
			return nil, fmt.Errorf("bitcoin: stored transaction %s: %w", t.TxID, err)
		}
		for _, in := range tx.TxIn {
			if in.PreviousOutPoint.Hash.String() == u.TxID && int64(in.PreviousOutPoint.Index) == u.Vout {
				ids = append(ids, t.TxID)
				break
			}
		}
	}
	return ids, nil
}

// markConflicted marks transactions that can no longer confirm.
func (p *Processor) markConflicted(ctx context.Context, txids []string) error {
	err := p.inLease(ctx, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewUpdate().Model((*txRow)(nil)).Set("state = ?", stateConflicted).
			Where("txid IN (?) AND state = ?", bun.In(txids), statePending).Exec(ctx)
		return err
	})
	if errors.Is(err, errLost) {
		return nil // another process runs the wallet now
	}
	return err
}
