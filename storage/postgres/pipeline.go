package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// Pipelining. Run one statement at a time, each waiting for the last one's
// answer, a batch of thirty payouts and thirty hand-offs would be sixty
// round trips while the hot balance's row stayed locked. The hot writes are
// one statement each, so the committer sends them
// all at once on the batch's connection, inside its transaction, and reads
// the answers after (pgx's batch: one round trip). Nothing else changes: the
// transaction commits once, and only then are the writers answered; a
// statement that fails aborts the transaction, and every write of the batch
// runs again alone.

// pgPipe is a write as one PostgreSQL statement, for sending pipelined with
// the other writes of its batch.
type pgPipe struct {
	query string
	args  []any
	// read reads the statement's answer and returns the write's outcome as
	// its txFunc would: nil to keep it, a refusal when it changed nothing.
	// A write whose answer calls for more statements (to read what refused
	// it, or undo what it did) returns them as then, which runs in the same
	// transaction after the pipeline, and whose result is the write's.
	read func(pgx.BatchResults) (then txFunc, err error)
}

// pipelined returns the writes of batch that can be pipelined.
func pipelined(batch []*txRequest) []*txRequest {
	var out []*txRequest
	for _, r := range batch {
		if r.Extra != nil {
			out = append(out, r)
		}
	}
	return out
}

// runPipeline sends the statements of piped at once on conn, in the
// transaction open on it, and reads their answers: it sets each write's
// err, or returns its follow-up in thens. Any error but a write's refusal
// is returned: the transaction is then aborted.
func runPipeline(ctx context.Context, conn *sql.Conn, piped []*txRequest) (thens map[*txRequest]txFunc, err error) {
	err = conn.Raw(func(driverConn any) (err error) {
		sc, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("%w, not %T", errNotPgx, driverConn)
		}
		var b pgx.Batch
		for _, r := range piped {
			b.Queue(r.Extra.query, r.Extra.args...)
		}
		br := sc.Conn().SendBatch(ctx, &b)
		defer func() {
			if cerr := br.Close(); err == nil {
				err = cerr
			}
		}()
		for _, r := range piped {
			then, rerr := readPiped(r.Extra, br)
			r.Err = rerr
			switch {
			case then != nil:
				if thens == nil {
					thens = make(map[*txRequest]txFunc)
				}
				thens[r] = then
			case rerr != nil && !sqlcore.Refusal(rerr):
				return rerr
			}
		}
		return nil
	})
	return thens, err
}

// readPiped runs p.read, turning a panic into an error as sqlcore.Apply does.
func readPiped(p *pgPipe, br pgx.BatchResults) (then txFunc, err error) {
	defer func() {
		if v := recover(); v != nil {
			then, err = nil, fmt.Errorf("sqlstore: panic in a write: %v", v)
		}
	}()
	return p.read(br)
}

// execPipe is a pipelined write that executes query and hands its count of
// changed rows to done.
func execPipe(query string, args []any, done func(rows int64)) *pgPipe {
	return &pgPipe{query: query, args: args, read: func(br pgx.BatchResults) (txFunc, error) {
		tag, err := br.Exec()
		if err != nil {
			return nil, err
		}
		done(tag.RowsAffected())
		return nil, nil
	}}
}

// errNotPgx is returned by a pipelined path, having done nothing, when the
// driver is not pgx's (a caller's handle, New).
var errNotPgx = errors.New("sqlstore: pipelining needs pgx's database/sql driver")

// claimPipelined runs a claim on PostgreSQL in one round trip instead of
// four (BEGIN, the settings, the claim, COMMIT): the settings and the
// claim go as one pgx batch, which PostgreSQL runs as one implicit
// transaction, committed at the batch's end; set_config's local values end
// with it. The claimed rows are read before that commit, so an error
// committing returns the error, not the rows: their leases lapse unused.
// It returns errNotPgx, having done nothing, if the driver is not pgx's;
// the store then knows it, and claims as reads go without batches.
func (d *db) claimPipelined(ctx context.Context, pinPlan bool, read func(sqlcore.RowIter) error, query string, args []any) error {
	ctx = context.WithoutCancel(ctx) // as detach
	conn, err := d.sqldb.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) (err error) {
		sc, ok := driverConn.(*stdlib.Conn)
		if !ok {
			d.reads.ungrouped.Store(true) // no batches for the reads either
			return errNotPgx
		}
		var b pgx.Batch
		if pinPlan {
			b.Queue(pgClaimSettings)
		}
		b.Queue(query, args...)
		br := sc.Conn().SendBatch(ctx, &b)
		defer func() {
			if cerr := br.Close(); err == nil {
				err = cerr
			}
		}()
		if pinPlan {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		return read(pgxRows{rows})
	})
}

// pgxRows is pgx's rows as a sqlcore.RowIter.
type pgxRows struct{ pgx.Rows }

func (r pgxRows) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}
