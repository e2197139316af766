package sqlstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlstore/sqltest"
)

// The settings the store's guarantees rest on are in force on every
// connection it opens.
func TestSQLitePragmas(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check := func(q querier, pragma, want string) {
		t.Helper()
		var got string
		if err := q.QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", pragma, err)
		}
		if !strings.EqualFold(got, want) {
			t.Errorf("PRAGMA %s = %s; want %s", pragma, got, want)
		}
	}
	for _, c := range [][2]string{{"journal_mode", "wal"}, {"synchronous", "2"}, {"foreign_keys", "1"}, {"busy_timeout", "5000"}, {"query_only", "0"}, {"temp_store", "2"}} {
		check(s.writer(), c[0], c[1])
	}
	for _, c := range [][2]string{{"journal_mode", "wal"}, {"foreign_keys", "1"}, {"busy_timeout", "5000"}, {"query_only", "1"}} {
		check(s.reader(), c[0], c[1])
	}
	if n := s.w.DB.Stats().MaxOpenConnections; n != 1 {
		t.Errorf("writer pool holds up to %d connections; want 1", n)
	}
	check(s.writer(), "wal_autocheckpoint", "4000")

	// A setting the store does not rest on is the DSN's to change.
	tuned, err := Open(t.Context(), "file:"+filepath.Join(t.TempDir(), "t.db")+"?_pragma=wal_autocheckpoint(500)")
	if err != nil {
		t.Fatal(err)
	}
	defer tuned.Close()
	check(tuned.writer(), "wal_autocheckpoint", "500")
}

func TestParseSQLiteDSN(t *testing.T) {
	for _, c := range []struct {
		dsn, path, params string
		err               bool
	}{
		{dsn: "payoutkit.db", path: "payoutkit.db"},
		{dsn: "/var/lib/x?y.db", path: "/var/lib/x?y.db"},
		{dsn: "file:data.db?mode=ro", path: "data.db", params: "mode=ro"},
		{dsn: "file:///abs/data%20x.db?mode=rw&_pragma=cache_size(-20000)", path: "/abs/data x.db", params: "_pragma=cache_size%28-20000%29&mode=rw"},
		// The store's own settings cannot be weakened from the DSN.
		{dsn: "file:/d.db?_pragma=synchronous(OFF)&_txlock=deferred&_journal_mode=DELETE&_pragma=foreign_keys(0)", path: "/d.db"},
		{dsn: "file::memory:", err: true},
		{dsn: "file:x.db?mode=memory", err: true},
		{dsn: "file://remote/x.db", err: true},
	} {
		path, params, err := parseSQLiteDSN(c.dsn)
		if c.err {
			if err == nil {
				t.Errorf("%q: no error", c.dsn)
			}
			continue
		}
		if err != nil || path != c.path || params.Encode() != c.params {
			t.Errorf("%q = %q, %q, %v; want %q, %q", c.dsn, path, params.Encode(), err, c.path, c.params)
		}
	}
	if got := sqliteURI("/a b/c?d#e%f.db", nil); got != "file:/a b/c%3fd%23e%25f.db?" {
		t.Errorf("sqliteURI = %q", got)
	}
}

