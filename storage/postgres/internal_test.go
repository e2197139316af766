package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// On PostgreSQL the claims walk their index in its order and stop at their
// LIMIT whatever the table's statistics say: here ten thousand events are
// due and the table was never analyzed since it was created empty, the
// state in which the planner otherwise reads every due row and sorts them.
func TestPostgresClaimPlans(t *testing.T) {
	s := openPostgresWorkspace(t, "https://hooks.example/x")
	ctx := t.Context()
	if _, err := s.writer().ExecContext(ctx, `INSERT INTO events (id, workspace_id, type, subject, created_at, body, state, attempts, next_attempt_at, last_error)
		SELECT 'evt_' || i, 'ws', 'payout.submitted', 'payout:po-' || i, now() - interval '1 hour', '\x7b7d', 'pending', 0, now() - interval '1 hour' + i * interval '1 ms', ''
		FROM generate_series(1, 10000) AS i`); err != nil {
		t.Fatal(err)
	}
	now, until := time.Now().UTC(), time.Now().UTC().Add(time.Minute)
	if _, err := s.writer().ExecContext(ctx, `INSERT INTO payouts (`+sqlcore.PayoutCols+`)
		SELECT 'ws', 'po-' || i, 'submitted', 100, 'USDT', 'TRON', 'T', 'payer', '', '', now(), now() FROM generate_series(1, 10000) AS i`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.writer().ExecContext(ctx, `INSERT INTO payout_handoffs (seq) SELECT seq FROM payouts`); err != nil {
		t.Fatal(err)
	}
	// Without statistics, and then with statistics that count the whole
	// queue due, in which the planner would rather join the hand-offs by
	// reading payouts in order from the first one ever made; and with the
	// generic plan a prepared statement comes to (LIMIT $3 unknown).
	for _, mode := range []string{"without statistics", "analyzed", "generic"} {
		if mode == "analyzed" {
			if _, err := s.writer().ExecContext(ctx, `ANALYZE events, payouts, payout_handoffs`); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			name, query, index string
			args               []any
			settings           bool // run under pgClaimSettings, as claim does
		}{
			{"claim events", claimEventsSQL, "events_due", []any{now, until, 100, "owner", "[]"}, true},
			{"claim events passing over a workspace", claimEventsSQL, "events_due", []any{now, until, 100, "owner", `["ws_other"]`}, true},
			{"claim hand-offs", claimHandoffsSQL, "payout_handoffs_pkey", []any{now, until, 100, "owner", 0}, true},
			{"claim hand-offs from a cursor", claimHandoffsSQL, "payout_handoffs_pkey", []any{now, until, 100, "owner", 5000}, true},
		} {
			tx, err := s.d.sqldb.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.settings {
				if _, err := tx.ExecContext(ctx, pgClaimSettings); err != nil {
					t.Fatal(err)
				}
			}
			explain := "EXPLAIN " + c.query
			if mode == "generic" {
				if _, err := tx.ExecContext(ctx, "SET LOCAL plan_cache_mode = force_generic_plan; PREPARE claim AS "+c.query); err != nil {
					t.Fatal(err)
				}
				explain = "EXPLAIN EXECUTE claim(" + sqlLiterals(c.args) + ")"
			}
			args := c.args
			if mode == "generic" {
				args = nil
			}
			rows, err := tx.QueryContext(ctx, explain, args...)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			text := planText(t, rows)
			if mode == "generic" {
				if _, err := tx.ExecContext(ctx, "DEALLOCATE claim"); err != nil {
					t.Fatal(err)
				}
			}
			tx.Rollback()
			if !strings.Contains(text, " Scan using "+c.index+" on ") { // an Index or an Index Only Scan
				t.Errorf("%s, %s, does not walk %s:\n%s", c.name, mode, c.index, text)
			}
			if strings.Contains(text, "Sort") || strings.Contains(text, "Bitmap") {
				t.Errorf("%s, %s, reads and sorts every due row:\n%s", c.name, mode, text)
			}
			if strings.Contains(text, "Merge Join") || strings.Contains(text, "Hash Join") {
				t.Errorf("%s joins by reading the joined table from its start:\n%s", c.name, text)
			}
		}
	}

	// And it claims the soonest due, leaving the defaults to the batch's
	// other writes.
	evs, err := s.ClaimEvents(ctx, "owner", now, until, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[0].ID != "evt_1" || evs[2].ID != "evt_3" {
		t.Errorf("claimed %v; want evt_1 to evt_3", evs)
	}
	var sortOn string
	if err := s.writer().QueryRowContext(ctx, "SHOW enable_sort").Scan(&sortOn); err != nil || sortOn != "on" {
		t.Errorf("enable_sort after a claim: %q, %v; want on", sortOn, err)
	}
}

// sqlLiterals writes args as SQL literals, comma-separated.
func sqlLiterals(args []any) string {
	out := make([]string, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case time.Time:
			out[i] = "'" + a.Format(time.RFC3339Nano) + "'"
		case string:
			out[i] = "'" + strings.ReplaceAll(a, "'", "''") + "'"
		default:
			out[i] = fmt.Sprint(a)
		}
	}
	return strings.Join(out, ", ")
}

// A claim on PostgreSQL is sent with its settings in one round trip, as one
// implicit transaction: the settings hold for the claim and end with it, on
// the connection the next statement gets (the pool's only one here).
func TestPostgresClaimSettingsEndWithClaim(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, pgtest.Postgres(t), WithMaxConns(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	settings := func(pinPlan bool) string {
		var sort, bitmap, merge, hash string
		err := s.w.Claim(ctx, pinPlan, func(rows sqlcore.RowIter) error {
			defer rows.Close()
			if !rows.Next() {
				return fmt.Errorf("no row: %v", rows.Err())
			}
			return rows.Scan(&sort, &bitmap, &merge, &hash)
		}, `SELECT current_setting('enable_sort'), current_setting('enable_bitmapscan'),
			current_setting('enable_mergejoin'), current_setting('enable_hashjoin')`)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join([]string{sort, bitmap, merge, hash}, "/")
	}
	if got := settings(true); got != "off/off/off/off" {
		t.Errorf("a pinned claim ran with enable_sort/bitmapscan/mergejoin/hashjoin %s; want off/off/off/off", got)
	}
	if got := settings(false); got != "on/on/on/on" {
		t.Errorf("a claim after a pinned one ran with %s; want on/on/on/on", got)
	}
	var sortOn string
	if err := s.reader().QueryRowContext(ctx, "SHOW enable_sort").Scan(&sortOn); err != nil || sortOn != "on" {
		t.Errorf("enable_sort after a claim: %q, %v; want on", sortOn, err)
	}
}

// Recording a delivery attempt stays a lookup of the event by its id when
// the statistics were taken without a backlog and a backlog has built up
// since: PostgreSQL's cached generic plan then thought the due events'
// index empty and walked all of it for every record. Shown through the
// cached plan of a prepared statement, as the store's connections run it.
func TestPostgresRecordPlan(t *testing.T) {
	s := openPostgresWorkspace(t, "https://hooks.example/x")
	ctx := t.Context()
	insertEvents := func(from int, state string) {
		t.Helper()
		if _, err := s.writer().ExecContext(ctx, `INSERT INTO events (id, workspace_id, type, subject, created_at, body, state, attempts, next_attempt_at, last_error)
			SELECT 'evt_' || i, 'ws', 'payout.submitted', 'payout:po-' || i, now(), '\x7b7d', $2, 0, CASE WHEN $2 = 'pending' THEN now() END, ''
			FROM generate_series($1::integer, $1::integer + 9999) AS i`, from, state); err != nil {
			t.Fatal(err)
		}
	}
	insertEvents(1, "delivered")
	if _, err := s.writer().ExecContext(ctx, `ANALYZE events`); err != nil {
		t.Fatal(err)
	}
	insertEvents(10001, "pending") // the backlog, after the statistics

	conn := preparedGeneric(t, s, "record_attempt", "text, text, text, integer, timestamptz, text, integer, timestamptz, integer, bigint, text, text", pgRecordAttemptSQL)
	text := cachedPlan(t, conn, `record_attempt ('evt_10001', 'owner', 'delivered', 1, now(), '', 1, now(), 200, 1, '', '')`)
	if !strings.Contains(text, "Index Scan using events_id on events") {
		t.Errorf("recording an attempt does not look the event up by id:\n%s", text)
	}
}

// A claim rewrites only lease columns, which no index holds: PostgreSQL
// keeps the claimed version on the row's own page, writing no index entry,
// when the page has room, which migration 0008 leaves. On full pages nearly
// every claim moved its row and wrote an entry into each of the table's
// indexes (about 8 WAL records per claimed row instead of 3).
func TestPostgresClaimsStayOnTheirPage(t *testing.T) {
	s := openPostgresWorkspace(t, "https://hooks.example/x")
	ctx := t.Context()
	const n = 400
	body := strings.Repeat("x", 300) // about a payout event's size
	if _, err := s.writer().ExecContext(ctx, `INSERT INTO events (id, workspace_id, type, subject, created_at, body, state, attempts, next_attempt_at, last_error)
		SELECT 'evt_' || i, 'ws', 'payout.submitted', 'payout:po-' || i, now(), convert_to($1, 'UTF8'), 'pending', 0, now() - interval '1 minute', ''
		FROM generate_series(1, $2::integer) AS i`, body, n); err != nil {
		t.Fatal(err)
	}
	if _, err := s.writer().ExecContext(ctx, `INSERT INTO payouts (`+sqlcore.PayoutCols+`)
		SELECT 'ws', 'po-' || i, 'submitted', 100, 'USDT', 'TRON', 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t', 'payer-' || i, '', '', now(), now()
		FROM generate_series(1, $1::integer) AS i`, n); err != nil {
		t.Fatal(err)
	}
	if _, err := s.writer().ExecContext(ctx, `INSERT INTO payout_handoffs (seq) SELECT seq FROM payouts`); err != nil {
		t.Fatal(err)
	}
	pages := func(table string) map[int64]string {
		t.Helper()
		rows, err := s.writer().QueryContext(ctx, `SELECT seq, split_part(ctid::text, ',', 1) FROM `+table)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		m := make(map[int64]string)
		for rows.Next() {
			var seq int64
			var page string
			if err := rows.Scan(&seq, &page); err != nil {
				t.Fatal(err)
			}
			m[seq] = page
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return m
	}
	eventPages, payoutPages := pages("events"), pages("payouts")

	now := time.Now()
	events, err := s.ClaimEvents(ctx, "owner", now, now.Add(time.Minute), n, nil)
	if err != nil || len(events) != n {
		t.Fatalf("claimed %d events, %v; want %d", len(events), err, n)
	}
	handoffs, err := s.ClaimPayoutHandoffs(ctx, "owner", now, now.Add(time.Minute), n)
	if err != nil || len(handoffs) != n {
		t.Fatalf("claimed %d hand-offs, %v; want %d", len(handoffs), err, n)
	}
	for table, before := range map[string]map[int64]string{"events": eventPages, "payouts": payoutPages} {
		moved := 0
		for seq, page := range pages(table) {
			if before[seq] != page {
				moved++
			}
		}
		// A claimed payout's version is larger than its first (the
		// lease fills NULL columns), so a page whose every row is claimed
		// at once can overflow by a row or two (22 of 400 payouts moved);
		// on full pages all of them moved.
		if moved > n/10 {
			t.Errorf("claiming moved %d of %d %s rows to other pages; want at most %d", moved, n, table, n/10)
		}
	}
}

// A caller that gives up (a client that hangs up) never fails another
// caller's statement on PostgreSQL. Half the goroutines cancel their reads
// at random moments, many of them in the middle of a statement; the other
// half must never see an error. Before statements were detached from their
// callers' cancellation, about one read in a few hundred of the innocent
// half failed with "driver: bad connection" within a few seconds.
func TestPostgresCancelledCallersSpareOthers(t *testing.T) {
	s := openPostgresWorkspace(t, "")
	ctx := t.Context()
	var innocent, failed atomic.Int64
	var wg sync.WaitGroup
	end := time.Now().Add(5 * time.Second)
	for g := range 32 {
		wg.Go(func() {
			for time.Now().Before(end) {
				if g%2 == 0 {
					c, cancel := context.WithCancel(ctx)
					time.AfterFunc(time.Duration(rand.IntN(400))*time.Microsecond, cancel)
					_, _ = s.Balance(c, "ws")
					cancel()
					continue
				}
				if _, err := s.Balance(ctx, "ws"); err != nil {
					if failed.Add(1) <= 3 {
						t.Errorf("a read nobody cancelled failed: %v", err)
					}
				}
				innocent.Add(1)
			}
		})
	}
	wg.Wait()
	if innocent.Load() < 100 {
		t.Fatalf("only %d innocent reads ran; the test proves nothing", innocent.Load())
	}
	t.Logf("%d innocent reads, %d failed", innocent.Load(), failed.Load())
}

// openPostgresWorkspace opens a store on a fresh PostgreSQL schema, closed
// when the test ends, with one workspace "ws" (a zero balance, webhooks to
// url) written straight into its tables.
func openPostgresWorkspace(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(t.Context(), pgtest.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.writer().ExecContext(t.Context(), `INSERT INTO workspaces (id, name, webhook_url, webhook_secret, created_at) VALUES ('ws', 'Test', $1, 'whsec_x', now())`, url); err != nil {
		t.Fatal(err)
	}
	if _, err := s.writer().ExecContext(t.Context(), `INSERT INTO balances (workspace_id) VALUES ('ws')`); err != nil {
		t.Fatal(err)
	}
	return s
}

// A group commit debits a hot balance many times in one transaction, and
// PostgreSQL checks a foreign key on an update that keeps the key whenever
// the row's old version is the same transaction's: every debit after the
// first would lock the workspace's row FOR KEY SHARE with a query of its
// own. Without that key (migration 0017) the row stays untouched.
func TestPostgresDebitsLockNoWorkspace(t *testing.T) {
	s := openPostgresWorkspace(t, "https://hooks.example/x")
	ctx := t.Context()
	if _, err := s.writer().ExecContext(ctx, `UPDATE balances SET available = 100 WHERE workspace_id = 'ws'`); err != nil {
		t.Fatal(err)
	}
	tx, err := s.d.sqldb.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for range 3 {
		if _, err := tx.ExecContext(ctx, `UPDATE balances SET available = available - 1, in_progress = in_progress + 1 WHERE workspace_id = 'ws'`); err != nil {
			t.Fatal(err)
		}
	}
	var locker string
	if err := tx.QueryRowContext(ctx, `SELECT xmax::text FROM workspaces WHERE id = 'ws'`).Scan(&locker); err != nil {
		t.Fatal(err)
	}
	if locker != "0" {
		t.Errorf("debits in one transaction locked the workspace's row (xmax %s): a foreign key checked each", locker)
	}
}
