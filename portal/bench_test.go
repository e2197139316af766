package portal_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/portal"
	"github.com/payoutkit/payoutkit/staff"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// benchPayouts is the size of the workspace the page benchmarks read.
const benchPayouts = 1_000_000

var benchDir string

// benchNow is the clock of the million-payout fixture: its payouts are
// created one a second from 2026-01-01, so the last is on 2026-01-12.
var benchNow = time.Date(2026, 1, 20, 12, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// bigWorkspace is a SQLite database holding one workspace with a million
// payouts (a tenth failed, a tenth completed, 10,000 payers), built once per
// process with one INSERT … SELECT (and its day counters with another), since a million engine calls would
// take minutes. The rows are what the engine would write; the balance is
// not derived from them, which the pages read here do not need.
var bigWorkspace = sync.OnceValues(func() (fixture, error) {
	dir, err := os.MkdirTemp("", "payoutkit-portal-bench-")
	if err != nil {
		return fixture{}, err
	}
	benchDir = dir
	ctx := context.Background()
	path := filepath.Join(dir, "big.db")
	store, err := sqlite.Open(ctx, path, sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return fixture{}, err
	}
	// The engine's clock stands a few days after the last payout, so that
	// the dashboard's chart of the last 30 days counts every one of them.
	engine, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Logger: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return benchNow }})
	if err != nil {
		return fixture{}, err
	}
	nw, err := engine.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Big"})
	if err != nil {
		return fixture{}, err
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return fixture{}, err
	}
	defer db.Close()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	if _, err := db.ExecContext(ctx, `INSERT INTO payouts
		(workspace_id, payout_id, status, amount, asset, network, address, payer_id, txid, failure_reason, created_at, updated_at)
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $2)
		SELECT $1, 'po-' || i, CASE i % 10 WHEN 0 THEN 'failed' WHEN 1 THEN 'completed' ELSE 'submitted' END,
			100 + i % 5000, 'USDT', 'TRON', 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t', 'payer-' || (i % 10000),
			CASE i % 10 WHEN 1 THEN 'tx-' || i ELSE '' END, CASE i % 10 WHEN 0 THEN 'bounced' ELSE '' END,
			$3 + i * 1000000, $3 + i * 1000000
		FROM n`, nw.Workspace.ID, benchPayouts, start); err != nil {
		return fixture{}, err
	}
	// The day counters that the engine's creates and settlements keep, as
	// migration 0012 fills them.
	if _, err := db.ExecContext(ctx, `INSERT INTO payout_days (workspace_id, day, submitted, completed, failed)
		SELECT workspace_id, created_at / 86400000000,
			sum(status = 'submitted'), sum(status = 'completed'), sum(status = 'failed')
		FROM payouts GROUP BY workspace_id, created_at / 86400000000`); err != nil {
		return fixture{}, err
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO customers (workspace_id, payer_id, paid_in, paid_out, in_progress, first_seen_at)
		SELECT workspace_id, payer_id, 0,
			SUM(CASE status WHEN 'completed' THEN amount ELSE 0 END), SUM(CASE status WHEN 'submitted' THEN amount ELSE 0 END), MIN(created_at)
		FROM payouts WHERE workspace_id = $1 GROUP BY payer_id ORDER BY MIN(seq)`, nw.Workspace.ID); err != nil {
		return fixture{}, err
	}
	if _, err := db.ExecContext(ctx, `ANALYZE`); err != nil {
		return fixture{}, err
	}
	team, err := staff.New(store, &staff.Config{PasswordCost: bcrypt.MinCost, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fixture{}, err
	}
	st, err := team.SignIn(ctx, nw.StaffEmail, nw.StaffPassword, "")
	if err != nil {
		return fixture{}, err
	}
	return fixture{
		handler: portal.New(engine, team, portal.Options{Logger: slog.New(slog.DiscardHandler)}),
		cookie:  &http.Cookie{Name: portal.SessionCookie, Value: st.Session.Token},
		engine:  engine,
		store:   store,
		ws:      nw.Workspace.ID,
	}, nil
})

type fixture struct {
	handler http.Handler
	cookie  *http.Cookie
	engine  *payoutkit.Engine
	store   payoutkit.Store
	ws      string
}

// midCursor returns the cursor of the page after the newest skip payouts
// that match req, reached as a client reaches it: page by page, from the
// first, since only the engine seals cursors.
func (fx fixture) midCursor(ctx context.Context, req payoutkit.ListPayoutsRequest, skip int) (string, error) {
	req.Limit = payoutkit.MaxListLimit
	for skipped := 0; skipped < skip; {
		l, err := fx.engine.ListPayouts(ctx, fx.ws, req)
		if err != nil {
			return "", err
		}
		if l.NextCursor == "" {
			return "", fmt.Errorf("the listing ended after %d payouts", skipped+len(l.Items))
		}
		skipped += len(l.Items)
		req.Cursor = l.NextCursor
	}
	return req.Cursor, nil
}

// BenchmarkPageMillionPayouts renders portal pages of 50 rows server-side
// (session check, reads, template) in a workspace of a million payouts.
func BenchmarkPageMillionPayouts(b *testing.B) {
	fx, err := bigWorkspace()
	if err != nil {
		b.Fatal(err)
	}
	// The middle of the listing, and the middle of its completed payouts
	// (a tenth of them).
	middle, err := fx.midCursor(b.Context(), payoutkit.ListPayoutsRequest{}, benchPayouts/2)
	if err != nil {
		b.Fatal(err)
	}
	completedMiddle, err := fx.midCursor(b.Context(), payoutkit.ListPayoutsRequest{Status: payoutkit.PayoutCompleted}, benchPayouts/20)
	if err != nil {
		b.Fatal(err)
	}
	for _, page := range []struct{ name, path string }{
		{"/withdrawals", "/withdrawals"},
		{"/withdrawals?cursor=middle", "/withdrawals?cursor=" + middle},
		{"/withdrawals?status=failed", "/withdrawals?status=failed"},
		{"/withdrawals?status=completed&cursor=middle", "/withdrawals?status=completed&cursor=" + completedMiddle},
		{"/withdrawals?q=payer-4242", "/withdrawals?q=payer-4242"},
		{"/withdrawals?q=po-777777", "/withdrawals?q=po-777777"},
		{"/withdrawals/po-123456", "/withdrawals/po-123456"},
		{"/customers", "/customers"},
		{"/", "/"},
	} {
		path := page.path
		b.Run(page.name, func(b *testing.B) {
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.AddCookie(fx.cookie)
				rec := httptest.NewRecorder()
				fx.handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("GET %s: %d", path, rec.Code)
				}
			}
		})
	}
}

// TestMillionPayoutsPageRows checks what the benchmark renders: full pages
// of the right rows, so the figure is for the real work.
func TestMillionPayoutsPageRows(t *testing.T) {
	if testing.Short() || os.Getenv("PAYOUTKIT_BENCH_FIXTURE") == "" {
		t.Skip("set PAYOUTKIT_BENCH_FIXTURE=1 to build the million-payout fixture (about a minute)")
	}
	fx, err := bigWorkspace()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"/withdrawals": 50, "/withdrawals?status=failed": 50, "/withdrawals?q=payer-4242": 50, "/withdrawals?q=po-777777": 1} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.AddCookie(fx.cookie)
		rec := httptest.NewRecorder()
		fx.handler.ServeHTTP(rec, req)
		if got := len(rowIDs(rec.Body.String())); rec.Code != http.StatusOK || got != want {
			t.Errorf("GET %s: %d with %d rows; want %d", path, rec.Code, got, want)
		}
	}
	days, err := fx.engine.PayoutsPerDay(t.Context(), fx.ws, 30)
	if n := total(days); err != nil || n != benchPayouts {
		t.Errorf("the chart's 30 days count %d payouts (%v); want %d", n, err, benchPayouts)
	}
}
