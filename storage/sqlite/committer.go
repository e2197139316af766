package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"time"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// maxBatch bounds how many writes one transaction carries.
const maxBatch = 256

// Group commit. Every commit waits for one fsync of the WAL, and the single
// writer connection commits one transaction at a time, so one transaction
// per money movement caps the store at one movement per fsync. The
// committer carries many of them in one transaction instead: it takes the
// first write queued, adds whatever else is queued at that moment (no
// timer: under no load a write waits for nothing, under load the writes
// that queued during one commit make the next batch), runs each one in
// arrival order, and commits once. A write that fails (an overdraft, a
// replay, a settled payout) is undone and answered on its own, without
// disturbing the others: by its own SAVEPOINT, or, for the hot writes that
// are one statement or refuse before changing anything (creating a payout,
// claiming, recording an attempt or a hand-off), by having changed nothing,
// which saves two statements per write. Callers are answered only after the
// COMMIT returned, so that every acknowledged write is durable; when the
// COMMIT fails, every write of the batch gets the error.
//
// The writes of a batch run one after the other on the single writer
// connection, as they would in their own transactions, so the database's
// rules (the conditional debit, the unique ids) hold exactly as they would.
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
	// and the writes they carried.
	batches, writes atomic.Int64
}

// txFunc is one write. It runs in tx with ctx, which is the committer's
// context, not the caller's: a caller that gives up must not interrupt the
// statements of a batch shared with other callers. It returns nil to keep
// its changes, or an error to have them rolled back and reported. It may
// run more than once (a batch whose transaction failed runs again write by
// write), so it sets its results afresh each time.
type txFunc = sqlcore.TxFunc

// Request states: a queued request is either taken into a batch by the
// committer or abandoned by its caller, whichever comes first.
const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

type txRequest struct {
	fn txFunc
	// refusalSafe marks a write that needs no savepoint: it is one
	// statement (which SQLite undoes by itself when it fails), or it
	// refuses only before changing anything.
	refusalSafe bool
	state       atomic.Int32
	err         error      // fn's result, set by the committer
	done        chan error // the answer; buffered so that the committer never blocks
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

// do runs fn in the next batch and returns its error, or the batch's. A
// request whose ctx ends before the committer takes it is dropped with
// ctx's error and changes nothing; once taken, it completes and do waits for
// its true answer.
func (c *committer) do(ctx context.Context, refusalSafe bool, fn txFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := newTxRequest(fn)
	r.refusalSafe = refusalSafe
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

// Savepoint statements, prepared with the other writes.
const (
	savepointSQL  = `SAVEPOINT w`
	releaseSQL    = `RELEASE w`
	rollbackToSQL = `ROLLBACK TO w`
)

// run applies batch in one transaction and answers every request in it.
func (c *committer) run(batch []*txRequest) {
	c.batches.Add(1)
	c.writes.Add(int64(len(batch)))
	ctx := context.Background()
	st := stmts(c.d.wstmts)
	fail := func(err error) {
		for _, r := range batch {
			r.done <- err
		}
	}
	c.d.waitForPriority() // an admin command beside us gets the lock first
	c.d.claimWrite()
	tx, err := c.d.wdb.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		fail(err)
		return
	}
	kept := 0
	for _, r := range batch {
		if r.refusalSafe {
			// No savepoint (two statements saved). Any error but a
			// refusal may have rolled the whole transaction back (SQLite
			// does on a full disk or an I/O error, and nothing tells
			// which).
			ok, stop := c.applyUnsaved(ctx, tx, r, batch)
			if stop {
				return
			}
			if ok {
				kept++
			}
			continue
		}
		if _, err := st.exec(ctx, tx, savepointSQL); err != nil {
			_ = tx.Rollback()
			fail(err)
			return
		}
		r.err = sqlcore.Apply(ctx, tx, r.fn)
		step := releaseSQL
		if r.err != nil {
			step = rollbackToSQL
		} else {
			kept++
		}
		if _, err := st.exec(ctx, tx, step); err != nil {
			// SQLite rolls the whole transaction back on some errors
			// (a full disk, an I/O error): the savepoint is gone, and so
			// is every earlier write of the batch.
			_ = tx.Rollback()
			fail(err)
			return
		}
		if r.err != nil {
			if _, err := st.exec(ctx, tx, releaseSQL); err != nil {
				_ = tx.Rollback()
				fail(err)
				return
			}
		}
	}
	c.finish(tx, batch, kept)
}

// finish ends a batch whose writes ran in tx, kept of them with a change:
// it commits (or, with nothing to keep, rolls back: no COMMIT, no fsync)
// and answers every writer only then; a failed COMMIT fails them all.
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

// applyUnsaved runs r in tx without a savepoint and reports whether r's
// change is kept. A refusal has changed nothing, so the batch goes on. Any
// other error leaves tx unusable: it is rolled back, every write of the
// batch runs again in a transaction of its own (so that only the failing
// one fails), and stop is true: the batch is answered.
func (c *committer) applyUnsaved(ctx context.Context, tx *sql.Tx, r *txRequest, batch []*txRequest) (kept, stop bool) {
	r.err = sqlcore.Apply(ctx, tx, r.fn)
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
