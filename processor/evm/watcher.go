package evm

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/uptrace/bun"

	"github.com/payoutkit/payoutkit"
)

// Start runs the watcher in the background until Stop or until ctx is
// cancelled: every PollInterval it looks at each unsettled transfer's
// transactions, settles the payout through settler (the engine) once one
// has its confirmations, sends unmined ones again, and replaces one that
// stayed unmined for ReplaceAfter. Any number of processes may watch one
// database: settling twice is refused by the engine, and a replacement is
// signed by one of them only.
func (p *Processor) Start(ctx context.Context, settler payoutkit.Settler) error {
	if !p.loop.Start(ctx, p.cfg.PollInterval, nil, func(ctx context.Context) { p.Watch(ctx, settler) }) {
		return errors.New("evm: the watcher is already running")
	}
	return nil
}

// Stop ends the watcher Start began and waits for it, or for ctx.
func (p *Processor) Stop(ctx context.Context) error {
	_, err := p.loop.Stop(ctx)
	return err
}

// Watch looks at every unsettled transfer once (what the watcher does each
// PollInterval) and reports how many it settled.
func (p *Processor) Watch(ctx context.Context, settler payoutkit.Settler) int {
	settled := 0
	for _, c := range p.networks {
		ts, err := pendingTransfers(ctx, p.db, c.ChainID, p.sender())
		if err != nil {
			if ctx.Err() == nil {
				p.log.Error("evm watcher: reading transfers", "network", c.Name, "err", err)
			}
			continue
		}
		if len(ts) == 0 {
			continue
		}
		head, err := c.b.BlockNumber(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("evm watcher: the node's head", "network", c.Name, "err", err)
			}
			continue
		}
		for _, t := range ts {
			done, err := p.check(ctx, c, settler, t, head)
			if err != nil && ctx.Err() == nil {
				p.log.Warn("evm watcher", "network", c.Name, "payout_id", t.PayoutID, "err", err)
			}
			if done {
				settled++
			}
		}
	}
	return settled
}

// check settles t when one of its transactions has its confirmations;
// otherwise it sends the latest again, or replaces it once it is overdue.
func (p *Processor) check(ctx context.Context, c *chain, settler payoutkit.Settler, t transferRow, head uint64) (bool, error) {
	txs, err := loadTxs(ctx, p.db, t.Key)
	if err != nil {
		return false, err
	}
	if len(txs) == 0 {
		return false, errors.New("no stored transaction")
	}
	for i := len(txs) - 1; i >= 0; i-- {
		r, err := c.b.TransactionReceipt(ctx, common.HexToHash(txs[i].Hash))
		if errors.Is(err, ethereum.NotFound) {
			continue // not mined, or mined and gone in a reorg: watched again
		}
		if err != nil {
			return false, err
		}
		if r.BlockNumber == nil || head+1 < r.BlockNumber.Uint64()+uint64(c.Confirmations) {
			return false, nil // mined; not yet enough confirmations
		}
		return true, p.settle(ctx, c, settler, t, r)
	}
	latest, err := decodeTx(txs[len(txs)-1])
	if err != nil {
		return false, err
	}
	if p.cfg.Now().Sub(time.UnixMilli(t.SignedAt)) >= p.cfg.ReplaceAfter {
		return false, p.replace(ctx, c, t, latest)
	}
	return false, p.send(ctx, c, latest)
}

