package evm

import (
	"context"
	"crypto/ecdsa"
	"io"
	"log/slog"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/params"
	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/processor/evm/evmtest"
)

// sim is a processor on go-ethereum's simulated backend with a funded hot
// wallet, a deployed TestToken (6 decimals, as USDT on ETH), and an engine
// on SQLite.
type sim struct {
	t       *testing.T
	backend *simulated.Backend
	client  simulated.Client
	key     *ecdsa.PrivateKey
	signer  *LocalKey
	token   common.Address
	eng     *testEngine
	proc    *Processor
	now     time.Time
	cfg     Config
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newSim(t *testing.T, walletWei *big.Int) *sim {
	t.Helper()
	key, signer := testKey(t)
	b := simulated.NewBackend(types.GenesisAlloc{signer.Address(): {Balance: walletWei}})
	t.Cleanup(func() { b.Close() })
	s := &sim{t: t, backend: b, client: b.Client(), key: key, signer: signer, now: time.Now()}
	ctx := context.Background()
	if walletWei.Cmp(big.NewInt(params.Ether)) >= 0 {
		h := sendRaw(t, ctx, s.client, key, nil, new(big.Int), evmtest.DeployData(6, big.NewInt(1_000_000_000_000)), 2_000_000)
		b.Commit()
		r, err := s.client.TransactionReceipt(ctx, h)
		if err != nil || r.Status != types.ReceiptStatusSuccessful {
			t.Fatalf("deploying the token: %v %+v", err, r)
		}
		s.token = r.ContractAddress
	} else {
		s.token = common.HexToAddress("0x00000000000000000000000000000000000000aa")
	}
	s.eng = newSQLiteEngine(t, nil)
	s.cfg = Config{
		Networks: []Network{{Name: "ETH", Backend: s.client, ChainID: 1337, Confirmations: 2,
			Tokens: []Token{{Ticker: "USDT", Contract: s.token, Decimals: 6}}}},
		Signer: signer, Rates: FixedRates{"ETH": decimal.RequireFromString("3000")},
		ReplaceAfter: time.Minute, Logger: quiet, Now: func() time.Time { return s.now },
	}
	s.proc = s.newProcessor()
	return s
}

func (s *sim) newProcessor() *Processor {
	s.t.Helper()
	p, err := New(context.Background(), s.eng.db, s.cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	return p
}

func (s *sim) submit(sub payoutkit.Submission) error {
	return s.proc.Submit(context.Background(), sub, s.eng)
}

// mine commits n blocks and runs the watcher once after each.
func (s *sim) mine(n int) {
	for range n {
		s.backend.Commit()
		s.proc.Watch(context.Background(), s.eng)
	}
}

func (s *sim) balance(who common.Address) *big.Int {
	s.t.Helper()
	v, err := s.client.BalanceAt(context.Background(), who, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	return v
}

func (s *sim) tokenBalance(who common.Address) *big.Int {
	s.t.Helper()
	v, err := tokenBalance(context.Background(), s.client, s.token, who)
	if err != nil {
		s.t.Fatal(err)
	}
	return v
}

func recipient(t testing.TB) common.Address {
	_, k := testKey(t)
	return k.Address()
}

func ether(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(params.Ether)) }

func TestNativePayoutIsSignedOnceAndSettlesAfterItsConfirmations(t *testing.T) {
	s := newSim(t, ether(100))
	to := recipient(t)
	sub := s.eng.payout(t, "p1", "30.00", "ETH", "ETH", to)
	if err := s.submit(sub); err != nil {
		t.Fatal(err)
	}
	// A second and third hand-off (a lease ran out, a restart) send the
	// stored transaction again: no second signature, no second nonce.
	for range 2 {
		if err := s.submit(sub); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, s.eng.db, "payoutkit_evm_txs", ""); n != 1 {
		t.Fatalf("%d stored transactions, want 1", n)
	}
	s.mine(1)
	if p := s.eng.status(t, "p1"); p.Status != payoutkit.PayoutSubmitted {
		t.Fatalf("settled with 1 of 2 confirmations: %s", p.Status)
	}
	s.mine(1)
	p := s.eng.status(t, "p1")
	if p.Status != payoutkit.PayoutCompleted {
		t.Fatalf("status %s, want completed", p.Status)
	}
	// 30 USD at 3000 USD/ETH is exactly 0.01 ETH.
	if got := s.balance(to); got.Cmp(new(big.Int).Div(ether(1), big.NewInt(100))) != 0 {
		t.Fatalf("recipient holds %s wei, want 10^16", got)
	}
	if p.AssetAmount.Decimal.String() != "0.01" {
		t.Fatalf("asset_amount %s, want 0.01", p.AssetAmount.Decimal)
	}
	r, err := s.client.TransactionReceipt(context.Background(), common.HexToHash(p.TxID))
	if err != nil {
		t.Fatalf("txid %s: %v", p.TxID, err)
	}
	fee := new(big.Int).Mul(new(big.Int).SetUint64(r.GasUsed), r.EffectiveGasPrice)
	if want := decimal.NewFromBigInt(fee, -18); !p.NetworkFee.Valid || !p.NetworkFee.Decimal.Equal(want) {
		t.Fatalf("network_fee %v, want %s", p.NetworkFee, want)
	}
	if st := s.proc.Stats(); st.Signed != 1 || st.Completed != 1 {
		t.Fatalf("stats %+v", st)
	}
	// Settled: a late hand-off sends nothing and changes nothing.
	if err := s.submit(sub); err != nil {
		t.Fatal(err)
	}
	if s.mine(1); s.proc.Stats().Completed != 1 {
		t.Fatal("settled twice")
	}
}

func TestTokenPayoutMovesExactlyTheAssetAmount(t *testing.T) {
	s := newSim(t, ether(100))
	to := recipient(t)
	if err := s.submit(s.eng.payout(t, "t1", "12.34", "USDT", "ETH", to)); err != nil {
		t.Fatal(err)
	}
	s.mine(2)
	p := s.eng.status(t, "t1")
	if p.Status != payoutkit.PayoutCompleted || p.AssetAmount.Decimal.String() != "12.34" {
		t.Fatalf("payout %s %v %q", p.Status, p.AssetAmount, p.FailureReason)
	}
	if got := s.tokenBalance(to); got.Cmp(big.NewInt(12_340_000)) != 0 {
		t.Fatalf("recipient holds %s base units, want 12340000", got)
	}
	// The fee, paid in ETH, is reported in USDT at the rates (3000 USD/ETH).
	if !p.NetworkFee.Valid || p.NetworkFee.Decimal.Sign() <= 0 || p.NetworkFee.Decimal.Exponent() < -6 {
		t.Fatalf("network_fee %v", p.NetworkFee)
	}
}

func TestRevertedTransferFailsThePayoutAndCreditsItBack(t *testing.T) {
	s := newSim(t, ether(100))
	to := recipient(t)
	h := sendRaw(t, context.Background(), s.client, s.key, &s.token, new(big.Int), evmtest.RefuseData(to), 500_000)
	s.backend.Commit()
	if r, err := s.client.TransactionReceipt(context.Background(), h); err != nil || r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("refuse: %v %+v", err, r)
	}
	// The processor's nonce counter learnt nothing of that transaction: a
	// new processor reconciles with the chain.
	s.proc = s.newProcessor()
	before := s.eng.available(t)
	if err := s.submit(s.eng.payout(t, "r1", "5.00", "USDT", "ETH", to)); err != nil {
		t.Fatal(err)
	}
	s.mine(2)
	p := s.eng.status(t, "r1")
	if p.Status != payoutkit.PayoutFailed {
		t.Fatalf("status %s, want failed", p.Status)
	}
	if after := s.eng.available(t); after != before {
		t.Fatalf("available %s, want %s again", after, before)
	}
	if s.tokenBalance(to).Sign() != 0 {
		t.Fatal("the refused recipient received tokens")
	}
}

func TestUnminedTransactionIsReplacedAndSettlesOnce(t *testing.T) {
	s := newSim(t, ether(100))
	s.proc.firstFees = func(tip, feeCap *big.Int) (*big.Int, *big.Int) { return big.NewInt(1), big.NewInt(1) }
	to := recipient(t)
	if err := s.submit(s.eng.payout(t, "s1", "30.00", "ETH", "ETH", to)); err != nil {
		t.Fatal(err)
	}
	s.mine(2) // under the base fee: not mined
	if p := s.eng.status(t, "s1"); p.Status != payoutkit.PayoutSubmitted {
		t.Fatalf("status %s", p.Status)
	}
	s.now = s.now.Add(2 * time.Minute)
	s.proc.Watch(context.Background(), s.eng) // replaces it
	if n := count(t, s.eng.db, "payoutkit_evm_txs", ""); n != 2 {
		t.Fatalf("%d stored transactions, want the first and its replacement", n)
	}
	s.mine(2)
	p := s.eng.status(t, "s1")
	if p.Status != payoutkit.PayoutCompleted {
		t.Fatalf("status %s, want completed", p.Status)
	}
	var hashes []string
	if err := s.eng.db.NewSelect().Table("payoutkit_evm_txs").Column("hash").Order("attempt").Scan(context.Background(), &hashes); err != nil {
		t.Fatal(err)
	}
	if p.TxID != hashes[1] {
		t.Fatalf("txid %s, want the replacement %s", p.TxID, hashes[1])
	}
	if got := s.balance(to); got.Cmp(new(big.Int).Div(ether(1), big.NewInt(100))) != 0 {
		t.Fatalf("recipient holds %s wei", got)
	}
	if st := s.proc.Stats(); st.Replaced != 1 || st.Completed != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestShortWalletPutsThePayoutOffAndSignsNothing(t *testing.T) {
	s := newSim(t, big.NewInt(1_000_000)) // far from 0.01 ETH and its gas
	sub := s.eng.payout(t, "w1", "30.00", "ETH", "ETH", recipient(t))
	err := s.submit(sub)
	var nd *payoutkit.NotDueError
	if !isNotDue(err) || !asNotDue(err, &nd) || !nd.At.After(s.now) {
		t.Fatalf("err %v, want a NotDueError in the future", err)
	}
	if n := count(t, s.eng.db, "payoutkit_evm_transfers", ""); n != 0 {
		t.Fatalf("%d transfers stored", n)
	}
	var next int64
	if err := s.eng.db.NewSelect().Table("payoutkit_evm_nonces").Column("next_nonce").Scan(context.Background(), &next); err != nil || next != 0 {
		t.Fatalf("nonce counter %d (%v), want 0: no nonce taken", next, err)
	}
	if st := s.proc.Stats(); st.WaitingForFunds != 1 {
		t.Fatalf("stats %+v", st)
	}
	if p := s.eng.status(t, "w1"); p.Status != payoutkit.PayoutSubmitted {
		t.Fatalf("status %s, want submitted still", p.Status)
	}
}

func TestConcurrentSubmitsOfOnePayoutSignOnce(t *testing.T) {
	s := newSim(t, ether(100))
	subs := []payoutkit.Submission{
		s.eng.payout(t, "c1", "3.00", "ETH", "ETH", recipient(t)),
		s.eng.payout(t, "c2", "3.00", "USDT", "ETH", recipient(t)),
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() { errs <- s.submit(subs[i%2]) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, s.eng.db, "payoutkit_evm_txs", ""); n != 2 {
		t.Fatalf("%d stored transactions, want 2", n)
	}
	var nonces []int64
	if err := s.eng.db.NewSelect().Table("payoutkit_evm_transfers").Column("nonce").Order("nonce").Scan(context.Background(), &nonces); err != nil {
		t.Fatal(err)
	}
	if len(nonces) != 2 || nonces[0] == nonces[1] {
		t.Fatalf("nonces %v", nonces)
	}
	s.mine(2)
	for _, id := range []string{"c1", "c2"} {
		if p := s.eng.status(t, id); p.Status != payoutkit.PayoutCompleted {
			t.Fatalf("%s: %s", id, p.Status)
		}
	}
}

func TestPayoutOnAnotherRailIsFailed(t *testing.T) {
	s := newSim(t, ether(100))
	before := s.eng.available(t)
	for _, sub := range []payoutkit.Submission{
		s.eng.payoutTo(t, "x1", "3.00", "USDT", "TRON", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"),
		s.eng.payout(t, "x2", "3.00", "USDC", "ETH", recipient(t)), // a coin, but no token configured
	} {
		if err := s.submit(sub); err != nil {
			t.Fatal(err)
		}
		if p := s.eng.status(t, sub.PayoutID); p.Status != payoutkit.PayoutFailed || p.FailureReason == "" {
			t.Fatalf("%s: %s %q, want failed with a reason", sub.PayoutID, p.Status, p.FailureReason)
		}
	}
	if after := s.eng.available(t); after != before {
		t.Fatalf("available %s, want %s", after, before)
	}
	if n := count(t, s.eng.db, "payoutkit_evm_transfers", ""); n != 0 {
		t.Fatalf("%d transfers stored", n)
	}
}

func TestReorgedReceiptIsWatchedAgain(t *testing.T) {
	s := newSim(t, ether(100))
	to := recipient(t)
	parent := s.backend.Commit() // an empty block to fork from
	if err := s.submit(s.eng.payout(t, "g1", "30.00", "ETH", "ETH", to)); err != nil {
		t.Fatal(err)
	}
	s.mine(1) // mined, 1 of 2 confirmations
	if err := s.backend.Fork(parent); err != nil {
		t.Fatal(err)
	}
	// The fork's first block is empty and the chain that held the
	// transaction is now the shorter one.
	s.backend.Rollback()
	s.backend.Commit()
	s.backend.Commit()
	s.proc.Watch(context.Background(), s.eng)
	if p := s.eng.status(t, "g1"); p.Status != payoutkit.PayoutSubmitted {
		t.Fatalf("settled from a reorged block: %s", p.Status)
	}
	// The watcher sent it again; it is mined on the new chain and settles.
	s.mine(3)
	p := s.eng.status(t, "g1")
	if p.Status != payoutkit.PayoutCompleted {
		t.Fatalf("status %s", p.Status)
	}
	if got := s.balance(to); got.Cmp(new(big.Int).Div(ether(1), big.NewInt(100))) != 0 {
		t.Fatalf("recipient holds %s wei", got)
	}
	_ = crypto.S256
}
