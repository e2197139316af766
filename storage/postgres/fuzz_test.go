package postgres_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

// FuzzMoneyInvariantsPostgres runs the money fuzz against PostgreSQL's
// statements, each input in a schema of its own; it skips unless
// PAYOUTKIT_TEST_POSTGRES names a server.
func FuzzMoneyInvariantsPostgres(f *testing.F) {
	dsn := pgtest.PostgresServer(f)
	storetest.FuzzMoneyInvariants(f, func(t *testing.T) payoutkit.Store { return openPostgres(t, pgtest.FreshSchema(t, dsn)) })
}

// FuzzMoneyPathsPostgres runs the money fuzz on PostgreSQL's every path:
// each input in a schema of its own, opened by Open (its writes
// group-committed, the creates pipelined) and by a program's own *bun.DB,
// whose transactions the store joins (WithTx). With -v, each input logs
// how many of its batches carried more than one write, and how many sent
// theirs pipelined. It skips unless PAYOUTKIT_TEST_POSTGRES names a server.
func FuzzMoneyPathsPostgres(f *testing.F) {
	dsn := pgtest.PostgresServer(f)
	storetest.FuzzMoneyPaths(f, func(t *testing.T) storetest.PathsStore {
		schema := pgtest.FreshSchema(t, dsn)
		var batches, shared atomic.Int64
		s, err := postgres.Open(t.Context(), schema, postgres.WithLogger(slog.New(slog.DiscardHandler)),
			postgres.WithCommitObserver(func(writes int, _ time.Duration) {
				batches.Add(1)
				if writes > 1 {
					shared.Add(1)
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			t.Logf("batches: %d, %d of them of more than one write, %d pipelined", batches.Load(), shared.Load(), postgres.PipelinedBatches(s))
		})
		db := callerPostgres(t, schema)
		return storetest.PathsStore{Store: s, Begin: func(ctx context.Context) (storetest.CallerTx, error) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return storetest.CallerTx{}, err
			}
			return storetest.CallerTx{Store: s.WithTx(tx), Commit: tx.Commit, Rollback: tx.Rollback}, nil
		}}
	})
}
