package sqltest

import (
	"fmt"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// BacklogStore is a fresh store for BenchClaimEventsBacklog, with a way
// into its tables: writer runs statements on its database, ts is a time as
// it stores one.
type BacklogStore struct {
	Store  payoutkit.Store
	Writer sqlcore.Querier
	TS     func(time.Time) any
}

// BenchClaimEventsBacklog: what one claim costs when another workspace
// has 100,000 pending events, against none. Waiting for their retry (a
// receiver that is down), they cost nothing: the claim reads due events
// only. Due but passed over (their workspace has its share of workers),
// they cost a scan of that workspace's due events. Due and taken (a load
// faster than the receiver), they cost nothing: the claim reads them in
// the index's order and stops at its limit. Leased and in flight (256
// workers sending), they cost a step each.
func BenchClaimEventsBacklog(b *testing.B, open func(b *testing.B) BacklogStore) {
	for _, c := range []struct {
		name    string
		backlog int
		dueIn   time.Duration // of the backlog's events
		except  bool          // pass over the backlog's workspace
		leased  bool          // the backlog is claimed, its attempts in flight
	}{
		{"none", 0, 0, false, false},
		{"100k-waiting-retry", 100_000, time.Hour, false, false},
		{"100k-due-passed-over", 100_000, -time.Minute, true, false},
		{"10k-due", 10_000, -time.Minute, false, false},
		{"256-in-flight", 256, -time.Minute, false, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			st := open(b)
			s := st.Store
			eng := newEngine(b, s)
			var ws [2]string
			for i := range ws {
				nw, err := eng.CreateWorkspace(b.Context(), payoutkit.CreateWorkspaceRequest{Name: "Claim", WebhookURL: "https://hooks.example/x"})
				if err != nil {
					b.Fatal(err)
				}
				ws[i] = nw.Workspace.ID
			}
			now := time.Now().UTC()
			// Workspace 0's backlog, one event per payout, in one statement.
			if _, err := st.Writer.ExecContext(b.Context(), `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)
				INSERT INTO events (id, workspace_id, type, subject, created_at, body, state, attempts, next_attempt_at, last_error)
				SELECT 'evt_backlog_' || i, $2, 'payout.submitted', 'payout:po-' || i, $3, $5, 'pending', 1, $4, 'HTTP 503' FROM n`,
				c.backlog, ws[0], st.TS(now.Add(-time.Hour)), st.TS(now.Add(c.dueIn)), []byte("{}")); err != nil && c.backlog > 0 {
				b.Fatal(err)
			}
			if c.leased {
				if evs, err := s.ClaimEvents(b.Context(), "workers", now, now.Add(time.Hour), c.backlog, nil); err != nil || len(evs) != c.backlog {
					b.Fatalf("leased %d of %d events: %v", len(evs), c.backlog, err)
				}
			}
			// Workspace 1's one new event, due now.
			if _, err := st.Writer.ExecContext(b.Context(), `INSERT INTO events (id, workspace_id, type, subject, created_at, body, state, attempts, next_attempt_at)
				VALUES ('evt_new', $1, 'order.paid', 'order:o-1', $2, $3, 'pending', 0, $2)`, ws[1], st.TS(now), []byte("{}")); err != nil {
				b.Fatal(err)
			}
			var except []string
			if c.except {
				except = []string{ws[0]}
			}
			b.ResetTimer()
			for b.Loop() {
				// A lease that ends at once, so the next claim finds the
				// same event due again.
				evs, err := s.ClaimEvents(b.Context(), "bench", now, now, 10, except)
				if err != nil {
					b.Fatal(err)
				}
				if len(evs) == 0 || evs[0].ID != "evt_new" && c.except {
					b.Fatalf("claimed %d events, first %v; want workspace 1's", len(evs), fmt.Sprint(evs))
				}
			}
		})
	}
}
