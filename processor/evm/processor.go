package evm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/loop"
)

// Backend is what the processor asks of an EVM node. *ethclient.Client
// and go-ethereum's simulated backend's client implement it.
type Backend interface {
	ethereum.ChainIDReader
	ethereum.BlockNumberReader
	HeaderByNumber(ctx context.Context, number *big.Int) (*types.Header, error)
	BalanceAt(ctx context.Context, account common.Address, blockNumber *big.Int) (*big.Int, error)
	NonceAt(ctx context.Context, account common.Address, blockNumber *big.Int) (uint64, error)
	CodeAt(ctx context.Context, account common.Address, blockNumber *big.Int) ([]byte, error)
	PendingNonceAt(ctx context.Context, account common.Address) (uint64, error)
	CallContract(ctx context.Context, call ethereum.CallMsg, blockNumber *big.Int) ([]byte, error)
	EstimateGas(ctx context.Context, call ethereum.CallMsg) (uint64, error)
	SuggestGasTipCap(ctx context.Context) (*big.Int, error)
	SendTransaction(ctx context.Context, tx *types.Transaction) error
	TransactionReceipt(ctx context.Context, txHash common.Hash) (*types.Receipt, error)
}

// Config configures a Processor.
type Config struct {
	// Networks are the EVM networks paid out on; at least one.
	Networks []Network
	// Signer is the hot wallet that sends every payout; required.
	Signer Signer
	// Rates turns payouts' USD amounts into assets. Defaults to an empty
	// FixedRates: stablecoins 1:1, nothing else.
	Rates Rates
	// ReplaceAfter is how long a transaction may stay unmined before it is
	// replaced with the same nonce and a higher fee. Defaults to 3 minutes.
	ReplaceAfter time.Duration
	// PollInterval is how often the watcher looks at the unsettled
	// transfers' receipts. Defaults to 3 seconds.
	PollInterval time.Duration
	// FundsBackoff is how long a payout the hot wallet cannot cover waits
	// before it is tried again. Defaults to 30 seconds.
	FundsBackoff time.Duration
	// Logger receives the processor's log lines. Defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Checkpoint, when set, is called by Submit at "signed" (the
	// transaction is stored, not sent) and "sent" (sent, the hand-off not
	// yet recorded), for fault-injection tests that stop the process there.
	Checkpoint func(point string)
}

// Processor is a payoutkit.Processor that pays out in native coins and
// ERC-20 tokens on EVM networks, each payout exactly once: its transaction
// is signed and stored under the payout's idempotency key before it is
// sent, and a later Submit sends the stored transaction again instead of
// signing another. Start runs its watcher, which settles payouts from
// their receipts and replaces transactions that stay unmined.
type Processor struct {
	db       *bun.DB
	signer   Signer
	rates    Rates
	cfg      Config
	log      *slog.Logger
	networks map[string]*chain // by upper-case name
	stats    counters

	// firstFees, when set (tests), changes a payout's first fees.
	firstFees func(tip, feeCap *big.Int) (*big.Int, *big.Int)

	warnMu   sync.Mutex
	warnedAt map[string]time.Time

	loop loop.Runner
}

var _ payoutkit.Processor = (*Processor)(nil)

// chain is a configured network with its node.
type chain struct {
	Network
	b       Backend
	chainID *big.Int
	tokens  map[string]Token // by upper-case ticker
}

type counters struct {
	signed, broadcasts, replaced, completed, failed, waitingForFunds atomic.Int64
}

// Stats counts what a Processor has done since New.
type Stats struct {
	// Signed counts payouts signed and stored (first transactions).
	Signed int64
	// Replaced counts replacement transactions (same nonce, higher fee).
	Replaced int64
	// Completed and Failed count payouts settled from receipts.
	Completed, Failed int64
	// WaitingForFunds counts hand-offs put off because the hot wallet
	// could not cover the payout and its gas.
	WaitingForFunds int64
}

// Stats returns the processor's counters.
func (p *Processor) Stats() Stats {
	return Stats{
		Signed: p.stats.signed.Load(), Replaced: p.stats.replaced.Load(),
		Completed: p.stats.completed.Load(), Failed: p.stats.failed.Load(),
		WaitingForFunds: p.stats.waitingForFunds.Load(),
	}
}

