package postgres

import (
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
	"github.com/shopspring/decimal"
	_ "modernc.org/sqlite" // a database/sql driver other than pgx's, for TestGroupedReadsOtherDriver
)

// holdLane takes all of g's lanes, as groups in flight would, so that the
// reads started meanwhile queue; release hands the lanes on, and the queued
// reads go as one group.
func holdLane(g *readGroups) (release func()) {
	g.mu.Lock()
	held := g.lanes - g.running
	g.running = g.lanes
	g.mu.Unlock()
	return func() {
		for range held {
			g.handOn([]*groupedRead{{}})
		}
	}
}

// waitQueued waits until n reads are queued in g.
func waitQueued(g *readGroups, n int) {
	for {
		g.mu.Lock()
		queued := len(g.queue)
		g.mu.Unlock()
		if queued >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Reads sent together each get their own answer, whatever the others'
// answers: a row, no row, or an error. PostgreSQL skips the rest of a
// pipeline after a statement fails, so the reads after the failing one
// are sent again alone, and answered right.
func TestPostgresGroupedReadsAnswerEach(t *testing.T) {
	s := openPostgresWorkspace(t, "")
	g := s.d.reads
	release := holdLane(g)
	const n = 40
	got := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			switch i {
			case 10: // fails, aborting the pipeline's rest
				errs[i] = g.row(`SELECT 1 / $1::int`, []any{0}).Scan(&got[i])
			case 20:
				errs[i] = g.row(`SELECT 1 WHERE false`, nil).Scan(&got[i])
			default:
				errs[i] = g.row(`SELECT $1::int * 2`, []any{i}).Scan(&got[i])
			}
		})
	}
	waitQueued(g, n)
	release()
	wg.Wait()
	for i := range n {
		switch i {
		case 10:
			var pgErr *pgconn.PgError
			if !errors.As(errs[i], &pgErr) || pgErr.Code != "22012" {
				t.Errorf("read %d: err %v, want division by zero (22012)", i, errs[i])
			}
		case 20:
			if !errors.Is(errs[i], sql.ErrNoRows) {
				t.Errorf("read %d: err %v, want sql.ErrNoRows", i, errs[i])
			}
		default:
			if errs[i] != nil || got[i] != 2*i {
				t.Errorf("read %d: %d, %v; want %d", i, got[i], errs[i], 2*i)
			}
		}
	}
	if groups, reads := g.groups.Load(), g.grouped.Load(); groups != 1 || reads != n {
		t.Errorf("%d reads in %d groups; want %d in 1", reads, groups, n)
	}
}

// While reads are few they go side by side, each alone, as through a pool
// of connections: grouping them would make each wait for the others'
// round trips. Three slow reads at once are all in flight together.
func TestPostgresFewReadsGoSideBySide(t *testing.T) {
	s := openPostgresWorkspace(t, "")
	g := s.d.reads
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			var one int
			if err := g.row(`SELECT 1 FROM pg_sleep(0.5)`, nil).Scan(&one); err != nil || one != 1 {
				t.Errorf("slow read: %d, %v", one, err)
			}
		})
	}
	most := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && most < 3; {
		g.mu.Lock()
		most = max(most, g.running)
		g.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	if most < 3 {
		t.Errorf("at most %d of 3 reads were in flight at once; want all 3", most)
	}
	if groups := g.groups.Load(); groups != 0 {
		t.Errorf("%d groups sent; want none while reads are few", groups)
	}
}

