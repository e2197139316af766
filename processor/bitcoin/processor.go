package bitcoin

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/loop"
)

// FeeEstimator is a node that estimates fee rates (bitcoind's
// estimatesmartfee); *rpcclient.Client has the method. btcd does not
// answer it: the processor then pays Config.FeeRateFloor.
type FeeEstimator interface {
	EstimateSmartFee(confTarget int64, mode *btcjson.EstimateSmartFeeMode) (*btcjson.EstimateSmartFeeResult, error)
}

// Processor is a payoutkit.Processor that pays BTC payouts (the coin
// list's BTC/BTC row) from a hot wallet of its own, many payouts to one
// transaction.
//
// Submit takes a payout: it converts its USD amount into satoshis at a
// fresh quote and queues it in the engine's database. The loop Start runs
// scans the node's blocks into the wallet's outputs, and when the oldest
// queued payout's batch window has passed (or MaxBatchSize are queued) it
// builds one transaction paying them, signs it and stores it, with its
// inputs reserved and each payout pointed at its output, in one database
// transaction, before it broadcasts it. A later Submit of a payout in a
// stored transaction broadcasts that transaction again, never a new one.
// Payouts settle when their transaction has Config.Confirmations, with
// its txid, the amount and the payout's share of the fee (SplitFee).
type Processor struct {
	db     *bun.DB
	node   Node
	wallet *Wallet
	cfg    Config
	log    *slog.Logger
	stats  counters

	wake chan struct{}

	// holder names this processor in the wallet's lease; leased is
	// whether it held it at its last round.
	holder string
	leased atomic.Bool

	warnMu   sync.Mutex
	warnedAt time.Time

	loop loop.Runner
}

var _ payoutkit.Processor = (*Processor)(nil)

type counters struct {
	queued, batches, bumps, broadcasts, completed, failed, waitingForFunds, conflicted, leases atomic.Int64
}

// Stats counts what a Processor has done since New.
type Stats struct {
	// Queued counts payouts taken by Submit.
	Queued int64
	// Batches counts batches signed and stored; Bumps their fee bumps;
	// Broadcasts every broadcast of a transaction, first or again.
	Batches, Bumps, Broadcasts int64
	// Completed counts payouts settled; Failed payouts refused.
	Completed, Failed int64
	// WaitingForFunds counts batches cut short, or put off, because the
	// wallet could not pay them.
	WaitingForFunds int64
	// Conflicted counts batches whose inputs were spent elsewhere, their
	// payouts queued again.
	Conflicted int64
	// Leases counts the times this processor took the wallet's lease
	// (Config.Lease); Leader is whether it held it at its last round.
	Leases int64
	Leader bool
}

// Stats returns the processor's counters.
func (p *Processor) Stats() Stats {
	return Stats{
		Queued: p.stats.queued.Load(), Batches: p.stats.batches.Load(), Bumps: p.stats.bumps.Load(), Broadcasts: p.stats.broadcasts.Load(),
		Completed: p.stats.completed.Load(), Failed: p.stats.failed.Load(), WaitingForFunds: p.stats.waitingForFunds.Load(),
		Conflicted: p.stats.conflicted.Load(), Leases: p.stats.leases.Load(), Leader: p.leased.Load(),
	}
}

// New returns a Processor storing its records in db (the engine's
// database, SQLite or PostgreSQL; it migrates the processor's tables) and
// talking to node, or to cfg.RPC when node is nil.
func New(ctx context.Context, db *bun.DB, node Node, cfg Config) (*Processor, error) {
	if cfg.Net == nil {
		return nil, errors.New("bitcoin: Config.Net is required")
	}
	if cfg.Signer == nil {
		return nil, errors.New("bitcoin: Config.Signer is required")
	}
	if err := cfg.withDefaults(); err != nil {
		return nil, fmt.Errorf("bitcoin: %w", err)
	}
	if cfg.Rates == nil {
		return nil, errors.New("bitcoin: Config.Rates is required (a price feed, or FixedRates)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if node == nil {
		cl, err := Dial(cfg.RPC)
		if err != nil {
			return nil, err
		}
		node = cl
	}
	w, err := NewWallet(ctx, db, node, cfg.Signer, cfg.Net, cfg.StartHeight)
	if err != nil {
		return nil, err
	}
	w.now = cfg.Now
	p := &Processor{db: db, node: node, wallet: w, cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1), holder: newHolder()}
	p.log.Info("bitcoin rail ready", "network", cfg.Net.Name, "hot_wallet", w.Address(),
		"batch_window", cfg.BatchWindow, "max_batch_size", cfg.MaxBatchSize, "confirmations", cfg.Confirmations, "lease_holder", p.holder)
	return p, nil
}

