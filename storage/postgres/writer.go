package postgres

import (
	"context"
	"database/sql"
	"errors"
	"hash/fnv"
	"runtime"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// writer is where a store's statements run: the database's own pool (*db:
// the group committers, pipelined claims, grouped reads), or a transaction
// of the caller's (callerWriter, WithTx). It is chosen once, when the store
// is made; operations are written once against it.
type writer interface {
	// InTx runs fn as an administrative transaction (READ COMMITTED): fn's
	// error rolls it back and is returned as is.
	InTx(ctx context.Context, fn func(tx *sql.Tx) error) error
	// Write runs fn as one atomic write in the next batch of the committer
	// of workspace key ("" for none); fn's error undoes its changes and is
	// returned as is. fn must change nothing when it refuses (see txFunc).
	// pipe, when not nil, is the same write as one statement, which the
	// committer sends pipelined with the other writes of its batch.
	Write(ctx context.Context, key string, fn txFunc, pipe *pgPipe) error
	// Claim runs a claiming statement, under pgClaimSettings when pinPlan
	// is set, and hands its rows to read, which must consume and close
	// them.
	Claim(ctx context.Context, pinPlan bool, read func(sqlcore.RowIter) error, query string, args ...any) error
	// Reader runs reads.
	Reader() sqlcore.Querier
	// ReadRow runs a point read that returns one row when it is scanned.
	ReadRow(ctx context.Context, query string, args ...any) sqlcore.Scanner
	// Committed tells dispatchers that a write committed work for them.
	Committed()
	// Close releases what the writer holds.
	Close() error
}

var (
	_ writer = (*db)(nil)
	_ writer = callerWriter{}
)

// callerWriter runs a store's statements in the caller's transaction: each
// write in a savepoint of it, with the caller's context.
type callerWriter struct{ sqlcore.CallerTx }

// Write runs fn in a savepoint of the caller's transaction. A caller's
// transaction has no committer to choose (key) and no batch to pipeline
// with (pipe): fn is the write.
func (c callerWriter) Write(ctx context.Context, _ string, fn txFunc, _ *pgPipe) error {
	return c.CallerTx.Write(ctx, fn)
}

// Claim runs the claim in a savepoint of the caller's transaction; the plan
// settings, local to a transaction, are restored after it.
func (c callerWriter) Claim(ctx context.Context, pinPlan bool, read func(sqlcore.RowIter) error, query string, args ...any) error {
	return c.InTx(ctx, func(tx *sql.Tx) error {
		ctx := detach(ctx)
		if pinPlan {
			if _, err := tx.ExecContext(ctx, pgClaimSettings); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, query, args...)
		if err == nil {
			err = read(rows)
		}
		if pinPlan {
			if _, rerr := tx.ExecContext(ctx, pgResetSettings); err == nil {
				err = rerr
			}
		}
		return err
	})
}

// pgClaimSettings make PostgreSQL walk a claim's index in its order, stop at
// the claim's LIMIT, and look each claimed row up by its key. Left to
// itself, the planner picks that plan only with fitting statistics: on a
// table it has not analyzed since it was small (a new deployment's first
// minute, or autovacuum off) it reads every due row through a bitmap and
// sorts them, and a backlog of due events makes each claim many times
// slower; with statistics that count a long hand-off queue, it joins the
// queue to payouts by reading them from the first one ever made (a merge
// join) and updates the claimed ones through a scan of the whole table (a
// hash join): 28,000 pages a claim with a million payouts
// (TestPostgresClaimPlans). They are
// local to the claim's transaction; in a caller's transaction (WithTx)
// pgResetSettings restores the defaults after it.
const (
	pgClaimSettings = `SELECT set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true),
		set_config('enable_mergejoin', 'off', true), set_config('enable_hashjoin', 'off', true)`
	pgResetSettings = `SET LOCAL enable_sort TO DEFAULT; SET LOCAL enable_bitmapscan TO DEFAULT;
		SET LOCAL enable_mergejoin TO DEFAULT; SET LOCAL enable_hashjoin TO DEFAULT`
)

// InTx runs fn in a transaction of its own, detached (see detach).
func (d *db) InTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return sqlcore.RunInTx(detach(ctx), d.sqldb, fn)
}