// settle reports a transaction with its confirmations to the engine, then
// marks the transfer settled. A crash between the two settles it again,
// which the engine refuses as a conflict: the transfer is marked then.
func (p *Processor) settle(ctx context.Context, c *chain, settler payoutkit.Settler, t transferRow, r *types.Receipt) error {
	hash := r.TxHash.Hex()
	if r.Status == types.ReceiptStatusSuccessful {
		price := r.EffectiveGasPrice
		if price == nil {
			price = new(big.Int)
		}
		wei := new(big.Int).Mul(new(big.Int).SetUint64(r.GasUsed), price)
		amount, err := decimalFromString(t.AssetAmount)
		if err != nil {
			return err
		}
		_, err = settler.CompletePayout(ctx, t.WorkspaceID, t.PayoutID, payoutkit.Completion{
			TxID: hash, AssetAmount: amount, NetworkFee: p.networkFee(ctx, c, t, wei),
		})
		if errors.Is(err, payoutkit.ErrConflict) {
			p.log.Warn("evm payout paid on chain but already settled in the engine", "payout_id", t.PayoutID, "tx", hash, "err", err)
		} else if err != nil {
			return err
		}
		if err := finishTransfer(ctx, p.db, t.Key, stateCompleted, hash); err != nil {
			return err
		}
		p.stats.completed.Add(1)
		p.log.Info("evm payout completed", "payout_id", t.PayoutID, "tx", hash, "block", r.BlockNumber)
		return nil
	}
	reason := fmt.Sprintf("the transaction %s reverted on %s (block %s)", hash, c.Name, r.BlockNumber)
	_, err := settler.FailPayout(ctx, t.WorkspaceID, t.PayoutID, reason)
	if errors.Is(err, payoutkit.ErrConflict) {
		p.log.Warn("evm payout reverted on chain but already settled in the engine", "payout_id", t.PayoutID, "tx", hash)
	} else if err != nil {
		return err
	}
	if err := finishTransfer(ctx, p.db, t.Key, stateFailed, hash); err != nil {
		return err
	}
	p.stats.failed.Add(1)
	p.log.Warn("evm payout reverted", "payout_id", t.PayoutID, "tx", hash, "block", r.BlockNumber)
	return nil
}

// replace signs the transfer's transaction again with the same nonce and at
// least 10% more tip and fee cap (the node's replacement bump), stores it
// beside the earlier ones, and sends it. Only the watcher that moves the
// transfer's attempts from n to n+1 signs: the others find it done.
func (p *Processor) replace(ctx context.Context, c *chain, t transferRow, old *types.Transaction) error {
	tip, feeCap, err := p.fees(ctx, c)
	if err != nil {
		return err
	}
	tip = maxBig(tip, bump(old.GasTipCap()))
	feeCap = maxBig(feeCap, bump(old.GasFeeCap()))
	if feeCap.Cmp(tip) < 0 {
		feeCap = new(big.Int).Set(tip)
	}
	if c.MaxFeePerGas != nil && feeCap.Cmp(c.MaxFeePerGas) > 0 {
		p.warnFunds(c.Name, "max_fee_gwei (a replacement would pay more)", t.PayoutID)
		return p.send(ctx, c, old)
	}
	signed, err := p.signer.SignTx(ctx, types.NewTx(&types.DynamicFeeTx{
		ChainID: c.chainID, Nonce: old.Nonce(), GasTipCap: tip, GasFeeCap: feeCap, Gas: old.Gas(),
		To: old.To(), Value: old.Value(), Data: old.Data(),
	}), c.chainID)
	if err != nil {
		return fmt.Errorf("evm: sign: %w", err)
	}
	now := p.cfg.Now()
	won := false
	err = p.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*transferRow)(nil)).
			Set("attempts = attempts + 1").Set("signed_at = ?", now.UnixMilli()).
			Where("idempotency_key = ? AND attempts = ? AND state = ?", t.Key, t.Attempts, statePending).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		won = true
		return insertTx(ctx, tx, t.Key, t.Attempts+1, signed, now)
	})
	if err != nil || !won {
		return err
	}
	p.stats.replaced.Add(1)
	p.log.Info("evm transaction replaced", "payout_id", t.PayoutID, "nonce", old.Nonce(),
		"old_tx", old.Hash().Hex(), "tx", signed.Hash().Hex(), "fee_cap", feeCap, "tip", tip)
	return p.send(ctx, c, signed)
}

// bump is v plus 10%, plus one wei.
func bump(v *big.Int) *big.Int {
	b := new(big.Int).Mul(v, big.NewInt(11))
	b.Quo(b, big.NewInt(10))
	return b.Add(b, big.NewInt(1))
}

func maxBig(a, b *big.Int) *big.Int {
	if a.Cmp(b) >= 0 {
		return new(big.Int).Set(a)
	}
	return new(big.Int).Set(b)
}