// Wallet is the processor's hot wallet.
func (p *Processor) Wallet() *Wallet { return p.wallet }

// ExplorerURL returns the explorer page of txid; "" when none is
// configured.
func (p *Processor) ExplorerURL(txid string) string { return p.cfg.ExplorerURL(txid) }

// Submit implements payoutkit.Processor. The first call for a payout checks
// it (BTC on BTC, an address of the network, at least the dust limit once
// converted; otherwise it fails the payout, which credits it back),
// converts it at a quote no older than MaxQuoteAge, and queues it; a stale
// or missing quote is an error, retried. A later call with the same
// idempotency key broadcasts the payout's stored transaction again if a
// batch took it, and does nothing else.
func (p *Processor) Submit(ctx context.Context, sub payoutkit.Submission, settler payoutkit.Settler) error {
	row, err := loadPayout(ctx, p.db, sub.IdempotencyKey)
	switch {
	case err == nil:
		if row.State == stateSent {
			return p.resend(ctx, row.BatchID)
		}
		return nil
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("bitcoin: payout %s: %w", sub.PayoutID, err)
	}
	if !strings.EqualFold(sub.Network, "BTC") || !strings.EqualFold(sub.Asset, "BTC") {
		return p.refuse(ctx, sub, settler, fmt.Sprintf("%s on %s is not paid out by this processor", sub.Asset, sub.Network))
	}
	script, err := PayeeScript(sub.Address, p.cfg.Net)
	if err != nil {
		return p.refuse(ctx, sub, settler, err.Error())
	}
	q, err := p.cfg.Rates.Quote(ctx, "BTC")
	if err != nil {
		return fmt.Errorf("bitcoin: payout %s: quote: %w", sub.PayoutID, err)
	}
	now := p.cfg.Now()
	sats, err := Satoshis(sub.Amount, q, now, p.cfg.MaxQuoteAge)
	if err != nil {
		return fmt.Errorf("bitcoin: payout %s: %w", sub.PayoutID, err)
	}
	if sats < p.cfg.DustLimit {
		return p.refuse(ctx, sub, settler, fmt.Sprintf("%s USD is %d satoshis at %s USD/BTC, below the dust limit of %d satoshis", sub.Amount, sats, q.Price, p.cfg.DustLimit))
	}
	row = payoutRow{
		Key: sub.IdempotencyKey, WorkspaceID: sub.WorkspaceID, PayoutID: sub.PayoutID, Wallet: p.wallet.Address(),
		Address: sub.Address, PkScript: script, Sats: sats, USDCents: int64(sub.Amount),
		QuotePrice: q.Price.String(), QuoteAt: q.At.UnixMilli(), QuoteSource: q.Source,
		State: stateQueued, DueAt: now.Add(p.cfg.BatchWindow).UnixMilli(), CreatedAt: now.UnixMilli(),
	}
	res, err := p.db.NewInsert().Model(&row).On("CONFLICT (idempotency_key) DO NOTHING").Exec(ctx)
	if err != nil {
		return fmt.Errorf("bitcoin: queue payout %s: %w", sub.PayoutID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		p.stats.queued.Add(1)
		p.log.Info("bitcoin payout queued", "payout_id", sub.PayoutID, "sats", sats, "quote", q.Price.String())
		p.nudge()
	}
	return nil
}

// PayeeScript is the output script paying address, which must be of net
// and of a type the coin list accepts: P2PKH, P2SH, P2WPKH, P2WSH or P2TR.
func PayeeScript(address string, net *chaincfg.Params) ([]byte, error) {
	a, err := btcutil.DecodeAddress(address, net)
	if err != nil || !a.IsForNet(net) {
		return nil, fmt.Errorf("the address is not a Bitcoin address of %s", net.Name)
	}
	switch a.(type) {
	case *btcutil.AddressPubKeyHash, *btcutil.AddressScriptHash, *btcutil.AddressWitnessPubKeyHash,
		*btcutil.AddressWitnessScriptHash, *btcutil.AddressTaproot:
	default:
		return nil, errors.New("the address is not of a type paid (P2PKH, P2SH, P2WPKH, P2WSH, P2TR)")
	}
	return txscript.PayToAddrScript(a)
}

// refuse fails a payout this processor cannot pay, so that its amount is
// credited back.
func (p *Processor) refuse(ctx context.Context, sub payoutkit.Submission, settler payoutkit.Settler, reason string) error {
	p.log.Warn("bitcoin payout refused", "payout_id", sub.PayoutID, "reason", reason)
	p.stats.failed.Add(1)
	_, err := settler.FailPayout(ctx, sub.WorkspaceID, sub.PayoutID, reason)
	if errors.Is(err, payoutkit.ErrConflict) {
		return nil
	}
	return err
}

func (p *Processor) nudge() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *Processor) at(point string) {
	if p.cfg.Checkpoint != nil {
		p.cfg.Checkpoint(point)
	}
}