func (d *db) Write(ctx context.Context, key string, fn txFunc, pipe *pgPipe) error {
	for attempt := 1; ; attempt++ {
		err := d.committerFor(key).submit(ctx, key, fn, pipe)
		if attempt == writeAttempts || !retryable(err) || ctx.Err() != nil {
			return err
		}
	}
}

// writeAttempts bounds how often a write runs again after its transaction
// lost a deadlock or a serialization failure.
const writeAttempts = 4

// retryable reports whether err ended a transaction that PostgreSQL rolled
// back for another's sake, which the same write again may pass: a deadlock
// (two instances' group commits insert the same payout_id and take the hot
// balance row in opposite orders) or a serialization failure. Its writes
// changed nothing, and every write may run more than once.
func retryable(err error) bool {
	return isPgCode(err, "40P01") || isPgCode(err, "40001")
}

// execWrite runs a single write statement as a write of its own in the
// next batch of the committer of workspace key, pipelined with the batch's
// other statements.
func (s *Store) execWrite(ctx context.Context, key, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	fn := func(ctx context.Context, tx *sql.Tx) error {
		var err error
		res, err = tx.ExecContext(ctx, query, args...)
		return err
	}
	err := s.w.Write(ctx, key, fn, execPipe(query, args, func(n int64) { res = rowsAffected(n) }))
	return res, err
}

// rowsAffected is the sql.Result of a pipelined statement.
type rowsAffected int64

func (n rowsAffected) RowsAffected() (int64, error) { return int64(n), nil }

func (rowsAffected) LastInsertId() (int64, error) {
	return 0, errors.New("sqlstore: no LastInsertId on PostgreSQL")
}

// Claim runs a claim in a transaction of its own, beside the committers
// rather than in the outbox's batches: a claim's SKIP LOCKED needs no
// ordering with other writes, and in a batch it would wait for the batch
// before and for its own batch's attempts, while every delivery worker it
// would feed held its slot waiting for its record. Its COMMIT needs no
// company either: claims come a few dozen times a second at most. Over
// pgx it goes in one round trip (claimPipelined).
func (d *db) Claim(ctx context.Context, pinPlan bool, read func(sqlcore.RowIter) error, query string, args ...any) error {
	if !d.reads.ungrouped.Load() {
		if err := d.claimPipelined(ctx, pinPlan, read, query, args); err != errNotPgx {
			return err
		}
	}
	return d.InTx(ctx, func(tx *sql.Tx) error {
		ctx := detach(ctx)
		if pinPlan {
			if _, err := tx.ExecContext(ctx, pgClaimSettings); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		return read(rows)
	})
}

func (d *db) Reader() sqlcore.Querier { return detached{d.sqldb} }

// ReadRow runs a point read grouped with others (readgroup.go).
func (d *db) ReadRow(_ context.Context, query string, args ...any) sqlcore.Scanner {
	return d.reads.row(query, args)
}

func (d *db) Committed() { d.work.Notify() }

// Close stops the statistics keeper and the committers, and closes the
// pool (but a caller's, New's, which stays open).
func (d *db) Close() error {
	d.stopStatistics()
	for _, c := range d.committers {
		c.Close()
	}
	if d.callerDB {
		return nil // the caller's to close
	}
	return d.sqldb.Close()
}

// workspaceCommitters is how many committers a store runs for the writes
// of workspaces: one per four of the process's cores, at least one. Writes
// of one workspace go to one of them (its balance row allows one writer at
// a time anyway); writes of other workspaces proceed beside them. Each
// more committer takes its share of the writes, so every batch is smaller
// and every write pays a larger share of its batch's round trips and
// COMMIT: more committers than the cores can feed cost more transactions a
// payout, and more CPU on both sides (docs/PERFORMANCE.md).
// One committer keeps up with what two cores can send it; a larger machine
// sends more, and gets more committers. One more committer takes the
// writes of no workspace (the outbox's claims and attempts), so that
// deliveries never wait in a workspace's batches nor those in theirs.
func workspaceCommitters() int { return max(1, runtime.GOMAXPROCS(0)/4) }

// committerFor returns the committer of the writes of workspace key ("":
// none, the outbox's).
func (d *db) committerFor(key string) *committer {
	if key == "" {
		return d.batch
	}
	n := len(d.committers) - 1
	if n == 1 {
		return d.committers[0]
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return d.committers[h.Sum32()%uint32(n)]
}
