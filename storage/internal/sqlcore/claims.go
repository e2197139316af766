package sqlcore

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/payoutkit/payoutkit"
)

// Claims: $1 now, $2 lease until, $3 limit, $4 owner; for events, $5 a
// JSON array of the workspaces to pass over. Due events are read soonest
// due first through events_due, so a backlog waiting for its retries costs
// nothing; passing over a workspace costs a scan of its due events. The
// order is the index's own, so that a claim reads its LIMIT of due events
// and stops: sorted any other way, every claim would read and sort all the
// due events, and a backlog (a load faster than the receiver) would make
// each claim slower than the last. An event is a candidate only when no
// earlier event of its subject is pending, whether or not that one is due,
// so that a subject's events go out in order. Every pending event has a
// next_attempt_at.
//
// ClaimEventsSQL takes the database's set of the JSON array $5 and its
// locking clause.
func ClaimEventsSQL(exceptSet, locking string) string {
	return fmt.Sprintf(claimEventsSQL, exceptSet, locking)
}

const claimEventsSQL = `WITH due AS MATERIALIZED (
	SELECT e.seq FROM events e
	WHERE e.state = 'pending'
		AND e.next_attempt_at <= $1
		AND (e.lease_until IS NULL OR e.lease_until <= $1)
		AND e.workspace_id NOT IN (%s)
		AND NOT EXISTS (
			SELECT 1 FROM events b
			WHERE b.state = 'pending' AND b.workspace_id = e.workspace_id AND b.subject = e.subject AND b.seq < e.seq)
	ORDER BY e.next_attempt_at, e.workspace_id, e.seq
	LIMIT $3
	%s
)
UPDATE events SET lease_owner = $4, lease_until = $2
WHERE seq IN (SELECT seq FROM due)
RETURNING ` + EventCols + `, seq`

// EventValues renders an event's values after id and workspace_id from
// their placeholders (EventArgs order), for a row w of workspaces: the
// event of a workspace without a webhook URL is stored failed, never to be
// attempted, with payoutkit.NoWebhookURLError as its last error.
func EventValues(p []string) string {
	const noURL = `CASE WHEN w.webhook_url = '' THEN `
	return strings.Join([]string{p[0], p[1], p[2], p[3],
		noURL + `'failed' ELSE ` + p[4] + ` END`,
		p[5],
		noURL + `NULL ELSE ` + p[6] + ` END`,
		noURL + `'` + payoutkit.NoWebhookURLError + `' ELSE ` + p[7] + ` END`,
	}, ", ")
}

// ExceptJSON is a list of workspaces to pass over, as a claim's $5.
func ExceptJSON(except []string) (string, error) {
	if except == nil {
		return "[]", nil
	}
	b, err := json.Marshal(except)
	return string(b), err
}

// HandoffCursor is where a store's next hand-off claim starts in its queue:
// after the last payout of its last full claim. A backlog's claims so read
// on rather than walk, each from the queue's head, past the payouts
// claimed before and still in flight, and past the index entries of the
// recorded hand-offs, which PostgreSQL keeps until a vacuum
// (BenchmarkHandoffBacklog). What lies behind the cursor (a lease that
// expired, a payout approved, one committed after a later one was claimed)
// is claimed by a claim from the head: one that follows a claim from the
// cursor that came up short, and one at least once a lease's length.
type HandoffCursor struct {
	mu     sync.Mutex
	after  int64     // the seq a claim reads after; 0 from the head
	headAt time.Time // when a claim last read from the head
}

// start returns where a claim at now with a lease of lease starts.
func (c *HandoffCursor) start(now time.Time, lease time.Duration) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.after > 0 && now.Sub(c.headAt) >= lease {
		c.after = 0
	}
	if c.after == 0 {
		c.headAt = now
	}
	return c.after
}

// claimed moves the cursor after a claim: on to last after a full one,
// back to the head after a short one.
func (c *HandoffCursor) claimed(full bool, last int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if full {
		c.after = last
	} else {
		c.after = 0
	}
}

// Claim claims up to limit payouts for hand-off at now until leaseUntil
// with claim, which claims up to n of the due payouts queued after seq
// after, oldest first, and returns the last one's seq: from the cursor,
// and from the queue's head for the rest when that comes up short.
func (c *HandoffCursor) Claim(now, leaseUntil time.Time, limit int, claim func(after int64, n int) ([]payoutkit.PayoutLease, int64, error)) ([]payoutkit.PayoutLease, error) {
	after := c.start(now, leaseUntil.Sub(now))
	ls, last, err := claim(after, limit)
	if err == nil && len(ls) < limit && after > 0 {
		var older []payoutkit.PayoutLease
		older, _, err = claim(0, limit-len(ls))
		ls = append(older, ls...)
	}
	if err != nil {
		return nil, err
	}
	c.claimed(len(ls) == limit, last)
	return ls, nil
}

// ClaimHandoffLeases reads the payouts that run's claiming statement
// returns (PayoutReadCols, seq, handoff_token) as owner's leases, oldest
// first, and the last one's seq.
func ClaimHandoffLeases(owner string, run func(read func(RowIter) error) error) ([]payoutkit.PayoutLease, int64, error) {
	var last int64
	ls, err := Claim(run, func(sc Scanner, seq *int64) (payoutkit.PayoutLease, error) {
		l := payoutkit.PayoutLease{Owner: owner}
		var err error
		l.Payout, err = ScanPayout(sc, seq, &l.Token)
		last = max(last, *seq)
		return l, err
	})
	return ls, last, err
}