// The store's reads answer the same grouped as alone: every column type
// of a payout (settlement decimals, times), an order, a key, a balance and
// a workspace scans through pgx's batch as through database/sql.
func TestPostgresGroupedReadsMatchAlone(t *testing.T) {
	e := newBatchEnvAt(t, pgtest.Postgres(t), 1000_00)
	s, ctx := e.s, t.Context()
	p, ev := e.payout(e.ws, "po-settled", 12_34)
	if _, _, err := s.CreatePayout(ctx, p, ev, payoutkit.Lease{}); err != nil {
		t.Fatal(err)
	}
	p.Status, p.TxID, p.UpdatedAt = payoutkit.PayoutCompleted, "0xabc", p.UpdatedAt.Add(time.Second)
	p.AssetAmount = decimal.NewNullDecimal(decimal.RequireFromString("12.340000"))
	p.NetworkFee = decimal.NewNullDecimal(decimal.RequireFromString("0.000017"))
	_, done := e.payout(e.ws, "po-settled", 0)
	done.Type, done.Subject = payoutkit.EventPayoutCompleted, "payout:po-settled"
	if err := s.SettlePayout(ctx, p, done); err != nil {
		t.Fatal(err)
	}
	keys, err := s.APIKeys(ctx, e.ws)
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys: %v, %v", keys, err)
	}
	type answers struct {
		Payout, Missing payoutkit.Payout
		MissingErr      bool
		Order           payoutkit.Order
		Key             payoutkit.APIKey
		KeyBalanceKey   payoutkit.APIKey
		KeyBalance      payoutkit.Balance
		Balance         payoutkit.Balance
		Workspace       payoutkit.Workspace
	}
	// read makes the reads at once, each on its own goroutine.
	read := func() (a answers, errs []error) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		// each makes one read on a goroutine of its own, keeping its error.
		each := func(read func() error) {
			wg.Go(func() {
				if err := read(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		each(func() (err error) { a.Payout, err = s.Payout(ctx, e.ws, "po-settled"); return })
		each(func() error {
			var err error
			a.Missing, err = s.Payout(ctx, e.ws, "po-none")
			a.MissingErr = errors.Is(err, payoutkit.ErrNotFound)
			return nil
		})
		each(func() (err error) { a.Order, err = s.Order(ctx, e.ws, "fund"); return })
		each(func() (err error) { a.Key, err = s.APIKey(ctx, keys[0].Prefix); return })
		each(func() (err error) {
			a.KeyBalanceKey, a.KeyBalance, err = s.APIKeyBalance(ctx, keys[0].Prefix)
			return
		})
		each(func() (err error) { a.Balance, err = s.Balance(ctx, e.ws); return })
		each(func() (err error) { a.Workspace, err = s.Workspace(ctx, e.ws); return })
		wg.Wait()
		return a, errs
	}

	// Alone: one at a time, each a plain database/sql read.
	s.d.reads.lanes = 100
	before := s.d.reads.groups.Load()
	alone, errs := read()
	if len(errs) > 0 || s.d.reads.groups.Load() != before {
		t.Fatalf("alone: %v, %d groups", errs, s.d.reads.groups.Load()-before)
	}
	// Grouped: all queued behind the held lanes.
	s.d.reads.lanes = readLanes
	release := holdLane(s.d.reads)
	var grouped answers
	var wg sync.WaitGroup
	wg.Go(func() { grouped, errs = read() })
	waitQueued(s.d.reads, 7)
	release()
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("grouped: %v", errs)
	}
	if got := s.d.reads.groups.Load() - before; got != 1 {
		t.Fatalf("%d groups sent; want the 7 reads in 1", got)
	}
	if diff := cmp.Diff(alone, grouped); diff != "" {
		t.Errorf("grouped reads differ from reads alone (-alone +grouped):\n%s", diff)
	}
	if !grouped.MissingErr || grouped.Payout.AssetAmount.Decimal.String() != "12.34" || grouped.Balance.Available != 1000_00-12_34 {
		t.Errorf("grouped answers are wrong: %+v", grouped)
	}
}

// A database/sql handle of another driver (a caller's, through New) has
// its reads sent one by one, still answered.
func TestGroupedReadsOtherDriver(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g := newReadGroups(db, 1)
	release := holdLane(g)
	var wg sync.WaitGroup
	got := make([]int, 8)
	for i := range got {
		wg.Go(func() {
			if err := g.row(`SELECT ? * 2`, []any{i}).Scan(&got[i]); err != nil {
				t.Errorf("read %d: %v", i, err)
			}
		})
	}
	waitQueued(g, len(got))
	release()
	wg.Wait()
	for i, v := range got {
		if v != 2*i {
			t.Errorf("read %d: %d, want %d", i, v, 2*i)
		}
	}
	if !g.ungrouped.Load() {
		t.Fatal("reads of a driver that is not pgx's were not marked ungrouped")
	}
	// From then on reads do not queue: they run side by side in the
	// driver's pool, even with every lane taken.
	holdLane(g)
	var v int
	if err := g.row(`SELECT 21 * 2`, nil).Scan(&v); err != nil || v != 42 {
		t.Errorf("a read once ungrouped: %d, %v; want 42", v, err)
	}
}
