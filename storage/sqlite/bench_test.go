package sqlite_test

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqltest"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

func openBench(b *testing.B, dsn string) (*sqlite.Store, error) {
	return sqlite.Open(b.Context(), dsn, sqlite.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
}

// benchDB compares memory with SQLite, reporting how many writes SQLite's
// committer put in one transaction on average.
func benchDB(*testing.B) sqltest.Bench {
	return sqltest.Bench{
		Name: "sqlite",
		Open: func(b *testing.B) payoutkit.Store {
			s, err := openBench(b, filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
		Batches: func(st payoutkit.Store) (batches, writes int64, ok bool) {
			s, ok := st.(*sqlite.Store)
			if !ok {
				return 0, 0, false
			}
			batches, writes = sqlite.BatchStats(s)
			return batches, writes, true
		},
	}
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
// back from its processor's outage does.
func BenchmarkHandoffBacklog(b *testing.B) { sqltest.BenchHandoffBacklog(b, benchDB(b)) }

// BenchmarkCreatePayoutBatch measures batches of 100 and 1,000 payouts,
// each one write with its balance debited once.
func BenchmarkCreatePayoutBatch(b *testing.B) { sqltest.BenchCreatePayoutBatch(b, benchDB(b)) }
