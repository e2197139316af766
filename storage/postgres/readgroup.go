package postgres

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// Grouped reads. A point read (a key with its balance, a payout, a
// workspace) is a round trip, and under load the round trip costs more than
// the read: the system calls that send it and wake PostgreSQL's backend. Reads that arrive while others
// are being sent wait for their turn and then go together, each its own
// statement, on one connection (pgx's batch: one write and one read of the
// socket for the whole group). Each statement still takes its own snapshot
// when it runs, after its caller asked, so a key revoked before a request
// is refused on that request as before. While reads are few each goes at
// once, alone, side by side with the others (readLanes): grouping adds no
// wait to a quiet store.

// readLanes is how many reads a store sends at once, alone, while reads
// are few, as a pool of connections would. Once they crowd they go as one
// group at a time, the largest groups: one group in flight at a time keeps
// the round trips fewest, and reads alone side by side while they are few
// spare a quiet store the wait for another's round trip
// (docs/PERFORMANCE.md). A point read costs PostgreSQL little next to its
// round trip, so one backend keeps up with the reads of many clients.
const readLanes = 4

// maxReadGroup bounds the reads sent together, so that one group's answers
// do not hold the first read's caller long.
const maxReadGroup = 64

// readGroups sends a store's point reads on PostgreSQL, grouping those that
// arrive while others are in flight.
type readGroups struct {
	db *sql.DB
	// lanes is how many reads may go at once, alone, each on its own
	// connection, while reads are few (read).
	lanes int
	// ungrouped is set when the driver is not pgx's (a caller's handle,
	// New): reads then go to the pool one by one, as without groups, and
	// claims run in a transaction of their own (db.Claim).
	ungrouped atomic.Bool

	// groups and grouped count the groups sent as batches and their reads.
	groups, grouped atomic.Int64

	mu      sync.Mutex
	running int // lanes sending
	crowded int // lanes sending more than one read
	// lastCrowded is whether the last group taken from the queue had more
	// than one read: reads crowd still, and wait for the next group even
	// when no group is in flight.
	lastCrowded bool
	queue       []*groupedRead
}

// groupedRead is one point read waiting in, or sent with, a group.
type groupedRead struct {
	query string
	args  []any
	dest  []any
	err   error
	// done is signalled when the read has its answer, or when it is to
	// send next, the group it leads.
	done chan struct{}
	next []*groupedRead
}

func newReadGroups(db *sql.DB, lanes int) *readGroups {
	return &readGroups{db: db, lanes: max(1, lanes)}
}

// row returns the scanner of one point read, which runs when it is scanned.
func (g *readGroups) row(query string, args []any) sqlcore.Scanner {
	return groupedRow{g, query, args}
}

type groupedRow struct {
	g     *readGroups
	query string
	args  []any
}

// Scan runs the read and scans its one row into dest, as sql.Row.Scan:
// sql.ErrNoRows when there is none.
func (r groupedRow) Scan(dest ...any) error {
	return r.g.read(&groupedRead{query: r.query, args: r.args, dest: dest})
}

// read sends r at once, alone, while reads are few: no lane busy, or a lane
// free and every busy one sending a single read. Once reads crowd (a group
// is in flight, or reads queue), it waits for the next group. The read that
// leads a group sends it, so no goroutine is started.
func (g *readGroups) read(r *groupedRead) error {
	if g.ungrouped.Load() {
		// Nothing to group: the driver's pool runs reads side by side.
		return g.db.QueryRowContext(context.Background(), r.query, r.args...).Scan(r.dest...)
	}
	g.mu.Lock()
	if g.running == 0 || (g.running < g.lanes && g.crowded == 0 && !g.lastCrowded && len(g.queue) == 0) {
		g.running++
		g.mu.Unlock()
		g.lead([]*groupedRead{r})
		return r.err
	}
	r.done = make(chan struct{}, 1)
	g.queue = append(g.queue, r)
	g.mu.Unlock()
	<-r.done
	if r.next != nil {
		g.lead(r.next)
	}
	return r.err
}

// lead sends group, whose first read is its caller's, then hands the lane
// to the first of the reads that queued meanwhile, and wakes the others of
// group.
func (g *readGroups) lead(group []*groupedRead) {
	defer g.handOn(group) // even if a Scan method panics
	g.send(group)
}

// handOn ends a group's turn on its lane: the lane goes to the reads queued
// meanwhile, led by the first of them, or is freed; then group's reads but
// the first are woken.
func (g *readGroups) handOn(group []*groupedRead) {
	var leader *groupedRead
	g.mu.Lock()
	if len(group) > 1 {
		g.crowded--
	}
	// The queue goes to the last lane busy, so that crowded reads make one
	// large group rather than several small ones; the lanes before it end.
	if n := min(len(g.queue), maxReadGroup); n > 0 && g.running == 1 {
		g.lastCrowded = n > 1
		if n > 1 {
			g.crowded++
		}
		next := g.queue[:n:n]
		g.queue = g.queue[n:]
		if len(g.queue) == 0 {
			g.queue = nil
		}
		leader = next[0]
		leader.next = next
	} else {
		g.running--
	}
	g.mu.Unlock()
	for _, r := range group[1:] {
		r.done <- struct{}{}
	}
	if leader != nil {
		leader.done <- struct{}{}
	}
}

// send runs the reads of group and sets each one's err. Reads run with no
// cancellation, as all of the store's statements on PostgreSQL (detach):
// they take milliseconds, and a caller that gave up drops the answer.
func (g *readGroups) send(group []*groupedRead) {
	ctx := context.Background()
	for _, r := range group {
		r.err = errUnsent
	}
	if len(group) > 1 && !g.ungrouped.Load() {
		g.sendBatch(ctx, group)
	}
	// Alone, or again alone after a group: a read that failed in a group
	// may have failed for another's statement, since PostgreSQL skips the
	// rest of a pipeline after an error.
	for _, r := range group {
		if r.err != nil && !errors.Is(r.err, sql.ErrNoRows) {
			r.err = g.db.QueryRowContext(ctx, r.query, r.args...).Scan(r.dest...)
		}
	}
}

var errUnsent = errors.New("sqlstore: read not sent")

// sendBatch sends group as one pgx batch and sets the err of each read it
// answered.
func (g *readGroups) sendBatch(ctx context.Context, group []*groupedRead) {
	conn, err := g.db.Conn(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	_ = conn.Raw(func(driverConn any) error {
		sc, ok := driverConn.(*stdlib.Conn)
		if !ok {
			g.ungrouped.Store(true)
			return nil
		}
		var b pgx.Batch
		for _, r := range group {
			b.Queue(r.query, r.args...)
		}
		g.groups.Add(1)
		g.grouped.Add(int64(len(group)))
		br := sc.Conn().SendBatch(ctx, &b)
		for _, r := range group {
			r.err = br.QueryRow().Scan(r.dest...)
		}
		// An error closing is the connection's, which database/sql's
		// next use of it finds; the answers read stand.
		_ = br.Close()
		return nil
	})
}