// New returns a Processor storing its transactions in db (the engine's
// database, SQLite or PostgreSQL): it migrates the processor's tables
// (Migrate), dials each network (unless its Backend is set), checks the
// node's chain id, and raises each sender's nonce counter to the chain's
// pending nonce.
func New(ctx context.Context, db *bun.DB, cfg Config) (*Processor, error) {
	if cfg.Signer == nil {
		return nil, errors.New("evm: Config.Signer is required")
	}
	if len(cfg.Networks) == 0 {
		return nil, errors.New("evm: Config.Networks lists no network")
	}
	if cfg.Rates == nil {
		cfg.Rates = FixedRates{}
	}
	if cfg.ReplaceAfter <= 0 {
		cfg.ReplaceAfter = 3 * time.Minute
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 3 * time.Second
	}
	if cfg.FundsBackoff <= 0 {
		cfg.FundsBackoff = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p := &Processor{
		db: db, signer: cfg.Signer, rates: cfg.Rates, cfg: cfg, log: cfg.Logger,
		networks: map[string]*chain{}, warnedAt: map[string]time.Time{},
	}
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	for _, n := range cfg.Networks {
		if err := n.check(); err != nil {
			return nil, fmt.Errorf("evm: network %s: %w", n.Name, err)
		}
		name := strings.ToUpper(n.Name)
		if p.networks[name] != nil {
			return nil, fmt.Errorf("evm: network %s is configured twice", n.Name)
		}
		if n.Confirmations == 0 {
			n.Confirmations = 1
		}
		c := &chain{Network: n, b: n.Backend, chainID: big.NewInt(n.ChainID), tokens: map[string]Token{}}
		for _, t := range n.Tokens {
			if t.GasLimit == 0 {
				t.GasLimit = DefaultTokenGasLimit
			}
			c.tokens[strings.ToUpper(t.Ticker)] = t
		}
		if c.b == nil {
			cl, err := ethclient.DialContext(ctx, n.RPCURL)
			if err != nil {
				return nil, fmt.Errorf("evm: network %s: dial: %w", n.Name, err)
			}
			c.b = cl
		}
		id, err := c.b.ChainID(ctx)
		if err != nil {
			return nil, fmt.Errorf("evm: network %s: chain id: %w", n.Name, err)
		}
		if id.Cmp(c.chainID) != 0 {
			return nil, fmt.Errorf("evm: network %s: the node's chain id is %s, the configuration's %d", n.Name, id, n.ChainID)
		}
		if err := p.reconcile(ctx, c); err != nil {
			return nil, err
		}
		p.networks[name] = c
		p.log.Info("evm network ready", "network", c.Name, "chain_id", c.ChainID, "hot_wallet", p.sender(),
			"confirmations", c.Confirmations, "tokens", len(c.tokens))
	}
	return p, nil
}

// reconcile raises the sender's nonce counter on c to the chain's pending
// nonce (reconcileNonce).
func (p *Processor) reconcile(ctx context.Context, c *chain) error {
	pending, err := c.b.PendingNonceAt(ctx, p.signer.Address())
	if err != nil {
		return fmt.Errorf("evm: network %s: pending nonce: %w", c.Name, err)
	}
	if err := reconcileNonce(ctx, p.db, c.ChainID, p.sender(), pending); err != nil {
		return fmt.Errorf("evm: network %s: nonce counter: %w", c.Name, err)
	}
	return nil
}

func (p *Processor) sender() string { return p.signer.Address().Hex() }

// ExplorerURL returns the explorer page of txid on network, from the
// network's ExplorerTxURL; "" when there is none.
func (p *Processor) ExplorerURL(network, txid string) string {
	return p.cfg.ExplorerURL(network, txid)
}

// Submit implements payoutkit.Processor. The first call for a payout
// converts its amount (Rates, rounded down to the asset's decimals),
// checks the hot wallet covers it and the gas (otherwise ErrNotDue, with a
// back-off), takes a nonce, and signs and stores the transaction in one
// database transaction; then it sends it. Every later call with the same
// idempotency key sends the stored transaction again, and never signs a
// new payment. A payout on a network or in an asset that is not configured
// is failed (credited back).
func (p *Processor) Submit(ctx context.Context, sub payoutkit.Submission, settler payoutkit.Settler) error {
	t, err := loadTransfer(ctx, p.db, sub.IdempotencyKey)
	switch {
	case err == nil:
		return p.resend(ctx, t)
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	c := p.networks[strings.ToUpper(sub.Network)]
	if c == nil {
		return p.refuse(ctx, sub, settler, fmt.Sprintf("the network %s is not paid out by this server", sub.Network))
	}
	native := strings.EqualFold(sub.Asset, c.native())
	token, isToken := c.tokens[strings.ToUpper(sub.Asset)]
	if !native && !isToken {
		return p.refuse(ctx, sub, settler, fmt.Sprintf("%s on %s is not paid out by this server", sub.Asset, sub.Network))
	}
	if !common.IsHexAddress(sub.Address) {
		return p.refuse(ctx, sub, settler, "the address is not an EVM address")
	}
	to := common.HexToAddress(sub.Address)

	decimals := 18
	if isToken {
		decimals = token.Decimals
	}
	places := int32(min(decimals, sub.Coin.Decimals))
	if sub.Coin == (payoutkit.Coin{}) {
		places = int32(decimals)
	}
	price, err := p.rates.USDPrice(ctx, sub.Asset)
	if err != nil {
		return fmt.Errorf("evm: payout %s: %w", sub.PayoutID, err)
	}
	amount := assetAmount(int64(sub.Amount), price, places)
	if amount.Sign() <= 0 {
		return p.refuse(ctx, sub, settler, fmt.Sprintf("%s USD is less than the smallest amount of %s", sub.Amount, sub.Asset))
	}
	units := amount.Shift(int32(decimals)).BigInt()

	// The call: value to the recipient, or the token's transfer.
	call := ethereum.CallMsg{From: p.signer.Address(), To: &to, Value: units}
	var gas uint64
	if isToken {
		call = ethereum.CallMsg{From: p.signer.Address(), To: &token.Contract, Value: new(big.Int), Data: transferData(to, units)}
		gas = p.tokenGas(ctx, c, token, call)
	} else if gas, err = p.nativeGas(ctx, c, call); err != nil {
		return fmt.Errorf("evm: payout %s: estimate gas: %w", sub.PayoutID, err)
	}
	tip, feeCap, err := p.fees(ctx, c)
	if err != nil {
		return err
	}
	if p.firstFees != nil {
		tip, feeCap = p.firstFees(tip, feeCap)
	}
	if err := p.coverable(ctx, c, sub, isToken, token, units, gas, feeCap); err != nil {
		return err
	}

	now := p.cfg.Now()
	t = transferRow{
		Key: sub.IdempotencyKey, WorkspaceID: sub.WorkspaceID, PayoutID: sub.PayoutID,
		Network: c.Name, ChainID: c.ChainID, Sender: p.sender(), Asset: strings.ToUpper(sub.Asset),
		Recipient: to.Hex(), AssetAmount: amount.String(), Units: units.String(), Places: int(places),
		State: statePending, Attempts: 1, SignedAt: now.UnixMilli(), CreatedAt: now.UnixMilli(),
	}
	if isToken {
		t.Contract = token.Contract.Hex()
	}
	var signed *types.Transaction
	inserted := false
	err = p.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		nonce, err := takeNonce(ctx, tx, c.ChainID, t.Sender)
		if err != nil {
			return err
		}
		t.Nonce = int64(nonce)
		res, err := tx.NewInsert().Model(&t).On("CONFLICT (idempotency_key) DO NOTHING").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errAlreadyStored // another call stored it meanwhile; the nonce goes back
		}
		signed, err = p.signer.SignTx(ctx, types.NewTx(&types.DynamicFeeTx{
			ChainID: c.chainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: gas,
			To: call.To, Value: call.Value, Data: call.Data,
		}), c.chainID)
		if err != nil {
			return fmt.Errorf("evm: sign: %w", err)
		}
		if err := insertTx(ctx, tx, t.Key, 1, signed, now); err != nil {
			return err
		}
		inserted = true
		return nil
	})
	if errors.Is(err, errAlreadyStored) {
		if t, err = loadTransfer(ctx, p.db, sub.IdempotencyKey); err != nil {
			return err
		}
		return p.resend(ctx, t)
	}
	if err != nil || !inserted {
		return err
	}
	p.stats.signed.Add(1)
	p.log.Info("evm payout signed", "payout_id", sub.PayoutID, "network", c.Name, "asset", t.Asset,
		"asset_amount", t.AssetAmount, "nonce", t.Nonce, "tx", signed.Hash().Hex())
	p.at("signed")
	if err := p.send(ctx, c, signed); err != nil {
		return err
	}
	p.at("sent")
	return nil
}