// Start runs the processor's loop until Stop: every PollInterval (or when
// Submit queues a payout) it scans new blocks, settles the payouts of
// transactions with enough confirmations through settler, broadcasts
// stored transactions not yet mined, and builds a batch when one is due.
func (p *Processor) Start(ctx context.Context, settler payoutkit.Settler) error {
	started := p.loop.Start(ctx, p.cfg.PollInterval, p.wake, func(ctx context.Context) {
		if err := p.Tick(ctx, settler); err != nil && ctx.Err() == nil {
			p.log.Warn("bitcoin loop", "err", err)
		}
	})
	if !started {
		return errors.New("bitcoin: the processor's loop is already running")
	}
	return nil
}

// Stop ends the loop Start began, waits for it (or for ctx), and gives up
// the wallet's lease so that another process takes over at once.
func (p *Processor) Stop(ctx context.Context) error {
	if stopped, err := p.loop.Stop(ctx); !stopped {
		return err
	}
	return p.releaseLease(ctx)
}

// Tick is one round of the loop: take or renew the wallet's lease, and, as
// its holder, scan, settle, watch settled transactions a reorg took away,
// release conflicted batches, bump, rebroadcast, batch. A processor that
// does not hold the lease does nothing: another process runs the wallet.
func (p *Processor) Tick(ctx context.Context, settler payoutkit.Settler) error {
	if held, err := p.takeLease(ctx); err != nil || !held {
		return err
	}
	tip, err := p.wallet.sync(ctx, p.holdLease)
	if errors.Is(err, errLost) {
		return nil // the lease lapsed during a long scan: another process runs the wallet
	}
	if err != nil {
		return err
	}
	if err := p.settle(ctx, settler, tip); err != nil {
		return err
	}
	if err := p.reorged(ctx, tip); err != nil {
		return err
	}
	if err := p.conflicts(ctx, tip); err != nil {
		return err
	}
	if err := p.bump(ctx); err != nil {
		return err
	}
	if err := p.rebroadcast(ctx); err != nil {
		return err
	}
	return p.batch(ctx, settler)
}

