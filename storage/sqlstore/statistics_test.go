package sqlstore

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit/storage/sqlstore/sqltest"
)

// A look-up of a payout prepared while the table was empty (a new database)
// stays a look-up by its id once the table has grown. Without statistics,
// PostgreSQL's cached generic plan for it walks a listing index of the whole
// workspace, and keeps doing so until the table is analyzed; the store
// analyzes its growing tables itself.
func TestPostgresAnalyzesGrowingTables(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, sqltest.Postgres(t), func(c *config) { c.statisticsInterval = 20 * time.Millisecond })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.writer().ExecContext(ctx, `INSERT INTO workspaces (id, name, webhook_url, webhook_secret, created_at) VALUES ('ws', 'Test', '', 'whsec_x', now())`); err != nil {
		t.Fatal(err)
	}

	// One connection, as a pooled one of the store's would run the look-up.
	conn, err := s.w.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		`SET plan_cache_mode = force_generic_plan`,
		`PREPARE payout_lookup (text, text) AS ` + selectPayoutSQL,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DEALLOCATE payout_lookup; RESET plan_cache_mode`)
	plan(t, conn) // planned and cached while the table is empty

	if _, err := conn.ExecContext(ctx, `INSERT INTO payouts (`+payoutCols+`)
		SELECT 'ws', 'po-' || i, 'submitted', 100, 'USDT', 'TRON', 'T', 'payer-' || i % 50, '', '', now(), now()
		FROM generate_series(1, 5000) AS i`); err != nil {
		t.Fatal(err)
	}
	// Report the inserts to the statistics now rather than when this
	// session next idles (PostgreSQL 15 and later).
	_, _ = conn.ExecContext(ctx, `SELECT pg_stat_force_next_flush()`)

	deadline := time.Now().Add(30 * time.Second)
	for {
		text := plan(t, conn)
		if strings.Contains(text, "Index Scan using payouts_payout_id on payouts") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the look-up of a payout still does not use its id's index once the table grew:\n%s", text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// plan returns the plan conn's prepared payout_lookup runs with.
func plan(t *testing.T, conn *sql.Conn) string {
	t.Helper()
	rows, err := conn.QueryContext(t.Context(), `EXPLAIN EXECUTE payout_lookup ('ws', 'po-1')`)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := collect(rows, func(sc scanner) (string, error) {
		var line string
		err := sc.Scan(&line)
		return line, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
