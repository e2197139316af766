package bitcoin

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/uptrace/bun"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/address"
	"github.com/payoutkit/payoutkit/internal/processortest"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testEngine is an engine over a real store with a funded workspace, and
// the same database as a *bun.DB for the processor.
type testEngine struct {
	*payoutkit.Engine
	ws    string
	db    *bun.DB
	store payoutkit.Store
}

// engineCfg is an engine's configuration taking regtest BTC addresses as
// well as mainnet's (which a regtest processor then refuses).
func engineCfg() *payoutkit.Config {
	regtest := AddressValidator(&chaincfg.RegressionNetParams)
	return &payoutkit.Config{Logger: quiet, AddressValidators: map[string]func(string) error{"BTC": func(a string) error {
		if err := regtest(a); err != nil {
			return address.Bitcoin(a)
		}
		return nil
	}}}
}

// eachEngine runs f on an engine over SQLite and, with
// PAYOUTKIT_TEST_POSTGRES, over PostgreSQL.
func eachEngine(t *testing.T, f func(t *testing.T, e *testEngine)) {
	t.Run("sqlite", func(t *testing.T) {
		store, db := processortest.OpenSQLite(t, quiet)
		f(t, fundedEngine(t, store, db))
	})
	t.Run("postgres", func(t *testing.T) {
		store, db := processortest.OpenPostgres(t, pgtest.Postgres(t), quiet)
		f(t, fundedEngine(t, store, db))
	})
}

func fundedEngine(t testing.TB, store payoutkit.Store, db *bun.DB) *testEngine {
	t.Helper()
	eng, ws := processortest.FundedEngine(t, store, engineCfg(), "Bitcoin test", "10000000.00")
	return &testEngine{Engine: eng, ws: ws, db: db, store: store}
}

// payout creates a BTC payout and returns its Submission as the hand-off
// loop would give it.
func (e *testEngine) payout(t testing.TB, id, amount, to string) payoutkit.Submission {
	t.Helper()
	ctx := context.Background()
	p, _, err := e.CreatePayout(ctx, e.ws, payoutkit.CreatePayoutRequest{PayoutID: id, Amount: amount, Asset: "BTC", Network: "BTC", Address: to, PayerID: "cust-1"})
	if err != nil {
		t.Fatal(err)
	}
	return payoutkit.Submission{Payout: p, Coin: payoutkit.Coin{Ticker: "BTC", Network: "BTC", Decimals: 8}, IdempotencyKey: payoutkit.IdempotencyKey(e.ws, id)}
}

func (e *testEngine) status(t testing.TB, id string) payoutkit.Payout {
	t.Helper()
	p, err := e.Payout(context.Background(), e.ws, id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// webhooks collects the webhooks run's engine delivers.
type webhooks = processortest.Webhooks

// run starts an engine over e's store with proc as its processor, its
// loops and the processor's running, and webhooks delivered to the
// returned collector; all stop at the test's end.
func (e *testEngine) run(t testing.TB, proc *Processor) *webhooks {
	t.Helper()
	return processortest.Run(t, e.store, e.ws, engineCfg(), proc)
}

// eachDB runs f on a fresh SQLite database and, with
// PAYOUTKIT_TEST_POSTGRES, on a fresh PostgreSQL schema.
func eachDB(t *testing.T, f func(t *testing.T, db *bun.DB)) {
	t.Run("sqlite", func(t *testing.T) { f(t, sqliteDB(t)) })
	t.Run("postgres", func(t *testing.T) { f(t, postgresDB(t)) })
}

func sqliteDB(t testing.TB) *bun.DB {
	t.Helper()
	return processortest.OpenDB(t, filepath.Join(t.TempDir(), "payoutkit.db"))
}

// postgresDB opens a schema of the test's own.
func postgresDB(t testing.TB) *bun.DB {
	t.Helper()
	return processortest.OpenDB(t, pgtest.Postgres(t))
}

// payoutSubmission is the Submission of an existing payout.
func (e *testEngine) payoutSubmission(t testing.TB, id string) payoutkit.Submission {
	t.Helper()
	return payoutkit.Submission{Payout: e.status(t, id), Coin: payoutkit.Coin{Ticker: "BTC", Network: "BTC", Decimals: 8}, IdempotencyKey: payoutkit.IdempotencyKey(e.ws, id)}
}
