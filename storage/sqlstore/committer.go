package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/payoutkit/payoutkit"
)

// ErrClosed reports a write submitted to a Store after (or while) it was
// closed. Nothing of that write was applied.
var ErrClosed = errors.New("sqlstore: store is closed")

// maxBatch bounds how many writes one transaction carries.
const maxBatch = 256

// Group commit. On SQLite every commit waits for one fsync of the WAL, and
// the single writer connection commits one transaction at a time, so one
// transaction per money movement caps the store at one movement per fsync.
// The committer carries many of them in one transaction instead: it takes
// the first write queued, adds whatever else is queued at that moment (no
// timer: under no load a write waits for nothing, under load the writes
// that queued during one commit make the next batch), runs each one in
// arrival order, and commits once. A write that fails (an overdraft, a
// replay, a settled payout) is undone and answered on its own, without
// disturbing the others: by its own SAVEPOINT, or, for the hot writes that
// are one statement or refuse before changing anything (creating a payout,
// claiming, recording an attempt or a hand-off), by having changed nothing,
// which saves two statements per write. Callers are
// answered only after the COMMIT returned, so that every acknowledged write
// is durable; when the COMMIT fails, every write of the batch gets the error.
//
// The writes of a batch run one after the other on the single writer
// connection, as they did in their own transactions, so the database's
// rules (the conditional debit, the unique ids) hold exactly as before.
type committer struct {
	db   *sql.DB
	s    *Store
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
	// and the writes they carried; pipelinedBatches those of PostgreSQL's
	// that sent writes pipelined.
	batches, writes, pipelinedBatches atomic.Int64
}

// txFunc is one write. It runs in tx with ctx, which is the committer's
// context, not the caller's: a caller that gives up must not interrupt the
// statements of a batch shared with other callers. It returns nil to keep
// its changes, or an error to have them rolled back and reported. It may
// run more than once (PostgreSQL reruns a failed batch write by write), so
// it sets its results afresh each time. A write that refuses for a reason
// of its own (errNothingToCommit, an overdraft, a conflict) must leave
// nothing changed when it returns: on PostgreSQL no savepoint undoes it.
type txFunc func(ctx context.Context, tx *sql.Tx) error

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
	// refusalSafe marks a write that needs no savepoint on SQLite: it is
	// one statement (which SQLite undoes by itself when it fails), or it
	// refuses only before changing anything.
	refusalSafe bool
	// pipe, when set, is the write as one PostgreSQL statement that can be
	// sent pipelined with the others of its batch; fn remains the write.
	pipe  *pgPipe
	state atomic.Int32
	err   error      // fn's result, set by the committer
	done  chan error // the answer; buffered so that the committer never blocks
}

func newTxRequest(fn txFunc) *txRequest {
	return &txRequest{fn: fn, done: make(chan error, 1)}
}

// pgCommitters is how many committers a PostgreSQL store runs for the
// writes of workspaces. Writes of one workspace go to one of them (its
// balance row allows one writer at a time anyway); writes of other
// workspaces proceed beside them. One more committer takes the writes of no
// workspace (the outbox's claims and attempts), so that deliveries never
// wait in a workspace's batches nor those in theirs: with payouts spread
// over 100 workspaces (examples/load, alternating runs), the last webhook
// arrived 1.6-1.8 s after the load instead of 3.4-4.5 s, for about a fifth
// fewer payouts (910-970/s against 1,130-1,250/s) on a machine whose two
// cores the load, the server and PostgreSQL share.
const pgCommitters = 4

