package postgres

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// Group commit. Every COMMIT is a round trip and a WAL flush; a committer
// carries many writes in one transaction instead (the queue is
// sqlcore.Committer's), and commits once. The hot writes are one statement
// each and go pipelined (pipeline.go). Without savepoints (each would cost a
// round trip), a write that refuses for a reason of its own has changed
// nothing (see txFunc); any other error aborts the transaction, which is
// rolled back, and every write of the batch runs again in a transaction of
// its own, so that only the failing one fails. Callers are answered only
// after the COMMIT returned, so that every acknowledged write is durable;
// when the COMMIT fails, every write of the batch gets the error.
type committer struct {
	*sqlcore.Committer[*pgPipe]
	d *db
	// pipelinedBatches counts the batches that sent writes pipelined.
	pipelinedBatches atomic.Int64
}

// txFunc is one write (see sqlcore.Request.Fn). A write that refuses for a
// reason of its own (sqlcore.ErrNothingToCommit, an overdraft, a conflict)
// must leave nothing changed when it returns: no savepoint undoes it.
type txFunc = sqlcore.TxFunc

// txRequest is one write queued for a committer; its Extra, when set, is
// the write as one statement that can be sent pipelined with the others of
// its batch (Fn remains the write).
type txRequest = sqlcore.Request[*pgPipe]

func newTxRequest(fn txFunc) *txRequest { return sqlcore.NewRequest[*pgPipe](fn) }

func newCommitter(d *db) *committer {
	c := &committer{d: d}
	c.Committer = sqlcore.NewCommitter(c.run, d.observeCommit)
	return c
}

// submit runs fn (or pipe, pipelined) in the next batch and returns its
// error, or the batch's (see sqlcore.Committer.Submit).
func (c *committer) submit(ctx context.Context, key string, fn txFunc, pipe *pgPipe) error {
	r := newTxRequest(fn)
	r.Key, r.Extra = key, pipe
	return c.Submit(ctx, r)
}

// pgBatchTimeout bounds one batch, so that a connection lost without a word
// (no RST, no keepalive yet) fails its writes instead of stalling every
// writer behind it.
const pgBatchTimeout = 30 * time.Second

// run applies batch: every write in one transaction, without savepoints,
// committed once. A write that refuses for a reason of its own has changed
// nothing (see txFunc). Any other error leaves the transaction aborted: it
// is rolled back and each write runs again in a transaction of its own, so
// that only the failing one fails.
func (c *committer) run(batch []*txRequest) {
	// Every batch, on every instance, takes balance rows in workspace order,
	// so that two batches never wait for each other's rows in a cycle.
	slices.SortStableFunc(batch, func(a, b *txRequest) int { return strings.Compare(a.Key, b.Key) })
	c.Batches.Add(1)
	c.Writes.Add(int64(len(batch)))
	c.d.countWrites(len(batch))
	ctx, cancel := context.WithTimeout(context.Background(), pgBatchTimeout)
	defer cancel()
	fail := func(err error) {
		for _, r := range batch {
			r.Answer(err)
		}
	}
	conn, err := c.d.sqldb.Conn(ctx)
	if err != nil {
		fail(err)
		return
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		fail(err)
		return
	}
	kept := 0
	fns := make(map[*txRequest]txFunc, len(batch)) // what remains to run of each write
	for _, r := range batch {
		fns[r] = r.Fn
	}
	if piped := pipelined(batch); len(piped) > 1 {
		c.pipelinedBatches.Add(1)
		thens, err := runPipeline(ctx, conn, piped)
		if err != nil {
			// The transaction is aborted: each write runs again alone.
			_ = tx.Rollback()
			for _, r := range batch {
				c.run([]*txRequest{r})
			}
			return
		}
		for _, r := range piped {
			switch then := thens[r]; {
			case then != nil:
				fns[r] = then // its statement ran; its follow-up runs below
			case r.Err == nil:
				kept++
				delete(fns, r)
			default: // a refusal: nothing changed
				delete(fns, r)
			}
		}
	}
	for _, r := range batch {
		fn, ok := fns[r]
		if !ok {
			continue
		}
		kept1, stop := c.ApplyUnsaved(ctx, tx, r, fn, batch)
		if stop {
			return
		}
		if kept1 {
			kept++
		}
	}
	c.Finish(tx, batch, kept)
}