// settle completes the payouts of every transaction with Confirmations:
// each with the txid, its amount and its share of that transaction's fee,
// split by output size (SplitFee). The batch's other transactions (fee
// bumps, or the one bumped) are marked replaced: they spend the same
// inputs and can no longer confirm.
func (p *Processor) settle(ctx context.Context, settler payoutkit.Settler, tip int64) error {
	var txs []txRow
	if err := p.db.NewSelect().Model(&txs).
		Where("wallet = ? AND state = ? AND height > 0 AND height <= ?", p.wallet.Address(), statePending, tip-int64(p.cfg.Confirmations)+1).
		Scan(ctx); err != nil {
		return fmt.Errorf("bitcoin: confirmed transactions: %w", err)
	}
	for _, t := range txs {
		var payouts []payoutRow
		if err := p.db.NewSelect().Model(&payouts).Where("batch_id = ?", t.BatchID).Order("vout").Scan(ctx); err != nil {
			return err
		}
		sizes := make([]int64, len(payouts))
		for i, po := range payouts {
			sizes[i] = OutputSize(po.PkScript)
		}
		shares, err := SplitFee(t.Fee, sizes)
		if err != nil {
			return fmt.Errorf("bitcoin: batch %s: %w", t.BatchID, err)
		}
		for i, po := range payouts {
			if po.State != stateSent {
				continue
			}
			_, err := settler.CompletePayout(ctx, po.WorkspaceID, po.PayoutID, payoutkit.Completion{
				TxID:        t.TxID,
				AssetAmount: decimal.NullDecimal{Decimal: BTC(po.Sats), Valid: true},
				NetworkFee:  decimal.NullDecimal{Decimal: BTC(shares[i]), Valid: true},
			})
			if err != nil && !errors.Is(err, payoutkit.ErrConflict) { // a conflict: settled already
				return fmt.Errorf("bitcoin: complete payout %s: %w", po.PayoutID, err)
			}
			res, err := p.db.NewUpdate().Model((*payoutRow)(nil)).Set("state = ?", stateCompleted).Set("fee_share = ?", shares[i]).
				Where("idempotency_key = ? AND state = ?", po.Key, stateSent).Exec(ctx)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 { // not another process's settlement
				p.stats.completed.Add(1)
			}
		}
		err = p.inLease(ctx, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.NewUpdate().Model((*txRow)(nil)).Set("state = ?", stateConfirmed).Where("txid = ?", t.TxID).Exec(ctx); err != nil {
				return err
			}
			if _, err := tx.NewUpdate().Model((*txRow)(nil)).Set("state = ?", stateReplaced).
				Where("batch_id = ? AND txid <> ? AND state = ?", t.BatchID, t.TxID, statePending).Exec(ctx); err != nil {
				return err
			}
			// An input a fee bump added that this transaction does not
			// spend goes back to the wallet: the bump can no longer confirm.
			_, err := tx.NewUpdate().Model((*utxoRow)(nil)).Set("reserved_by = ''").
				Where("reserved_by = ? AND spent_txid = ''", t.BatchID).Exec(ctx)
			return err
		})
		if errors.Is(err, errLost) {
			return nil // another process runs the wallet now
		}
		if err != nil {
			return fmt.Errorf("bitcoin: settle %s: %w", t.TxID, err)
		}
		p.log.Info("bitcoin transaction settled", "txid", t.TxID, "batch", t.BatchID, "attempt", t.Attempt, "height", t.Height, "payouts", len(payouts), "fee", t.Fee)
	}
	return nil
}

// openBatches returns, for each batch with no transaction in a block yet
// and none settled, its latest transaction (the highest attempt).
func (p *Processor) openBatches(ctx context.Context, db bun.IDB) ([]txRow, error) {
	var txs []txRow
	if err := db.NewSelect().Model(&txs).Where("wallet = ? AND state = ?", p.wallet.Address(), statePending).
		Order("batch_id", "attempt").Scan(ctx); err != nil {
		return nil, fmt.Errorf("bitcoin: unsettled transactions: %w", err)
	}
	return latestUnmined(txs), nil
}

// latestUnmined is, of txs ordered by batch and attempt, each batch's last
// transaction, leaving out batches with a transaction in a block.
func latestUnmined(txs []txRow) []txRow {
	var out []txRow
	for i := 0; i < len(txs); {
		j, mined := i, false
		for ; j < len(txs) && txs[j].BatchID == txs[i].BatchID; j++ {
			mined = mined || txs[j].Height > 0
		}
		if !mined {
			out = append(out, txs[j-1])
		}
		i = j
	}
	return out
}

// rebroadcast sends each unmined batch's latest transaction whose last
// broadcast is older than RebroadcastAfter (or that was never sent: the
// process stopped between storing and sending it).
func (p *Processor) rebroadcast(ctx context.Context) error {
	open, err := p.openBatches(ctx, p.db)
	if err != nil {
		return err
	}
	cutoff := p.cfg.Now().Add(-p.cfg.RebroadcastAfter).UnixMilli()
	for _, t := range open {
		if t.SentAt > cutoff {
			continue
		}
		if err := p.broadcast(ctx, t); err != nil {
			p.log.Warn("bitcoin rebroadcast", "txid", t.TxID, "err", err)
		}
	}
	return nil
}