// committerFor returns the committer of the writes of workspace key ("":
// none, the outbox's).
func (s *Store) committerFor(key string) *committer {
	if len(s.committers) == 1 || key == "" {
		return s.batch
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return s.committers[h.Sum32()%uint32(len(s.committers)-1)]
}

func newCommitter(s *Store) *committer {
	c := &committer{
		db:   s.w.DB,
		s:    s,
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
func (c *committer) do(ctx context.Context, key string, refusalSafe bool, fn txFunc) error {
	return c.submit(ctx, key, refusalSafe, fn, nil)
}

// submit is do for a write that PostgreSQL may also run as pipe.
func (c *committer) submit(ctx context.Context, key string, refusalSafe bool, fn txFunc, pipe *pgPipe) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := newTxRequest(fn)
	r.key, r.refusalSafe, r.pipe = key, refusalSafe, pipe
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
				if fn := c.s.observeCommit; fn != nil {
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
	if c.s.pg() {
		c.runPG(batch)
		return
	}
	c.batches.Add(1)
	c.writes.Add(int64(len(batch)))
	ctx := context.Background()
	fail := func(err error) {
		for _, r := range batch {
			r.done <- err
		}
	}
	c.s.waitForPriority() // an admin command beside us gets the lock first
	c.s.claimWrite()
	tx, err := c.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
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
			ok, stop := c.applyUnsaved(ctx, tx, r, r.fn, batch, c.run)
			if stop {
				return
			}
			if ok {
				kept++
			}
			continue
		}
		if _, err := c.s.txExec(ctx, tx, savepointSQL); err != nil {
			_ = tx.Rollback()
			fail(err)
			return
		}
		r.err = apply(ctx, tx, r.fn)
		step := releaseSQL
		if r.err != nil {
			step = rollbackToSQL
		} else {
			kept++
		}
		if _, err := c.s.txExec(ctx, tx, step); err != nil {
			// SQLite rolls the whole transaction back on some errors
			// (a full disk, an I/O error): the savepoint is gone, and so
			// is every earlier write of the batch.
			_ = tx.Rollback()
			fail(err)
			return
		}
		if r.err != nil {
			if _, err := c.s.txExec(ctx, tx, releaseSQL); err != nil {
				_ = tx.Rollback()
				fail(err)
				return
			}
		}
	}
	c.finish(tx, batch, kept)
}

// pgBatchTimeout bounds one PostgreSQL batch, so that a connection lost
// without a word (no RST, no keepalive yet) fails its writes instead of
// stalling every writer behind it.
const pgBatchTimeout = 30 * time.Second

// runPG applies batch on PostgreSQL: every write in one transaction,
// without savepoints (each would cost a round trip), committed once. A write
// that refuses for a reason of its own has changed nothing (see txFunc). Any
// other error leaves the transaction aborted: it is rolled back and each
// write runs again in a transaction of its own, so that only the failing one
// fails.
func (c *committer) runPG(batch []*txRequest) {
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
	conn, err := c.db.Conn(ctx)
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
				c.runPG([]*txRequest{r})
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
		kept1, stop := c.applyUnsaved(ctx, tx, r, fn, batch, c.runPG)
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

// applyUnsaved runs fn, what remains to run of r, in tx without a savepoint
// and reports whether r's change is kept. A refusal has changed nothing, so
// the batch goes on. Any other error leaves tx unusable: it is rolled back,
// every write of the batch runs again through rerun in a transaction of its
// own (so that only the failing one fails), and stop is true: the batch is
// answered.
func (c *committer) applyUnsaved(ctx context.Context, tx *sql.Tx, r *txRequest, fn txFunc, batch []*txRequest, rerun func([]*txRequest)) (kept, stop bool) {
	r.err = apply(ctx, tx, fn)
	switch {
	case r.err == nil:
		return true, false
	case refusal(r.err):
		return false, false
	}
	_ = tx.Rollback()
	if len(batch) == 1 {
		r.done <- r.err
		return false, true
	}
	for _, r := range batch {
		rerun([]*txRequest{r})
	}
	return false, true
}

// refusal reports whether err is a write's own refusal, after which its
// transaction is still sound.
func refusal(err error) bool {
	return errors.Is(err, errNothingToCommit) || errors.Is(err, payoutkit.ErrInsufficientBalance) ||
		errors.Is(err, payoutkit.ErrConflict)
}

// apply runs fn, turning a panic into an error: a panic must not kill the
// committer, which every writer depends on, and the savepoint undoes
// whatever fn did before it.
func apply(ctx context.Context, tx *sql.Tx, fn txFunc) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sqlstore: panic in a write: %v", p)
		}
	}()
	return fn(ctx, tx)
}
