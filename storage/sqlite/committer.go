package sqlite

import (
	"context"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// Group commit. Every commit waits for one fsync of the WAL, and the single
// writer connection commits one transaction at a time, so one transaction
// per money movement caps the store at one movement per fsync. The
// committer carries many of them in one transaction instead (the queue is
// sqlcore.Committer's): it runs each write of a batch in arrival order and
// commits once. A write that fails (an overdraft, a replay, a settled
// payout) is undone and answered on its own, without disturbing the others:
// by its own SAVEPOINT, or, for the hot writes that are one statement or
// refuse before changing anything (creating a payout, claiming, recording
// an attempt or a hand-off), by having changed nothing, which saves two
// statements per write. Callers are answered only after the COMMIT
// returned; when the COMMIT fails, every write of the batch gets the error.
//
// The writes of a batch run one after the other on the single writer
// connection, as they would in their own transactions, so the database's
// rules (the conditional debit, the unique ids) hold exactly as they would.
type committer struct {
	*sqlcore.Committer[writeOpts]
	d *db
}

// txFunc is one write (see sqlcore.Request.Fn).
type txFunc = sqlcore.TxFunc

// writeOpts is what a batch needs to know of a write besides its function.
type writeOpts struct {
	// refusalSafe marks a write that needs no savepoint: it is one
	// statement (which SQLite undoes by itself when it fails), or it
	// refuses only before changing anything.
	refusalSafe bool
}

// txRequest is one write queued for the committer.
type txRequest = sqlcore.Request[writeOpts]

func newTxRequest(fn txFunc) *txRequest { return sqlcore.NewRequest[writeOpts](fn) }

func newCommitter(d *db) *committer {
	c := &committer{d: d}
	c.Committer = sqlcore.NewCommitter(c.run, d.observeCommit)
	return c
}

// do runs fn in the next batch and returns its error, or the batch's (see
// sqlcore.Committer.Submit).
func (c *committer) do(ctx context.Context, refusalSafe bool, fn txFunc) error {
	r := newTxRequest(fn)
	r.Extra.refusalSafe = refusalSafe
	return c.Submit(ctx, r)
}

// Savepoint statements, prepared with the other writes.
const (
	savepointSQL  = `SAVEPOINT w`
	releaseSQL    = `RELEASE w`
	rollbackToSQL = `ROLLBACK TO w`
)

// run applies batch in one transaction and answers every request in it.
func (c *committer) run(batch []*txRequest) {
	c.Batches.Add(1)
	c.Writes.Add(int64(len(batch)))
	ctx := context.Background()
	st := stmts(c.d.wstmts)
	fail := func(err error) {
		for _, r := range batch {
			r.Answer(err)
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
		if r.Extra.refusalSafe {
			// No savepoint (two statements saved). Any error but a
			// refusal may have rolled the whole transaction back (SQLite
			// does on a full disk or an I/O error, and nothing tells
			// which).
			ok, stop := c.ApplyUnsaved(ctx, tx, r, r.Fn, batch)
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
		r.Err = sqlcore.Apply(ctx, tx, r.Fn)
		step := releaseSQL
		if r.Err != nil {
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
		if r.Err != nil {
			if _, err := st.exec(ctx, tx, releaseSQL); err != nil {
				_ = tx.Rollback()
				fail(err)
				return
			}
		}
	}
	c.Finish(tx, batch, kept)
}
