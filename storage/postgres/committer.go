package postgres

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// maxBatch bounds how many writes one transaction carries.
const maxBatch = 256

// Group commit. Every COMMIT is a round trip and a WAL flush; a committer
// carries many writes in one transaction instead: it takes the first write
// queued, adds whatever else is queued at that moment (no timer: under no
// load a write waits for nothing, under load the writes that queued during
// one commit make the next batch), runs them, and commits once. The hot
// writes are one statement each and go pipelined (pipeline.go). Without
// savepoints (each would cost a round trip), a write that refuses for a
// reason of its own has changed nothing (see txFunc); any other error
// aborts the transaction, which is rolled back, and every write of the
// batch runs again in a transaction of its own, so that only the failing
// one fails. Callers are answered only after the COMMIT returned, so that
// every acknowledged write is durable; when the COMMIT fails, every write
// of the batch gets the error.
type committer struct {
	d    *db
	reqs chan *txRequest
	// mu orders submissions against close: submit sends while holding the
	// read lock, close sets closed under the write lock, so that no request
	// enters reqs after the loop's last drain.
	mu     sync.RWMutex
	closed bool
	quit   chan struct{} // closed by close
	done   chan struct{} // closed when loop returns

	// beforeCommit, when set (by tests), runs before each COMMIT; its error
	// stands for the COMMIT's.
	beforeCommit atomic.Pointer[func(n int) error]
	// batches and writes count the transactions committed (or attempted)
	// and the writes they carried; pipelinedBatches those that sent writes
	// pipelined.
	batches, writes, pipelinedBatches atomic.Int64
}

// txFunc is one write. It runs in tx with ctx, which is the committer's
// context, not the caller's: a caller that gives up must not interrupt the
// statements of a batch shared with other callers. It returns nil to keep
// its changes, or an error to have them rolled back and reported. It may
// run more than once (a failed batch runs again write by write), so it sets
// its results afresh each time. A write that refuses for a reason of its
// own (sqlcore.ErrNothingToCommit, an overdraft, a conflict) must leave
// nothing changed when it returns: no savepoint undoes it.
type txFunc = sqlcore.TxFunc

// Request states: a queued request is either taken into a batch by the
// committer or abandoned by its caller, whichever comes first.
const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

type txRequest struct {
	key string // the workspace of the write, "" for none
	fn  txFunc
	// pipe, when set, is the write as one statement that can be sent
	// pipelined with the others of its batch; fn remains the write.
	pipe  *pgPipe
	state atomic.Int32
	err   error      // fn's result, set by the committer
	done  chan error // the answer; buffered so that the committer never blocks
}

func newTxRequest(fn txFunc) *txRequest {
	return &txRequest{fn: fn, done: make(chan error, 1)}
}

func newCommitter(d *db) *committer {
	c := &committer{
		d:    d,
		reqs: make(chan *txRequest, 4*maxBatch),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	go c.loop()
	return c
}

// submit runs fn (or pipe, pipelined) in the next batch and returns its
// error, or the batch's. A request whose ctx ends before the committer
// takes it is dropped with ctx's error and changes nothing; once taken, it
// completes and submit waits for its true answer.
func (c *committer) submit(ctx context.Context, key string, fn txFunc, pipe *pgPipe) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := newTxRequest(fn)
	r.key, r.pipe = key, pipe
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return ErrClosed
	}
	select {
	case c.reqs <- r:
	case <-ctx.Done():
		c.mu.RUnlock()
		return ctx.Err()
	}
	c.mu.RUnlock()
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return ctx.Err()
		}
		return <-r.done // in a batch already: it completes, wait for it
	}
}

// close stops the committer: the batch in progress completes, requests
// still queued fail with ErrClosed, later ones too. It returns when the
// committer's goroutine has ended.
func (c *committer) close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.quit)
	}
	c.mu.Unlock()
	<-c.done
}

func (c *committer) loop() {
	defer close(c.done)
	batch := make([]*txRequest, 0, maxBatch)
	for {
		select {
		case r := <-c.reqs:
			batch = c.take(batch[:0], r)
		drain:
			for len(batch) < maxBatch {
				select {
				case r := <-c.reqs:
					batch = c.take(batch, r)
				default:
					break drain
				}
			}
			if len(batch) > 0 {
				start := time.Now()
				c.run(batch)
				if fn := c.d.observeCommit; fn != nil {
					fn(len(batch), time.Since(start))
				}
			}
			clear(batch) // let the requests go
		case <-c.quit:
			// No request enters reqs any more (closed is set): fail
			// those still queued.
			for {
				select {
				case r := <-c.reqs:
					if r.state.CompareAndSwap(reqQueued, reqTaken) {
						r.done <- ErrClosed
					}
				default:
					return
				}
			}
		}
	}
}

// take adds r to batch unless its caller has given up on it.
func (c *committer) take(batch []*txRequest, r *txRequest) []*txRequest {
	if r.state.CompareAndSwap(reqQueued, reqTaken) {
		batch = append(batch, r)
	}
	return batch
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
	slices.SortStableFunc(batch, func(a, b *txRequest) int { return strings.Compare(a.key, b.key) })
	c.batches.Add(1)
	c.writes.Add(int64(len(batch)))
	ctx, cancel := context.WithTimeout(context.Background(), pgBatchTimeout)
	defer cancel()
	fail := func(err error) {
		for _, r := range batch {
			r.done <- err
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
		fns[r] = r.fn
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
			case r.err == nil:
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
		kept1, stop := c.applyUnsaved(ctx, tx, r, fn, batch)
		if stop {
			return
		}
		if kept1 {
			kept++
		}
	}
	c.finish(tx, batch, kept)
}

// finish ends a batch whose writes ran in tx, kept of them with a change:
// it commits (or, with nothing to keep, rolls back) and answers every
// writer only then; a failed COMMIT fails them all.
func (c *committer) finish(tx *sql.Tx, batch []*txRequest, kept int) {
	if kept == 0 {
		_ = tx.Rollback()
	} else {
		var err error
		if hook := c.beforeCommit.Load(); hook != nil {
			err = (*hook)(len(batch))
		}
		if err == nil {
			err = tx.Commit()
		}
		if err != nil {
			_ = tx.Rollback()
			for _, r := range batch {
				r.done <- err
			}
			return
		}
	}
	for _, r := range batch {
		r.done <- r.err
	}
}

// applyUnsaved runs fn, what remains to run of r, in tx and reports whether
// r's change is kept. A refusal has changed nothing, so the batch goes on.
// Any other error leaves tx unusable: it is rolled back, every write of the
// batch runs again in a transaction of its own (so that only the failing
// one fails), and stop is true: the batch is answered.
func (c *committer) applyUnsaved(ctx context.Context, tx *sql.Tx, r *txRequest, fn txFunc, batch []*txRequest) (kept, stop bool) {
	r.err = sqlcore.Apply(ctx, tx, fn)
	switch {
	case r.err == nil:
		return true, false
	case sqlcore.Refusal(r.err):
		return false, false
	}
	_ = tx.Rollback()
	if len(batch) == 1 {
		r.done <- r.err
		return false, true
	}
	for _, r := range batch {
		c.run([]*txRequest{r})
	}
	return false, true
}