func TestMigrationsNumbered(t *testing.T) {
	for _, d := range []string{DialectSQLite, DialectPostgres} {
		ms, err := loadMigrations(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 || ms[0].version != 1 {
			t.Fatalf("%s migrations %+v", d, ms)
		}
	}
	s, p := mustLoad(t, DialectSQLite), mustLoad(t, DialectPostgres)
	if len(s) != len(p) {
		t.Fatalf("%d SQLite migrations, %d PostgreSQL ones: every schema change is made on both", len(s), len(p))
	}
	for i := range s {
		if s[i].name != p[i].name {
			t.Errorf("migration %d is %q on SQLite, %q on PostgreSQL", i+1, s[i].name, p[i].name)
		}
	}
}

func mustLoad(t *testing.T, dialect string) []migration {
	ms, err := loadMigrations(dialect)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// The listings and the outbox claim find their rows through the indexes
// meant for them, whatever the table's size: SQLite plans from the schema
// alone (there is no ANALYZE), so the plan seen here is the plan in use.
func TestSQLitePlans(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "plans.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	newest := func(table string, f newestFilter, cursor string) string {
		q, _, err := s.newestQuery(table, "*", "ws", f, payoutkit.PageRequest{Limit: 50, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, query, index string
	}{
		{"payouts", newest("payouts", newestFilter{}, ""), "payouts_workspace_created"},
		{"payouts, next page", newest("payouts", newestFilter{}, "1767225600000000.7"), "payouts_workspace_created"},
		{"payouts in a range", newest("payouts", newestFilter{from: from, to: to}, "1767225600000000.7"), "payouts_workspace_created"},
		{"payouts by status", newest("payouts", newestFilter{status: "failed"}, "1767225600000000.7"), "payouts_workspace_status_created"},
		{"payouts by status in a range", newest("payouts", newestFilter{status: "failed", from: from}, ""), "payouts_workspace_status_created"},
		{"payouts by payer", newest("payouts", newestFilter{payerID: "p"}, "1767225600000000.7"), "payouts_workspace_payer_created"},
		{"payouts by payer and status", newest("payouts", newestFilter{payerID: "p", status: "failed", to: to}, ""), "payouts_workspace_payer_created"},
		{"orders", newest("orders", newestFilter{}, "1767225600000000.7"), "orders_workspace_created"},
		{"orders by status", newest("orders", newestFilter{status: "paid", from: from, to: to}, ""), "orders_workspace_status_created"},
		{"orders by payer", newest("orders", newestFilter{payerID: "p"}, "1767225600000000.7"), "orders_workspace_payer_created"},
		{"customers", `SELECT ` + customerCols + `, seq FROM customers WHERE workspace_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`, "customers_workspace_seq"},
		{"subject events", subjectEventsSQL, "events_subject"},
		// The due events, soonest first, and the probe for an earlier
		// pending event of the same subject.
		{"claim events", s.q.claimEvents, "events_due"},
		{"claim events' subject probe", s.q.claimEvents, "events_subject"},
		{"claim hand-offs", s.q.claimHandoffs, "payouts_handoff_due"},
	} {
		rows, err := s.reader().QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+c.query, 1, 2, 3, 4, 5, 6, 7)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "\n") + "\n"
		if !regexp.MustCompile(`USING (COVERING )?INDEX ` + c.index + `[ \n]`).MatchString(text) {
			t.Errorf("%s does not use %s:\n%s", c.name, c.index, text)
		}
		for _, line := range plan {
			// due is the claim's few materialised rows; json_each its list
			// of workspaces to pass over.
			if strings.HasPrefix(line, "SCAN ") && !strings.Contains(line, " USING ") && line != "SCAN due" && !strings.HasPrefix(line, "SCAN json_each") {
				t.Errorf("%s scans a table (%s):\n%s", c.name, line, text)
			}
			if strings.Contains(line, "TEMP B-TREE") {
				t.Errorf("%s sorts its rows (%s):\n%s", c.name, line, text)
			}
		}
	}
}

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
	if _, err := s.writer().ExecContext(ctx, `INSERT INTO payouts (`+payoutCols+`)
		SELECT 'ws', 'po-' || i, 'submitted', 100, 'USDT', 'TRON', 'T', 'payer', '', '', now(), now() FROM generate_series(1, 10000) AS i`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, query, index string
		args               []any
		settings           bool // run under pgClaimSettings, as claim does
	}{
		{"claim events", s.q.claimEvents, "events_due", []any{now, until, 100, "owner", "[]"}, true},
		{"claim events passing over a workspace", s.q.claimEvents, "events_due", []any{now, until, 100, "owner", `["ws_other"]`}, true},
		{"claim hand-offs", s.q.claimHandoffs, "payouts_handoff_due", []any{now, until, 100, "owner"}, false},
	} {
		tx, err := s.w.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.settings {
			if _, err := tx.ExecContext(ctx, pgClaimSettings); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := tx.QueryContext(ctx, "EXPLAIN "+c.query, c.args...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		text := planText(t, rows)
		tx.Rollback()
		if !strings.Contains(text, "Index Scan using "+c.index+" on ") {
			t.Errorf("%s does not walk %s:\n%s", c.name, c.index, text)
		}
		if strings.Contains(text, "Sort") || strings.Contains(text, "Bitmap") {
			t.Errorf("%s reads and sorts every due row:\n%s", c.name, text)
		}
	}

	// And it claims the soonest due, leaving the defaults to the batch's
	// other writes.
	evs, err := s.ClaimEvents(ctx, "owner", now, until, 3)
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

// A claim on PostgreSQL is sent with its settings in one round trip, as one
// implicit transaction: the settings hold for the claim and end with it, on
// the connection the next statement gets (the pool's only one here).
func TestPostgresClaimSettingsEndWithClaim(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, sqltest.Postgres(t), WithMaxConns(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	settings := func(pinPlan bool) string {
		var sort, bitmap string
		err := s.claimRows(ctx, pinPlan, func(rows rowIter) error {
			defer rows.Close()
			if !rows.Next() {
				return fmt.Errorf("no row: %v", rows.Err())
			}
			return rows.Scan(&sort, &bitmap)
		}, `SELECT current_setting('enable_sort'), current_setting('enable_bitmapscan')`)
		if err != nil {
			t.Fatal(err)
		}
		return sort + "/" + bitmap
	}
	if got := settings(true); got != "off/off" {
		t.Errorf("a pinned claim ran with enable_sort/enable_bitmapscan %s; want off/off", got)
	}
	if got := settings(false); got != "on/on" {
		t.Errorf("a claim after a pinned one ran with %s; want on/on", got)
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

	conn := preparedGeneric(t, s, "record_attempt", "text, text, text, integer, timestamptz, text, integer, timestamptz, integer, bigint, text, text", s.q.pgRecordAttempt)
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
	if _, err := s.writer().ExecContext(ctx, `INSERT INTO payouts (`+payoutCols+`)
		SELECT 'ws', 'po-' || i, 'submitted', 100, 'USDT', 'TRON', 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t', 'payer-' || i, '', '', now(), now()
		FROM generate_series(1, $1::integer) AS i`, n); err != nil {
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
	events, err := s.ClaimEvents(ctx, "owner", now, now.Add(time.Minute), n)
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
	s, err := Open(t.Context(), sqltest.Postgres(t))
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