// nativeGas is a plain transfer's 21000 gas to an account without code,
// and the node's estimate to a contract.
func (p *Processor) nativeGas(ctx context.Context, c *chain, call ethereum.CallMsg) (uint64, error) {
	code, err := c.b.CodeAt(ctx, *call.To, nil)
	if err != nil {
		return 0, err
	}
	if len(code) == 0 {
		return 21_000, nil
	}
	return c.b.EstimateGas(ctx, call)
}

// tokenGas is the node's estimate of a token transfer plus a quarter, or
// the token's GasLimit when the node cannot estimate it (a transfer that
// would revert is sent all the same: its receipt fails the payout, with
// the chain's word for it).
func (p *Processor) tokenGas(ctx context.Context, c *chain, token Token, call ethereum.CallMsg) uint64 {
	g, err := c.b.EstimateGas(ctx, call)
	if err != nil {
		p.log.Warn("evm token transfer gas not estimated: sending with the token's gas limit", "network", c.Name, "token", token.Ticker, "gas", token.GasLimit, "err", err)
		return token.GasLimit
	}
	return g + g/4
}

var errAlreadyStored = errors.New("evm: transfer already stored")

func insertTx(ctx context.Context, db bun.IDB, key string, attempt int, tx *types.Transaction, now time.Time) error {
	raw, err := tx.MarshalBinary()
	if err != nil {
		return err
	}
	row := txRow{
		Hash: tx.Hash().Hex(), Key: key, Attempt: attempt, Raw: raw,
		TipCap: tx.GasTipCap().String(), FeeCap: tx.GasFeeCap().String(), CreatedAt: now.UnixMilli(),
	}
	_, err = db.NewInsert().Model(&row).Exec(ctx)
	return err
}

