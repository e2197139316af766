package sqltest

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// Orphaning is what the Orphans test needs of one package's store beyond
// DB's Exec and TS.
type Orphaning[S payoutkit.Store] struct {
	// Orphans is the store's Orphans.
	Orphans func(ctx context.Context, s S) ([]sqlcore.OrphanCount, error)
	// Query runs a read on s.
	Query func(ctx context.Context, s S, query string) (*sql.Rows, error)
	// ForeignKeysSQL lists every foreign key of the schema as (table,
	// column, parent table, parent column).
	ForeignKeysSQL string
	// WorkspaceTablesSQL lists every table that has a workspace_id column.
	WorkspaceTablesSQL string
	// Unchecked runs a write with the foreign keys off, where a test can
	// turn them off (SQLite, on a connection of its own); nil where it
	// cannot.
	Unchecked func(ctx context.Context, s S, query string, args ...any) error
}

// orphanRow makes the statement that inserts a row of one relation's table
// naming parent in the relation's column, its other parents valid; n makes
// its own keys unique.
type orphanRow func(ts func(time.Time) any, n int, parent any) (string, []any)

// orphanRows are the rows of every relation a store's Orphans checks, by
// table and column. A relation's parent is a value of validParents or of
// missingParents.
var orphanRows = map[string]orphanRow{
	"balances.workspace_id": func(_ func(time.Time) any, _ int, ws any) (string, []any) {
		return `INSERT INTO balances (workspace_id) VALUES ($1)`, []any{ws}
	},
	"staff_users.workspace_id": func(ts func(time.Time) any, n int, ws any) (string, []any) {
		return `INSERT INTO staff_users (email, workspace_id, password_hash, created_at) VALUES ($1, $2, 'hash', $3)`,
			[]any{fmt.Sprintf("user%d@orphans.example", n), ws, ts(orphansAt)}
	},
	"api_keys.workspace_id": func(ts func(time.Time) any, n int, ws any) (string, []any) {
		return `INSERT INTO api_keys (prefix, workspace_id, hash, created_at) VALUES ($1, $2, $3, $4)`,
			[]any{fmt.Sprintf("key%05d", n), ws, hash32(n), ts(orphansAt)}
	},
	"payouts.workspace_id": func(ts func(time.Time) any, n int, ws any) (string, []any) {
		return `INSERT INTO payouts (workspace_id, payout_id, status, amount, asset, network, address, payer_id, created_at, updated_at)
			VALUES ($1, $2, 'completed', 1, 'USDT', 'TRON', 'T...', 'alice', $3, $3)`, []any{ws, fmt.Sprintf("po-%d", n), ts(orphansAt)}
	},
	"orders.workspace_id": func(ts func(time.Time) any, n int, ws any) (string, []any) {
		return `INSERT INTO orders (workspace_id, order_id, status, amount, created_at, updated_at) VALUES ($1, $2, 'pending', 1, $3, $3)`,
			[]any{ws, fmt.Sprintf("o-%d", n), ts(orphansAt)}
	},
	"ledger_entries.workspace_id": func(ts func(time.Time) any, n int, ws any) (string, []any) {
		return `INSERT INTO ledger_entries (workspace_id, kind, amount, ref, event_id, created_at) VALUES ($1, 'order_credit', 1, $2, 'evt', $3)`,
			[]any{ws, fmt.Sprintf("o-%d", n), ts(orphansAt)}
	},
	"events.workspace_id": func(ts func(time.Time) any, n int, ws any) (string, []any) {
		return `INSERT INTO events (id, workspace_id, type, subject, created_at, body, state) VALUES ($1, $2, 'order.paid', 'o', $3, $4, 'failed')`,
			[]any{fmt.Sprintf("evt_%d", n), ws, ts(orphansAt), []byte("{}")}
	},
	"customers.workspace_id": func(ts func(time.Time) any, n int, ws any) (string, []any) {
		return `INSERT INTO customers (workspace_id, payer_id, first_seen_at) VALUES ($1, $2, $3)`,
			[]any{ws, fmt.Sprintf("payer-%d", n), ts(orphansAt)}
	},
	"payout_days.workspace_id": func(_ func(time.Time) any, n int, ws any) (string, []any) {
		return `INSERT INTO payout_days (workspace_id, day) VALUES ($1, $2)`, []any{ws, int64(n)}
	},
	"staff_sessions.workspace_id": func(ts func(time.Time) any, n int, ws any) (string, []any) {
		return `INSERT INTO staff_sessions (token_hash, workspace_id, staff_email, created_at, last_seen_at) VALUES ($1, $2, $3, $4, $4)`,
			[]any{hash32(n), ws, validParents["staff_users"], ts(orphansAt)}
	},
	"payout_policies.workspace_id": func(_ func(time.Time) any, _ int, ws any) (string, []any) {
		return `INSERT INTO payout_policies (workspace_id, address_allowlist, cooling_off) VALUES ($1, false, 0)`, []any{ws}
	},
	"address_book.workspace_id": func(ts func(time.Time) any, n int, ws any) (string, []any) {
		return `INSERT INTO address_book (workspace_id, network, address, address_key, label, added_at, usable_from) VALUES ($1, 'TRON', $2, $2, '', $3, $3)`,
			[]any{ws, fmt.Sprintf("T%d", n), ts(orphansAt)}
	},
	"security_log.workspace_id": func(ts func(time.Time) any, _ int, ws any) (string, []any) {
		return `INSERT INTO security_log (workspace_id, at, action, actor, client_addr, details) VALUES ($1, $2, 'test', 'test', '', '')`,
			[]any{ws, ts(orphansAt)}
	},
	"delivery_attempts.event_id": func(ts func(time.Time) any, _ int, event any) (string, []any) {
		return `INSERT INTO delivery_attempts (event_id, attempt, attempted_at, status_code, latency_ns, error_message, response_head)
			VALUES ($1, 1, $2, 500, 1, '', '')`, []any{event, ts(orphansAt)}
	},
	"staff_sessions.staff_email": func(ts func(time.Time) any, n int, email any) (string, []any) {
		return `INSERT INTO staff_sessions (token_hash, workspace_id, staff_email, created_at, last_seen_at) VALUES ($1, $2, $3, $4, $4)`,
			[]any{hash32(n), validParents["workspaces"], email, ts(orphansAt)}
	},
	"staff_recovery_codes.staff_email": func(_ func(time.Time) any, n int, email any) (string, []any) {
		return `INSERT INTO staff_recovery_codes (staff_email, code_hash) VALUES ($1, $2)`, []any{email, hash32(n)}
	},
	"payout_batches.workspace_id": func(ts func(time.Time) any, n int, ws any) (string, []any) {
		return `INSERT INTO payout_batches (workspace_id, batch_id, created_at, all_or_nothing, accepted, refused, accepted_amount, items)
			VALUES ($1, $2, $3, false, 0, 0, 0, $4)`, []any{ws, fmt.Sprintf("b-%d", n), ts(orphansAt), []byte("[]")}
	},
	// PostgreSQL's hand-off queue: its parent is an offset from the last
	// payout's seq, 0 (that payout) or far past it (none).
	"payout_handoffs.seq": func(_ func(time.Time) any, _ int, offset any) (string, []any) {
		return `INSERT INTO payout_handoffs (seq) SELECT MAX(seq) + $1 FROM payouts`, []any{offset}
	},
}

