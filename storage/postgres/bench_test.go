package postgres_test

import (
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqltest"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

func openBench(b *testing.B, dsn string) (*postgres.Store, error) {
	return postgres.Open(b.Context(), dsn, postgres.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
}

// benchDB compares memory with PostgreSQL when PAYOUTKIT_TEST_POSTGRES is
// set; the writes per commit are reported on SQLite (storage/sqlite's
// benchmarks), whose one committer counts them.
func benchDB(*testing.B) sqltest.Bench {
	db := sqltest.Bench{Name: "postgres"}
	if dsn := os.Getenv("PAYOUTKIT_TEST_POSTGRES"); dsn != "" {
		db.Open = func(b *testing.B) payoutkit.Store {
			s, err := openBench(b, pgtest.FreshSchema(b, dsn))
			if err != nil {
				b.Fatal(err)
			}
			return s
		}
	}
	return db
}

// BenchmarkCreatePayout measures accepted payouts through the engine: a
// replay lookup, then the debit, payout, ledger entry and event in one
// transaction.
func BenchmarkCreatePayout(b *testing.B) { sqltest.BenchCreatePayout(b, benchDB(b)) }

// BenchmarkBalance measures the read behind GET /v1/balance.
func BenchmarkBalance(b *testing.B) { sqltest.BenchBalance(b, benchDB(b)) }

// BenchmarkCreatePayoutSpread creates payouts over 100 workspaces from 32
// callers: on PostgreSQL their balance rows lock apart, so committers run
// side by side.
func BenchmarkCreatePayoutSpread(b *testing.B) { sqltest.BenchCreatePayoutSpread(b, benchDB(b)) }

// BenchmarkCreatePayoutControls measures accepted payouts with the
// workspace's payout controls off (the debit's controls flag alone) and on
// (a daily limit and the address allowlist, judged in the create's
// transaction).
func BenchmarkCreatePayoutControls(b *testing.B) { sqltest.BenchCreatePayoutControls(b, benchDB(b)) }

// BenchmarkHandoffBacklog hands off a backlog of payouts, as a dispatcher
// back from its processor's outage does:
//
//	go test -run XXX -bench HandoffBacklog -benchtime 20000x ./storage/postgres
func BenchmarkHandoffBacklog(b *testing.B) { sqltest.BenchHandoffBacklog(b, benchDB(b)) }

// BenchmarkCreatePayoutBatch measures batches of 100 and 1,000 payouts,
// each one write with its balance debited once.
func BenchmarkCreatePayoutBatch(b *testing.B) { sqltest.BenchCreatePayoutBatch(b, benchDB(b)) }
