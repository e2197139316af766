package postgres

import (
	"context"
	"database/sql"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// A look-up of a payout prepared while the table was empty (a new database)
// stays a look-up by its id once the table has grown. Without statistics,
// PostgreSQL's cached generic plan for it walks a listing index of the whole
// workspace, and keeps doing so until the table is analyzed; the store
// analyzes its growing tables itself.
func TestPostgresAnalyzesGrowingTables(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, pgtest.Postgres(t), func(c *config) { c.statisticsInterval = 20 * time.Millisecond })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.writer().ExecContext(ctx, `INSERT INTO workspaces (id, name, webhook_url, webhook_secret, created_at) VALUES ('ws', 'Test', '', 'whsec_x', now())`); err != nil {
		t.Fatal(err)
	}

	conn := preparedGeneric(t, s, "payout_lookup", "text, text", sqlcore.SelectPayoutSQL)
	cachedPlan(t, conn, "payout_lookup ('ws', 'po-1')") // planned and cached while the table is empty

	if _, err := conn.ExecContext(ctx, `INSERT INTO payouts (`+sqlcore.PayoutCols+`)
		SELECT 'ws', 'po-' || i, 'submitted', 100, 'USDT', 'TRON', 'T', 'payer-' || i % 50, '', '', now(), now()
		FROM generate_series(1, 5000) AS i`); err != nil {
		t.Fatal(err)
	}
	// Report the inserts to the statistics now rather than when this
	// session next idles (PostgreSQL 15 and later).
	_, _ = conn.ExecContext(ctx, `SELECT pg_stat_force_next_flush()`)

	deadline := time.Now().Add(30 * time.Second)
	for {
		text := cachedPlan(t, conn, "payout_lookup ('ws', 'po-1')")
		if strings.Contains(text, "Index Scan using payouts_payout_id on payouts") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the look-up of a payout still does not use its id's index once the table grew:\n%s", text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// preparedGeneric returns a connection of s's on which name is prepared as
// query (with params, the types of its parameters), PostgreSQL made to
// cache a generic plan at the first run rather than after a few, as it does
// on the store's pooled connections. The statement goes at the test's end.
func preparedGeneric(t *testing.T, s *Store, name, params, query string) *sql.Conn {
	t.Helper()
	ctx := t.Context()
	conn, err := s.d.sqldb.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.ExecContext(context.Background(), `DEALLOCATE `+name+`; RESET plan_cache_mode`)
		conn.Close()
	})
	for _, q := range []string{
		`SET plan_cache_mode = force_generic_plan`,
		`PREPARE ` + name + ` (` + params + `) AS ` + query,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// cachedPlan returns the plan that conn runs a prepared statement with:
// execute is its name and arguments, "name (arg, ...)".
func cachedPlan(t *testing.T, conn *sql.Conn, execute string) string {
	t.Helper()
	rows, err := conn.QueryContext(t.Context(), `EXPLAIN EXECUTE `+execute)
	if err != nil {
		t.Fatal(err)
	}
	return planText(t, rows)
}

// planText reads EXPLAIN's rows into one text.
func planText(t *testing.T, rows *sql.Rows) string {
	t.Helper()
	lines, err := sqlcore.Collect(rows, func(sc sqlcore.Scanner) (string, error) {
		var line string
		err := sc.Scan(&line)
		return line, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// A store whose role does not own the tables leaves their statistics
// alone: it never runs an ANALYZE that PostgreSQL would answer with a
// warning in its log at every check. The owner's store analyzes them.
func TestPostgresStatisticsOnlyForOwnedTables(t *testing.T) {
	ctx := t.Context()
	dsn := pgtest.Postgres(t)
	owner, err := Open(ctx, dsn, func(c *config) { c.statisticsInterval = 0 })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Close() })
	var schema string
	if err := owner.writer().QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	var mayCreateRoles bool
	if err := owner.writer().QueryRowContext(ctx, `SELECT rolcreaterole OR rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&mayCreateRoles); err != nil {
		t.Fatal(err)
	}
	if !mayCreateRoles {
		t.Skip("needs a PostgreSQL role that may create roles (CREATEROLE), to run a store as a role that does not own the tables")
	}
	role := schema + "_app" // unique per test, like the schema
	const password = "app"  // for servers that ask one (md5, scram)
	for _, q := range []string{
		`CREATE ROLE ` + role + ` LOGIN PASSWORD '` + password + `'`,
		`GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role,
		`GRANT ALL ON ALL TABLES IN SCHEMA ` + schema + ` TO ` + role,
		`GRANT ALL ON ALL SEQUENCES IN SCHEMA ` + schema + ` TO ` + role,
	} {
		if _, err := owner.writer().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		// Revoked one by one: DROP OWNED needs membership in the role,
		// which a CREATEROLE role does not have before PostgreSQL 16.
		_, err := owner.writer().ExecContext(context.Background(), `REVOKE ALL ON ALL TABLES IN SCHEMA `+schema+` FROM `+role+`;
			REVOKE ALL ON ALL SEQUENCES IN SCHEMA `+schema+` FROM `+role+`;
			REVOKE USAGE ON SCHEMA `+schema+` FROM `+role+`;
			DROP ROLE `+role)
		if err != nil {
			t.Errorf("dropping role %s: %v", role, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, password)
	app, err := Open(ctx, u.String(), func(c *config) { c.statisticsInterval = 0 })
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()

	if _, err := owner.writer().ExecContext(ctx, `INSERT INTO workspaces (id, name, webhook_url, webhook_secret, created_at) VALUES ('ws', 'Test', '', 'whsec_x', now());
		INSERT INTO payouts (`+sqlcore.PayoutCols+`)
		SELECT 'ws', 'po-' || i, 'submitted', 100, 'USDT', 'TRON', 'T', 'payer', '', '', now(), now() FROM generate_series(1, 2000) AS i;
		SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	analyzed := func() bool {
		t.Helper()
		var at sql.NullTime
		if err := owner.writer().QueryRowContext(ctx, `SELECT last_analyze FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = 'payouts'`).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at.Valid
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		tried, err := app.d.analyzeStale(ctx, false)
		if err != nil || len(tried) > 0 {
			t.Fatalf("the non-owner's store analyzed %v (%v); want none", tried, err)
		}
		done, err := owner.d.analyzeStale(ctx, false)
		if err != nil {
			t.Fatalf("the owner's check: %v", err)
		}
		if slices.Contains(done, "payouts") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the owner's store did not analyze the grown payouts")
		}
		time.Sleep(20 * time.Millisecond) // the statistics may come late
	}
	if !analyzed() {
		t.Fatal("payouts has no statistics after the owner's ANALYZE")
	}
}

// A look that the store's own writes triggered analyzes the growing tables
// that have never had statistics, without waiting for PostgreSQL's change
// counts to report them (they come up to a second late): a new database
// under load gets its plans mended within a look.
func TestPostgresAnalyzesNewTablesOnWrites(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, pgtest.Postgres(t), func(c *config) { c.statisticsInterval = 0 })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if done, err := s.d.analyzeStale(ctx, false); err != nil || len(done) != 0 {
		t.Fatalf("a new database without writes: analyzed %v (%v); want none", done, err)
	}
	done, err := s.d.analyzeStale(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(done, "payouts") || !slices.Contains(done, "events") {
		t.Fatalf("after the store's writes, analyzed %v; want the tables without statistics, payouts and events among them", done)
	}
	if done, err := s.d.analyzeStale(ctx, true); err != nil || len(done) != 0 {
		t.Fatalf("again: analyzed %v (%v); want none, each has statistics now", done, err)
	}
}