// resend broadcasts the batch's latest transaction again, unless one of
// its transactions is in a block or settled.
func (p *Processor) resend(ctx context.Context, batchID string) error {
	var txs []txRow
	if err := p.db.NewSelect().Model(&txs).Where("batch_id = ?", batchID).Order("attempt").Scan(ctx); err != nil {
		return fmt.Errorf("bitcoin: stored batch %s: %w", batchID, err)
	}
	if len(txs) == 0 {
		return fmt.Errorf("bitcoin: batch %s has no stored transaction", batchID)
	}
	for _, t := range txs {
		if t.State != statePending || t.Height > 0 {
			return nil
		}
	}
	return p.broadcast(ctx, txs[len(txs)-1])
}

// broadcast sends a stored transaction and records when. A node that has
// it already, in its mempool or a block, is fine.
func (p *Processor) broadcast(ctx context.Context, t txRow) error {
	tx := wire.NewMsgTx(2)
	if err := tx.Deserialize(bytes.NewReader(t.Raw)); err != nil {
		return fmt.Errorf("bitcoin: stored transaction %s: %w", t.TxID, err)
	}
	if _, err := p.node.SendRawTransaction(tx, false); err != nil && !benignSendError(err) {
		return fmt.Errorf("bitcoin: broadcast %s: %w", t.TxID, err)
	}
	p.stats.broadcasts.Add(1)
	_, err := p.db.NewUpdate().Model((*txRow)(nil)).Set("sent_at = ?", p.cfg.Now().UnixMilli()).Where("txid = ?", t.TxID).Exec(ctx)
	return err
}