func (p *Processor) at(point string) {
	if p.cfg.Checkpoint != nil {
		p.cfg.Checkpoint(point)
	}
}

// refuse fails a payout this processor cannot pay, so that its amount is
// credited back.
func (p *Processor) refuse(ctx context.Context, sub payoutkit.Submission, settler payoutkit.Settler, reason string) error {
	p.log.Warn("evm payout refused", "payout_id", sub.PayoutID, "reason", reason)
	_, err := settler.FailPayout(ctx, sub.WorkspaceID, sub.PayoutID, reason)
	if errors.Is(err, payoutkit.ErrConflict) {
		return nil
	}
	return err
}

// fees are the tip and fee cap of a new transaction: the node's suggested
// tip, and twice the latest base fee plus the tip (capped by MaxFeePerGas).
func (p *Processor) fees(ctx context.Context, c *chain) (tip, feeCap *big.Int, err error) {
	tip, err = c.b.SuggestGasTipCap(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("evm: network %s: tip: %w", c.Name, err)
	}
	h, err := c.b.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("evm: network %s: head: %w", c.Name, err)
	}
	base := new(big.Int)
	if h.BaseFee != nil {
		base.Set(h.BaseFee)
	}
	feeCap = new(big.Int).Add(new(big.Int).Mul(base, big.NewInt(2)), tip)
	if c.MaxFeePerGas != nil && feeCap.Cmp(c.MaxFeePerGas) > 0 {
		feeCap = new(big.Int).Set(c.MaxFeePerGas)
		if tip.Cmp(feeCap) > 0 {
			tip = new(big.Int).Set(feeCap)
		}
	}
	return tip, feeCap, nil
}

