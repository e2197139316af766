package sqlcore

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"time"
)

// MaxBatch bounds how many writes one group-commit transaction carries.
const MaxBatch = 256

// Request states: a queued request is either taken into a batch by the
// committer or abandoned by its caller, whichever comes first.
const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

// Request is one write queued for a Committer. X is what the store's
// batches need to know of a write besides Fn (whether it needs a
// savepoint, its pipelined statement).
type Request[X any] struct {
	// Key names the workspace of the write, "" for none.
	Key string
	// Fn is the write. It runs with the committer's context, not the
	// caller's: a caller that gives up must not interrupt the statements of
	// a batch shared with other callers. It may run more than once (a batch
	// whose transaction failed runs again write by write), so it sets its
	// results afresh each time.
	Fn    TxFunc
	Extra X
	// Err is Fn's result, set by the batch.
	Err   error
	state atomic.Int32
	done  chan error // the answer; buffered so that the committer never blocks
}

// NewRequest returns a request for fn.
func NewRequest[X any](fn TxFunc) *Request[X] {
	return &Request[X]{Fn: fn, done: make(chan error, 1)}
}

// Answer gives the request's caller its answer; a request is answered once.
func (r *Request[X]) Answer(err error) { r.done <- err }

// Done receives the request's answer.
func (r *Request[X]) Done() <-chan error { return r.done }

// Committer queues writes and hands them to its store's run function in
// batches: it takes the first write queued and adds whatever else is queued
// at that moment (no timer: under no load a write waits for nothing, under
// load the writes that queued during one commit make the next batch). run
// applies a batch in one transaction and answers every request in it, only
// once its COMMIT returned, so that every acknowledged write is durable.
type Committer[X any] struct {
	reqs chan *Request[X]
	run  func(batch []*Request[X])
	// observe is told of every batch run (WithCommitObserver), or nil.
	observe func(writes int, d time.Duration)
	// mu orders submissions against Close: Submit sends while holding the
	// read lock, Close sets closed under the write lock, so that no request
	// enters reqs after the loop's last drain.
	mu     sync.RWMutex
	closed bool
	quit   chan struct{} // closed by Close
	done   chan struct{} // closed when loop returns

	// BeforeCommit, when set (by tests), runs before each COMMIT; its error
	// stands for the COMMIT's.
	BeforeCommit atomic.Pointer[func(n int) error]
	// Batches and Writes count the transactions run (by run, which counts
	// them) and the writes they carried.
	Batches, Writes atomic.Int64
}

// NewCommitter starts a committer whose batches run applies; observe, if
// not nil, is told of each batch.
func NewCommitter[X any](run func(batch []*Request[X]), observe func(writes int, d time.Duration)) *Committer[X] {
	c := &Committer[X]{
		reqs:    make(chan *Request[X], 4*MaxBatch),
		run:     run,
		observe: observe,
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go c.loop()
	return c
}

// Submit runs r in the next batch and returns its error, or the batch's. A
// request whose ctx ends before the committer takes it is dropped with
// ctx's error and changes nothing; once taken, it completes and Submit
// waits for its true answer. After Close it fails with ErrClosed.
func (c *Committer[X]) Submit(ctx context.Context, r *Request[X]) error {
	if err := ctx.Err(); err != nil {
		return err
	}
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

// Queued is how many requests wait for a batch.
func (c *Committer[X]) Queued() int { return len(c.reqs) }

// Closed reports whether Close has been called.
func (c *Committer[X]) Closed() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.closed
}

// Close stops the committer: the batch in progress completes, requests
// still queued fail with ErrClosed, later ones too. It returns when the
// committer's goroutine has ended.
func (c *Committer[X]) Close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.quit)
	}
	c.mu.Unlock()
	<-c.done
}

func (c *Committer[X]) loop() {
	defer close(c.done)
	batch := make([]*Request[X], 0, MaxBatch)
	for {
		select {
		case r := <-c.reqs:
			batch = c.take(batch[:0], r)
		drain:
			for len(batch) < MaxBatch {
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
				if fn := c.observe; fn != nil {
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
func (c *Committer[X]) take(batch []*Request[X], r *Request[X]) []*Request[X] {
	if r.state.CompareAndSwap(reqQueued, reqTaken) {
		batch = append(batch, r)
	}
	return batch
}

// Finish ends a batch whose writes ran in tx, kept of them with a change:
// it commits (or, with nothing to keep, rolls back: no COMMIT, no flush)
// and answers every writer only then; a failed COMMIT fails them all.
func (c *Committer[X]) Finish(tx *sql.Tx, batch []*Request[X], kept int) {
	if kept == 0 {
		_ = tx.Rollback()
	} else {
		var err error
		if hook := c.BeforeCommit.Load(); hook != nil {
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
		r.done <- r.Err
	}
}

// ApplyUnsaved runs fn, what remains to run of r, in tx without a savepoint
// and reports whether r's change is kept. A refusal has changed nothing, so
// the batch goes on. Any other error leaves tx unusable: it is rolled back,
// every write of the batch runs again in a transaction of its own (so that
// only the failing one fails), and stop is true: the batch is answered.
func (c *Committer[X]) ApplyUnsaved(ctx context.Context, tx *sql.Tx, r *Request[X], fn TxFunc, batch []*Request[X]) (kept, stop bool) {
	r.Err = Apply(ctx, tx, fn)
	switch {
	case r.Err == nil:
		return true, false
	case Refusal(r.Err):
		return false, false
	}
	_ = tx.Rollback()
	if len(batch) == 1 {
		r.done <- r.Err
		return false, true
	}
	for _, r := range batch {
		c.run([]*Request[X]{r})
	}
	return false, true
}