func benignSendError(err error) bool {
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"already have transaction", "already exists", "already in block chain", "txn-already-known", "txn-already-in-mempool"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// feeRate is the node's estimate for the next blocks, in sat/vB rounded
// up, within the configured floor and ceiling; the floor when the node
// gives none.
func (p *Processor) feeRate() int64 {
	rate := p.cfg.FeeRateFloor
	if fe, ok := p.node.(FeeEstimator); ok {
		mode := btcjson.EstimateModeConservative
		if r, err := fe.EstimateSmartFee(2, &mode); err == nil && r.FeeRate != nil && *r.FeeRate > 0 && *r.FeeRate < 1 {
			// BTC per 1,000 vB, a rate, not an amount: rounded up to whole
			// sat/vB.
			rate = int64(math.Ceil(*r.FeeRate * SatoshisPerBTC / 1000))
		}
	}
	return min(max(rate, p.cfg.FeeRateFloor), p.cfg.FeeRateCeiling)
}

// batch builds, stores and broadcasts one transaction of queued payouts
// when the oldest one's window has passed or MaxBatchSize are queued. A
// wallet that cannot pay them all pays the oldest it can, and the rest
// wait.
func (p *Processor) batch(ctx context.Context, settler payoutkit.Settler) error {
	var queued []payoutRow
	if err := p.db.NewSelect().Model(&queued).Where("wallet = ? AND state = ?", p.wallet.Address(), stateQueued).
		Order("created_at", "idempotency_key").Limit(int64(p.cfg.MaxBatchSize)).Scan(ctx); err != nil {
		return fmt.Errorf("bitcoin: queued payouts: %w", err)
	}
	if len(queued) == 0 || (len(queued) < p.cfg.MaxBatchSize && queued[0].DueAt > p.cfg.Now().UnixMilli()) {
		return nil
	}
	rate := p.feeRate()
	for n := len(queued); n > 0; {
		payments := make([]*wire.TxOut, n)
		for i, po := range queued[:n] {
			payments[i] = wire.NewTxOut(po.Sats, po.PkScript)
		}
		tx, sel, err := p.wallet.BuildTx(ctx, payments, SelectParams{FeeRate: rate, DustLimit: p.cfg.DustLimit, MaxWeight: p.cfg.MaxWeight})
		var dust *DustError
		switch {
		case errors.As(err, &dust): // the dust limit was raised since it was queued
			return p.failQueued(ctx, settler, queued[dust.Index], dust.Error())
		case errors.Is(err, ErrTooLarge):
			n /= 2
			continue
		case errors.Is(err, ErrInsufficientFunds):
			n--
			continue
		case err != nil:
			return err
		}
		if n < len(queued) {
			p.short(len(queued) - n)
		}
		return p.store(ctx, tx, sel, rate, queued[:n])
	}
	p.short(len(queued))
	return nil
}

// short logs, at most once a minute, that the wallet cannot pay every
// queued payout.
func (p *Processor) short(waiting int) {
	p.stats.waitingForFunds.Add(1)
	now := p.cfg.Now()
	p.warnMu.Lock()
	defer p.warnMu.Unlock()
	if now.Sub(p.warnedAt) < time.Minute {
		return
	}
	p.warnedAt = now
	p.log.Warn("bitcoin hot wallet short of funds: payouts wait", "address", p.wallet.Address(), "waiting", waiting)
}

// failQueued fails a queued payout, credited back.
func (p *Processor) failQueued(ctx context.Context, settler payoutkit.Settler, po payoutRow, reason string) error {
	res, err := p.db.NewUpdate().Model((*payoutRow)(nil)).Set("state = ?", stateFailed).
		Where("idempotency_key = ? AND state = ?", po.Key, stateQueued).Exec(ctx)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	p.stats.failed.Add(1)
	p.log.Warn("bitcoin payout refused", "payout_id", po.PayoutID, "reason", reason)
	if _, err := settler.FailPayout(ctx, po.WorkspaceID, po.PayoutID, reason); err != nil && !errors.Is(err, payoutkit.ErrConflict) {
		return err
	}
	return nil
}

// errLost is a batch whose payouts or inputs another process took first,
// or a write of a process that no longer holds the wallet's lease.
var errLost = errors.New("bitcoin: another process took the batch's payouts or outputs, or the wallet's lease, first")

// store records a signed batch in one database transaction: the
// transaction, its inputs reserved (each still unspent and unreserved),
// and each payout (still queued) pointed at its output with its share of
// the fee. Then it broadcasts it.
func (p *Processor) store(ctx context.Context, tx *wire.MsgTx, sel Selection, rate int64, payouts []payoutRow) error {
	var raw bytes.Buffer
	if err := tx.Serialize(&raw); err != nil {
		return err
	}
	txid := tx.TxHash().String()
	now := p.cfg.Now().UnixMilli()
	row := txRow{
		TxID: txid, BatchID: txid, Attempt: 1, Wallet: p.wallet.Address(), Raw: raw.Bytes(),
		Fee: sel.Fee, FeeRate: rate, Weight: sel.Weight, State: statePending, CreatedAt: now,
	}
	err := p.inLease(ctx, func(ctx context.Context, dbtx bun.Tx) error {
		// Another process may have built the very same transaction (the
		// same payouts, outputs and deterministic signatures): it stored it.
		res, err := dbtx.NewInsert().Model(&row).On("CONFLICT DO NOTHING").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return errLost
		}
		if err := reserve(ctx, dbtx, sel.Inputs, txid); err != nil {
			return err
		}
		for i, po := range payouts {
			res, err := dbtx.NewUpdate().Model((*payoutRow)(nil)).
				Set("state = ?", stateSent).Set("batch_id = ?", txid).Set("vout = ?", i).
				Where("idempotency_key = ? AND state = ?", po.Key, stateQueued).Exec(ctx)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return errLost
			}
		}
		return nil
	})
	if errors.Is(err, errLost) {
		p.log.Info("bitcoin batch lost to another process; trying again", "payouts", len(payouts))
		return nil
	}
	if err != nil {
		return fmt.Errorf("bitcoin: store batch %s: %w", txid, err)
	}
	p.stats.batches.Add(1)
	p.log.Info("bitcoin batch signed", "txid", txid, "payouts", len(payouts), "inputs", len(sel.Inputs),
		"fee", sel.Fee, "fee_rate", rate, "vsize", VSize(sel.Weight))
	p.at("signed")
	if err := p.broadcast(ctx, row); err != nil {
		return err // the loop's rebroadcast tries again
	}
	p.at("sent")
	return nil
}

func loadPayout(ctx context.Context, db bun.IDB, key string) (payoutRow, error) {
	var r payoutRow
	err := db.NewSelect().Model(&r).Where("idempotency_key = ?", key).Scan(ctx)
	return r, err
}

// AddressValidator is an engine address validator (payoutkit.Config's
// AddressValidators, for the network "BTC") accepting the addresses this
// processor pays on net: the engine's own accepts mainnet's alone, so a
// server paying on testnet3, regtest or simnet sets this one.
func AddressValidator(net *chaincfg.Params) func(address string) error {
	return func(address string) error {
		_, err := PayeeScript(address, net)
		return err
	}
}