// validParents are rows the Orphans test writes first, by table;
// missingParents name none.
var (
	validParents   = map[string]any{"workspaces": "ws_orphans", "events": "evt_orphans", "staff_users": "staff@orphans.example", "payouts": int64(0)}
	missingParents = map[string]any{"workspaces": "ws_gone", "events": "evt_gone", "staff_users": "gone@orphans.example", "payouts": int64(1) << 40}
)

var orphansAt = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func hash32(n int) []byte {
	b := make([]byte, 32)
	copy(b, fmt.Sprint(n))
	return b
}

// Orphans checks s's Orphans, on an empty database s: that it checks every
// table with a workspace_id column and every foreign key of the schema;
// that it counts none while every row's parent exists; and that it counts
// each orphan planted, one per relation. Where a foreign key holds, the
// database must refuse the orphan; the test then plants it with the keys
// off (o.Unchecked), or, where it cannot turn them off, expects none. It
// returns the relations that no foreign key guards, as "table.column".
func Orphans[S payoutkit.Store](t *testing.T, s S, db DB[S], o Orphaning[S]) (unkeyed []string) {
	ctx := t.Context()
	ts := func(at time.Time) any { return db.TS(s, at) }
	exec := func(query string, args ...any) {
		t.Helper()
		if err := db.Exec(ctx, s, query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	orphans := func() []sqlcore.OrphanCount {
		t.Helper()
		got, err := o.Orphans(ctx, s)
		if err != nil {
			t.Fatalf("orphans: %v", err)
		}
		return got
	}
	strs := func(query string) [][]string {
		t.Helper()
		rows, err := o.Query(ctx, s, query)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		var out [][]string
		for rows.Next() {
			row := make([]string, len(cols))
			dest := make([]any, len(cols))
			for i := range row {
				dest[i] = &row[i]
			}
			if err := rows.Scan(dest...); err != nil {
				t.Fatal(err)
			}
			out = append(out, row)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	key := func(c sqlcore.OrphanCount) string { return c.Table + "." + c.Column }

	// What the store checks: every relation of the schema.
	clean := orphans()
	checked := map[string]string{} // table.column: parent table.column
	for _, c := range clean {
		if c.Count != 0 {
			t.Errorf("empty database: %d orphans of %s", c.Count, key(c))
		}
		if _, ok := orphanRows[key(c)]; !ok {
			t.Fatalf("the test has no row for %s; add it to orphanRows", key(c))
		}
		checked[key(c)] = c.Parent
	}
	for _, row := range strs(o.WorkspaceTablesSQL) {
		if checked[row[0]+".workspace_id"] != "workspaces.id" {
			t.Errorf("table %s has a workspace_id, and Orphans does not check it (checks %v)", row[0], checked)
		}
	}
	keyed := map[string]bool{}
	for _, row := range strs(o.ForeignKeysSQL) {
		k := row[0] + "." + row[1]
		if checked[k] != row[2]+"."+row[3] {
			t.Errorf("the foreign key %s → %s.%s is not among the relations Orphans checks (%v)", k, row[2], row[3], checked)
		}
		keyed[k] = true
	}
	for _, c := range clean {
		if !keyed[key(c)] {
			unkeyed = append(unkeyed, key(c))
		}
	}
	slices.Sort(unkeyed)

	// Every relation with a row whose parent exists: none is an orphan.
	exec(`INSERT INTO workspaces (id, name, webhook_secret, created_at) VALUES ($1, 'Orphans', 'secret', $2)`, validParents["workspaces"], ts(orphansAt))
	exec(`INSERT INTO staff_users (email, workspace_id, password_hash, created_at) VALUES ($1, $2, 'hash', $3)`,
		validParents["staff_users"], validParents["workspaces"], ts(orphansAt))
	exec(`INSERT INTO events (id, workspace_id, type, subject, created_at, body, state) VALUES ($1, $2, 'order.paid', 'o', $3, $4, 'failed')`,
		validParents["events"], validParents["workspaces"], ts(orphansAt), []byte("{}"))
	exec(`INSERT INTO payouts (workspace_id, payout_id, status, amount, asset, network, address, payer_id, created_at, updated_at)
		VALUES ($1, 'po-parent', 'completed', 1, 'USDT', 'TRON', 'T...', 'alice', $2, $2)`, validParents["workspaces"], ts(orphansAt))
	n := 0
	for _, c := range clean {
		n++
		query, args := orphanRows[key(c)](ts, n, validParents[tableOf(c.Parent)])
		exec(query, args...)
	}
	for _, c := range orphans() {
		if c.Count != 0 {
			t.Errorf("every parent there: %d orphans of %s", c.Count, key(c))
		}
	}

	// One orphan of each relation, where the database takes it.
	want := map[string]int64{}
	for _, c := range clean {
		n++
		query, args := orphanRows[key(c)](ts, n, missingParents[tableOf(c.Parent)])
		err := db.Exec(ctx, s, query, args...)
		switch {
		case keyed[key(c)] && err == nil:
			t.Errorf("%s: the foreign key took an orphan", key(c))
			want[key(c)] = 1
		case keyed[key(c)] && o.Unchecked != nil:
			if err := o.Unchecked(ctx, s, query, args...); err != nil {
				t.Fatalf("%s with the foreign keys off: %v", key(c), err)
			}
			want[key(c)] = 1
		case keyed[key(c)]:
			t.Logf("%s: the foreign key refuses an orphan (%v)", key(c), err)
		case err != nil:
			t.Fatalf("%s, with no foreign key: %v", key(c), err)
		default:
			want[key(c)] = 1
		}
	}
	planted := 0
	for _, c := range orphans() {
		if c.Count != want[key(c)] {
			t.Errorf("%s: %d orphans; want %d", key(c), c.Count, want[key(c)])
		}
		planted += int(c.Count)
	}
	if planted == 0 {
		t.Fatal("no orphan planted")
	}
	t.Logf("%d orphans planted and found, of %d relations; no foreign key guards %v", planted, len(clean), unkeyed)
	return unkeyed
}

// tableOf is the table of a "table.column".
func tableOf(tableColumn string) string {
	table, _, _ := strings.Cut(tableColumn, ".")
	return table
}
