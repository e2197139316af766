package sqlite

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// The settings the store's guarantees rest on are in force on every
// connection it opens.
func TestSQLitePragmas(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check := func(q sqlcore.Querier, pragma, want string) {
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
	if n := s.d.wdb.Stats().MaxOpenConnections; n != 1 {
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

// The listings and the outbox claim find their rows through the indexes
// meant for them, whatever the table's size: SQLite plans from the schema
// alone (there is no ANALYZE), so the plan seen here is the plan in use.
func TestSQLitePlans(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "plans.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	newest := func(table string, f sqlcore.NewestFilter, cursor string) string {
		q, _, err := sqlcore.NewestQuery(&s.ops, table, "*", "ws", f, payoutkit.PageRequest{Limit: 50, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, query, index string
	}{
		{"payouts", newest("payouts", sqlcore.NewestFilter{}, ""), "payouts_workspace_created"},
		{"payouts, next page", newest("payouts", sqlcore.NewestFilter{}, "1767225600000000.7"), "payouts_workspace_created"},
		{"payouts in a range", newest("payouts", sqlcore.NewestFilter{From: from, To: to}, "1767225600000000.7"), "payouts_workspace_created"},
		{"payouts by status", newest("payouts", sqlcore.NewestFilter{Status: "failed"}, "1767225600000000.7"), "payouts_workspace_status_created"},
		{"payouts by status in a range", newest("payouts", sqlcore.NewestFilter{Status: "failed", From: from}, ""), "payouts_workspace_status_created"},
		{"payouts by payer", newest("payouts", sqlcore.NewestFilter{PayerID: "p"}, "1767225600000000.7"), "payouts_workspace_payer_created"},
		{"payouts by payer and status", newest("payouts", sqlcore.NewestFilter{PayerID: "p", Status: "failed", To: to}, ""), "payouts_workspace_payer_created"},
		{"orders", newest("orders", sqlcore.NewestFilter{}, "1767225600000000.7"), "orders_workspace_created"},
		{"orders by status", newest("orders", sqlcore.NewestFilter{Status: "paid", From: from, To: to}, ""), "orders_workspace_status_created"},
		{"orders by payer", newest("orders", sqlcore.NewestFilter{PayerID: "p"}, "1767225600000000.7"), "orders_workspace_payer_created"},
		{"customers", sqlcore.CustomerPageSQL, "customers_workspace_seq"},
		{"subject events", sqlcore.SubjectEventsSQL, "events_subject"},
		// The due events, soonest first, and the probe for an earlier
		// pending event of the same subject.
		{"claim events", claimEventsSQL, "events_due"},
		{"claim events' subject probe", claimEventsSQL, "events_subject"},
		{"claim hand-offs", claimHandoffsSQL, "payouts_handoff_due"},
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
