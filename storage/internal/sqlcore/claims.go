package sqlcore

import (
	"encoding/json"
	"fmt"
	"strings"

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
