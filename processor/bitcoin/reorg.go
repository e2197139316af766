package bitcoin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"
)

// reorged watches settled batches whose settling transaction a reorg took
// out of the chain. Their payouts are completed in the engine, which has no
// way back: Config.Confirmations is the guard against that, and this is
// what happens past it. The transaction is broadcast again (every
// RebroadcastAfter, with a warning), and the scan notes it when it is
// mined again. When another transaction of its batch (a fee bump, or the
// one bumped) is mined instead, that one becomes the batch's settled
// transaction, and an error says that the engine shows the txid that left
// the chain. A settled batch whose inputs were spent elsewhere in the new
// chain cannot be paid again without paying twice: its broadcasts fail,
// and each failure is logged, for an operator to act on.
func (p *Processor) reorged(ctx context.Context, tip int64) error {
	var out []txRow
	if err := p.db.NewSelect().Model(&out).Where("wallet = ? AND state = ? AND height = 0", p.wallet.Address(), stateConfirmed).
		Scan(ctx); err != nil {
		return fmt.Errorf("bitcoin: settled transactions out of the chain: %w", err)
	}
	cutoff := p.cfg.Now().Add(-p.cfg.RebroadcastAfter).UnixMilli()
	for _, t := range out {
		var other txRow
		err := p.db.NewSelect().Model(&other).
			Where("batch_id = ? AND state = ? AND height > 0 AND height <= ?", t.BatchID, stateReplaced, tip-int64(p.cfg.Confirmations)+1).
			Limit(1).Scan(ctx)
		switch {
		case err == nil:
			if err := p.resettle(ctx, t, other); err != nil {
				return err
			}
			continue
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if t.SentAt > cutoff {
			continue
		}
		p.log.Warn("bitcoin settled transaction out of the chain after a reorg: broadcasting it again", "txid", t.TxID, "batch", t.BatchID)
		if err := p.broadcast(ctx, t); err != nil {
			p.log.Error("bitcoin settled transaction cannot be broadcast again: its payouts are completed and may be unpaid", "txid", t.TxID, "batch", t.BatchID, "err", err)
		}
	}
	return nil
}

// resettle makes mined the batch's settled transaction in place of was,
// which a reorg took away.
func (p *Processor) resettle(ctx context.Context, was, mined txRow) error {
	err := p.inLease(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewUpdate().Model((*txRow)(nil)).Set("state = ?", stateReplaced).Where("txid = ? AND state = ?", was.TxID, stateConfirmed).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewUpdate().Model((*txRow)(nil)).Set("state = ?", stateConfirmed).Where("txid = ? AND state = ?", mined.TxID, stateReplaced).Exec(ctx)
		return err
	})
	if errors.Is(err, errLost) {
		return nil // another process runs the wallet now
	}
	if err != nil {
		return fmt.Errorf("bitcoin: resettle batch %s: %w", was.BatchID, err)
	}
	p.log.Error("bitcoin batch settled again by another of its transactions after a reorg: the engine shows the txid that left the chain",
		"batch", was.BatchID, "engine_txid", was.TxID, "chain_txid", mined.TxID, "height", mined.Height)
	return nil
}