// coverable answers ErrNotDue when the hot wallet's balance, less what its
// unsettled transfers still owe, does not cover the payout and its gas.
func (p *Processor) coverable(ctx context.Context, c *chain, sub payoutkit.Submission, isToken bool, token Token, units *big.Int, gas uint64, feeCap *big.Int) error {
	from := p.signer.Address()
	pending, err := pendingTransfers(ctx, p.db, c.ChainID, p.sender())
	if err != nil {
		return err
	}
	needNative := new(big.Int).Mul(new(big.Int).SetUint64(gas), feeCap)
	needToken := new(big.Int)
	if isToken {
		needToken.Set(units)
	} else {
		needNative.Add(needNative, units)
	}
	for _, t := range pending {
		u, _ := new(big.Int).SetString(t.Units, 10)
		if u == nil {
			continue
		}
		switch {
		case t.Contract == "":
			needNative.Add(needNative, u)
		case isToken && strings.EqualFold(t.Contract, token.Contract.Hex()):
			needToken.Add(needToken, u)
		}
	}
	have, err := c.b.BalanceAt(ctx, from, nil)
	if err != nil {
		return fmt.Errorf("evm: network %s: balance: %w", c.Name, err)
	}
	short := ""
	if have.Cmp(needNative) < 0 {
		short = c.native() + " for gas"
		if !isToken {
			short = c.native()
		}
	}
	if isToken && short == "" {
		tb, err := tokenBalance(ctx, c.b, token.Contract, from)
		if err != nil {
			return fmt.Errorf("evm: network %s: %s balance: %w", c.Name, token.Ticker, err)
		}
		if tb.Cmp(needToken) < 0 {
			short = token.Ticker
		}
	}
	if short == "" {
		return nil
	}
	p.stats.waitingForFunds.Add(1)
	p.warnFunds(c.Name, short, sub.PayoutID)
	return &payoutkit.NotDueError{At: p.cfg.Now().Add(p.cfg.FundsBackoff)}
}

// warnFunds logs, at most once a minute per network and asset, that the hot
// wallet is short.
func (p *Processor) warnFunds(network, what, payoutID string) {
	key := network + "/" + what
	now := p.cfg.Now()
	p.warnMu.Lock()
	last, seen := p.warnedAt[key]
	if seen && now.Sub(last) < time.Minute {
		p.warnMu.Unlock()
		return
	}
	p.warnedAt[key] = now
	p.warnMu.Unlock()
	p.log.Warn("evm hot wallet short of funds: payouts wait", "network", network, "short_of", what,
		"address", p.sender(), "payout_id", payoutID, "waiting_total", p.stats.waitingForFunds.Load())
}

// resend sends a stored transfer's latest transaction again, unless it has
// settled.
func (p *Processor) resend(ctx context.Context, t transferRow) error {
	if t.State != statePending {
		return nil
	}
	c := p.byChain(t.ChainID)
	if c == nil {
		return fmt.Errorf("evm: payout %s is on chain %d, which is not configured", t.PayoutID, t.ChainID)
	}
	txs, err := loadTxs(ctx, p.db, t.Key)
	if err != nil || len(txs) == 0 {
		return errors.Join(err, fmt.Errorf("evm: payout %s has no stored transaction", t.PayoutID))
	}
	tx, err := decodeTx(txs[len(txs)-1])
	if err != nil {
		return err
	}
	return p.send(ctx, c, tx)
}

func (p *Processor) byChain(id int64) *chain {
	for _, c := range p.networks {
		if c.ChainID == id {
			return c
		}
	}
	return nil
}

func decodeTx(r txRow) (*types.Transaction, error) {
	tx := new(types.Transaction)
	if err := tx.UnmarshalBinary(r.Raw); err != nil {
		return nil, fmt.Errorf("evm: stored transaction %s: %w", r.Hash, err)
	}
	return tx, nil
}

// send broadcasts tx. A node that knows it already, or whose chain has
// passed its nonce (it, or a replacement of it, was mined), is fine: the
// watcher settles from receipts.
func (p *Processor) send(ctx context.Context, c *chain, tx *types.Transaction) error {
	err := c.b.SendTransaction(ctx, tx)
	if err == nil {
		p.stats.broadcasts.Add(1)
		return nil
	}
	if benignSendError(err) {
		return nil
	}
	return fmt.Errorf("evm: network %s: send %s: %w", c.Name, tx.Hash().Hex(), err)
}

func benignSendError(err error) bool {
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"already known", "known transaction", "nonce too low", "replacement transaction underpriced", "already imported"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// networkFee converts wei into the payout's asset at its places: the native
// coin directly, a token through Rates; unset when a price is missing.
func (p *Processor) networkFee(ctx context.Context, c *chain, t transferRow, wei *big.Int) decimal.NullDecimal {
	fee := decimal.NewFromBigInt(wei, -18)
	if t.Contract != "" {
		nativeUSD, err1 := p.rates.USDPrice(ctx, c.native())
		assetUSD, err2 := p.rates.USDPrice(ctx, t.Asset)
		if err1 != nil || err2 != nil {
			return decimal.NullDecimal{}
		}
		fee, _ = fee.Mul(nativeUSD).QuoRem(assetUSD, int32(t.Places))
	}
	return decimal.NullDecimal{Decimal: fee.Truncate(int32(t.Places)), Valid: true}
}
