package evm

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/uptrace/bun"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/processortest"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// testKey is a fresh hot wallet key, its LocalKey and address.
func testKey(t testing.TB) (*ecdsa.PrivateKey, *LocalKey) {
	t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	lk, err := NewLocalKey(hex.EncodeToString(crypto.FromECDSA(k)))
	if err != nil {
		t.Fatal(err)
	}
	return k, lk
}

// sendRaw signs and sends a transaction from key outside the processor
// (a deployment when to is nil) and returns its hash.
func sendRaw(t testing.TB, ctx context.Context, b Backend, key *ecdsa.PrivateKey, to *common.Address, value *big.Int, data []byte, gas uint64) common.Hash {
	t.Helper()
	from := crypto.PubkeyToAddress(key.PublicKey)
	nonce, err := b.PendingNonceAt(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	id, err := b.ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h, err := b.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tip := big.NewInt(1_000_000_000)
	feeCap := new(big.Int).Add(new(big.Int).Mul(h.BaseFee, big.NewInt(2)), tip)
	tx, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{ChainID: id, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: gas, To: to, Value: value, Data: data}), types.LatestSignerForChainID(id), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	return tx.Hash()
}

// testEngine is an engine over a real store with a funded workspace, and
// the same database as a *bun.DB for the processor.
type testEngine struct {
	*payoutkit.Engine
	ws    string
	db    *bun.DB
	store payoutkit.Store
}

// newSQLiteEngine makes the engine's SQLite database in a temporary
// directory, and opens it for the processor as a program would.
func newSQLiteEngine(t testing.TB, coins []payoutkit.Coin) *testEngine {
	t.Helper()
	store, db := processortest.OpenSQLite(t, quiet)
	return fundedEngine(t, store, db, coins)
}

// newPostgresEngine is newSQLiteEngine on a fresh PostgreSQL schema, or a
// skip without PAYOUTKIT_TEST_POSTGRES.
func newPostgresEngine(t testing.TB, coins []payoutkit.Coin) *testEngine {
	t.Helper()
	store, db := processortest.OpenPostgres(t, pgtest.Postgres(t), quiet)
	return fundedEngine(t, store, db, coins)
}

func fundedEngine(t testing.TB, store payoutkit.Store, db *bun.DB, coins []payoutkit.Coin) *testEngine {
	t.Helper()
	eng, ws := processortest.FundedEngine(t, store, &payoutkit.Config{Coins: coins, Logger: quiet}, "EVM test", "1000000.00")
	return &testEngine{Engine: eng, ws: ws, db: db, store: store}
}

// payout creates a payout and returns its Submission as the hand-off loop
// would give it.
func (e *testEngine) payout(t testing.TB, id, amount, asset, network string, to common.Address) payoutkit.Submission {
	return e.payoutTo(t, id, amount, asset, network, to.Hex())
}

// payoutTo is payout to an address of any network.
func (e *testEngine) payoutTo(t testing.TB, id, amount, asset, network, to string) payoutkit.Submission {
	t.Helper()
	ctx := context.Background()
	p, _, err := e.CreatePayout(ctx, e.ws, payoutkit.CreatePayoutRequest{PayoutID: id, Amount: amount, Asset: asset, Network: network, Address: to, PayerID: "cust-1"})
	if err != nil {
		t.Fatal(err)
	}
	coins, _ := e.Coins(ctx, e.ws)
	var coin payoutkit.Coin
	for _, c := range coins {
		if strings.EqualFold(c.Ticker, asset) && strings.EqualFold(c.Network, network) {
			coin = c
		}
	}
	return payoutkit.Submission{Payout: p, Coin: coin, IdempotencyKey: payoutkit.IdempotencyKey(e.ws, id)}
}

func (e *testEngine) status(t testing.TB, id string) payoutkit.Payout {
	t.Helper()
	p, err := e.Payout(context.Background(), e.ws, id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *testEngine) available(t testing.TB) payoutkit.Amount {
	t.Helper()
	b, err := e.Balance(context.Background(), e.ws)
	if err != nil {
		t.Fatal(err)
	}
	return b.Available
}

// count counts rows of a processor table.
func count(t testing.TB, db *bun.DB, table, where string, args ...any) int {
	t.Helper()
	q := db.NewSelect().Table(table)
	if where != "" {
		q = q.Where(where, args...)
	}
	n, err := q.Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func isNotDue(err error) bool { return errors.Is(err, payoutkit.ErrNotDue) }

func asNotDue(err error, target **payoutkit.NotDueError) bool { return errors.As(err, target) }

// webhooks collects the webhooks run's engine delivers.
type webhooks = processortest.Webhooks

// run starts an engine over e's store with proc as its processor, both
// loops running (hand-off, webhook delivery, the watcher), and webhooks
// delivered to the returned collector; all stop at the test's end.
func (e *testEngine) run(t testing.TB, proc *Processor) *webhooks {
	t.Helper()
	return processortest.Run(t, e.store, e.ws, &payoutkit.Config{Logger: quiet}, proc)
}
