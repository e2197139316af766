package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
)

// batchEnv is a SQLite store with a workspace funded with amount cents.
type batchEnv struct {
	t    *testing.T
	s    *Store
	path string
	ws   string
	seq  int
}

func newBatchEnv(t *testing.T, funds payoutkit.Amount) *batchEnv {
	t.Helper()
	return newBatchEnvAt(t, filepath.Join(t.TempDir(), "batch.db"), funds)
}

// newBatchEnvAt is newBatchEnv on the database of dsn.
func newBatchEnvAt(t *testing.T, dsn string, funds payoutkit.Amount) *batchEnv {
	t.Helper()
	path := dsn
	s, err := Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	eng, err := payoutkit.New(s, &payoutkit.Config{PasswordCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	nw, err := eng.CreateWorkspace(t.Context(), payoutkit.CreateWorkspaceRequest{Name: "Batch", WebhookURL: "https://hooks.example/payoutkit"})
	if err != nil {
		t.Fatal(err)
	}
	e := &batchEnv{t: t, s: s, path: path, ws: nw.Workspace.ID}
	if funds > 0 {
		if _, _, err := eng.CreateOrder(t.Context(), e.ws, payoutkit.CreateOrderRequest{OrderID: "fund", Amount: funds.String()}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.MarkOrderPaid(t.Context(), e.ws, "fund"); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// payout returns a payout and its event, as the engine would make them.
func (e *batchEnv) payout(ws, id string, amount payoutkit.Amount) (payoutkit.Payout, payoutkit.Event) {
	e.seq++
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).Add(time.Duration(e.seq) * time.Millisecond)
	p := payoutkit.Payout{
		WorkspaceID: ws, PayoutID: id, Status: payoutkit.PayoutSubmitted, Amount: amount,
		Asset: "USDT", Network: "TRON", Address: "T...", PayerID: "cust-1", CreatedAt: at, UpdatedAt: at,
	}
	ev := payoutkit.Event{
		ID: fmt.Sprintf("evt_batch%020d", e.seq), WorkspaceID: ws, Type: payoutkit.EventPayoutSubmitted,
		Subject: "payout:" + id, CreatedAt: at, Body: []byte(`{}`),
		EventDelivery: payoutkit.EventDelivery{State: payoutkit.DeliveryPending, NextAttemptAt: at},
	}
	return p, ev
}

func (e *batchEnv) audit() payoutkit.Audit {
	e.t.Helper()
	a, err := e.s.Audit(context.Background(), e.ws)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := a.Check(); err != nil {
		e.t.Fatal(err)
	}
	return a
}

// hold takes the writer connection, so that the committer blocks at its
// next BEGIN, and returns the function that gives it back.
func (e *batchEnv) hold() (release func()) {
	e.t.Helper()
	conn, err := e.s.d.wdb.Conn(e.t.Context())
	if err != nil {
		e.t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { conn.Close() }) }
	e.t.Cleanup(release)
	return release
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// One batch, built by hand, mixes successes, overdrafts, replays, a taken
// id with other values, an unknown workspace and a panic: each caller gets
// its own answer, and the successes are committed together.
func TestBatchMixedAnswers(t *testing.T) {
	testBatchMixedAnswers(t, newBatchEnv(t, 1000), false) // 10.00, each write in its savepoint
}

// As the store runs them, creates are refusal-safe and get no savepoint on
// SQLite: the unknown workspace's foreign key error may have rolled the
// transaction back, so every write runs again on its own, and each still
// gets its own answer.
func TestBatchMixedAnswersRefusalSafe(t *testing.T) {
	testBatchMixedAnswers(t, newBatchEnv(t, 1000), true)
}

// createCall is one create of a batch made by hand, and the answer it must
// get.
type createCall struct {
	name        string
	op          *createPayoutOp
	wantErr     error
	wantCreated bool
	wantAmount  payoutkit.Amount // of the payout returned
}

func (e *batchEnv) create(name, ws, id string, amount payoutkit.Amount, wantErr error, wantCreated bool, wantAmount payoutkit.Amount) createCall {
	p, ev := e.payout(ws, id, amount)
	return createCall{name, &createPayoutOp{s: e.s, p: p, ev: ev}, wantErr, wantCreated, wantAmount}
}

// request is c's write for the committer.
func (e *batchEnv) request(c createCall, refusalSafe bool) *txRequest {
	r := newTxRequest(c.op.run)
	r.Extra.refusalSafe = refusalSafe
	return r
}

// check reports a wrong answer to c's request r.
func (c createCall) check(t *testing.T, r *txRequest) {
	t.Helper()
	stored, created, err := c.op.result(t.Context(), <-r.Done())
	switch {
	case !errors.Is(err, c.wantErr) || (err != nil) != (c.wantErr != nil):
		t.Errorf("%s: err %v; want %v", c.name, err, c.wantErr)
	case created != c.wantCreated || stored.Amount != c.wantAmount:
		t.Errorf("%s: created %v, amount %v; want %v, %v", c.name, created, stored.Amount, c.wantCreated, c.wantAmount)
	}
}

// checkAllSpent checks that payouts took the 10.00 funded, no more, and
// that the refused ones left nothing behind.
func (e *batchEnv) checkAllSpent(refused ...string) {
	e.t.Helper()
	a := e.audit()
	if a.Available != 0 || a.InProgress != 1000 || a.SubmittedPayouts != 1000 {
		e.t.Fatalf("audit %+v; want available 0, in progress 10.00", a)
	}
	for _, id := range refused {
		if _, err := e.s.Payout(e.t.Context(), e.ws, id); !errors.Is(err, payoutkit.ErrNotFound) {
			e.t.Errorf("refused payout %s: %v; want ErrNotFound", id, err)
		}
	}
}

func testBatchMixedAnswers(t *testing.T, e *batchEnv, refusalSafe bool) {
	calls := []createCall{
		e.create("first", e.ws, "po-a", 600, nil, true, 600),
		e.create("overdraft", e.ws, "po-b", 600, payoutkit.ErrInsufficientBalance, false, 0),
		e.create("replay of first in the same batch", e.ws, "po-a", 600, nil, false, 600),
		e.create("taken id, other amount", e.ws, "po-a", 100, nil, false, 600),
		e.create("unknown workspace", "ws_nope", "po-x", 100, payoutkit.ErrNotFound, false, 0),
		e.create("exactly the rest", e.ws, "po-c", 400, nil, true, 400),
		e.create("overdraft at zero", e.ws, "po-d", 1, payoutkit.ErrInsufficientBalance, false, 0),
		e.create("overdrafted id retried", e.ws, "po-b", 600, payoutkit.ErrInsufficientBalance, false, 0),
	}
	var reqs []*txRequest
	for _, c := range calls {
		reqs = append(reqs, e.request(c, refusalSafe))
	}
	panicky := newTxRequest(func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE balances SET available = available + 100000 WHERE workspace_id = $1`, e.ws); err != nil {
			return err
		}
		panic("boom")
	})
	reqs = append(reqs[:3], append([]*txRequest{panicky}, reqs[3:]...)...)
	before := e.s.d.batch.Batches.Load()
	e.s.d.batch.run(reqs)
	if n := e.s.d.batch.Batches.Load() - before; n != 1 && !refusalSafe {
		t.Fatalf("%d transactions; want 1", n)
	}
	if err := <-panicky.Done(); err == nil {
		t.Error("the panicking write reported no error")
	}
	for i, c := range calls {
		r := reqs[i]
		if i >= 3 {
			r = reqs[i+1]
		}
		c.check(t, r)
	}
	e.checkAllSpent("po-b", "po-d")
}

// Many callers race for a balance that covers exactly n of them: exactly n
// are accepted, in fewer transactions than payouts.
func TestBatchConcurrentNoOverdraft(t *testing.T) {
	const callers, n = 200, 37
	e := newBatchEnv(t, n*100)
	release := e.hold() // let every caller queue up first
	b0, w0 := e.s.d.batch.Batches.Load(), e.s.d.batch.Writes.Load()
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted, refused := 0, 0
	ops := make([]*createPayoutOp, callers)
	for i := range callers {
		p, ev := e.payout(e.ws, fmt.Sprintf("po-%d", i), 100)
		ops[i] = &createPayoutOp{s: e.s, p: p, ev: ev}
	}
	for i := range callers {
		wg.Go(func() {
			_, created, err := e.s.CreatePayout(context.Background(), ops[i].p, ops[i].ev, payoutkit.Lease{})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && created:
				accepted++
			case errors.Is(err, payoutkit.ErrInsufficientBalance):
				refused++
			default:
				t.Errorf("payout %d: created %v, %v", i, created, err)
			}
		})
	}
	waitFor(t, "the callers to queue", func() bool { return e.s.d.batch.Queued() >= callers/2 })
	release()
	wg.Wait()
	if accepted != n || refused != callers-n {
		t.Fatalf("accepted %d, refused %d; want %d, %d", accepted, refused, n, callers-n)
	}
	a := e.audit()
	if a.Available != 0 || a.SubmittedPayouts != n*100 {
		t.Fatalf("audit %+v", a)
	}
	batches, writes := e.s.d.batch.Batches.Load()-b0, e.s.d.batch.Writes.Load()-w0
	t.Logf("%d writes in %d transactions", writes, batches)
	if writes != callers || batches >= writes/4 {
		t.Fatalf("%d writes in %d transactions; want %d writes in far fewer transactions", writes, batches, callers)
	}
}

// A failed COMMIT fails every write of the batch, whatever each would have
// answered, and leaves the money as it was; the store goes on working.
func TestBatchCommitFailure(t *testing.T) {
	e := newBatchEnv(t, 500)
	errCommit := errors.New("injected commit failure")
	fail := func(int) error { return errCommit }
	e.s.d.batch.BeforeCommit.Store(&fail)

	var ops []*createPayoutOp
	var reqs []*txRequest
	for _, c := range []struct {
		id     string
		amount payoutkit.Amount
	}{{"po-1", 200}, {"po-2", 900}, {"po-1", 200}, {"po-3", 300}} {
		p, ev := e.payout(e.ws, c.id, c.amount)
		op := &createPayoutOp{s: e.s, p: p, ev: ev}
		ops = append(ops, op)
		reqs = append(reqs, newTxRequest(op.run))
	}
	e.s.d.batch.run(reqs)
	for i, op := range ops {
		if _, _, err := op.result(t.Context(), <-reqs[i].Done()); !errors.Is(err, errCommit) {
			t.Errorf("write %d (%s): %v; want the commit's error", i, op.p.PayoutID, err)
		}
	}
	// The same through CreatePayout, from concurrent callers.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			p, ev := ops[0].p, ops[0].ev
			p.PayoutID, ev.ID = fmt.Sprintf("po-c%d", i), fmt.Sprintf("evt_c%d", i)
			if _, _, err := e.s.CreatePayout(context.Background(), p, ev, payoutkit.Lease{}); !errors.Is(err, errCommit) {
				t.Errorf("CreatePayout %d: %v; want the commit's error", i, err)
			}
		})
	}
	wg.Wait()
	a := e.audit()
	if a.Available != 500 || a.SubmittedPayouts != 0 {
		t.Fatalf("audit %+v; want nothing changed", a)
	}

	e.s.d.batch.BeforeCommit.Store(nil)
	for _, id := range []string{"po-1", "po-3"} {
		p, ev := e.payout(e.ws, id, 200)
		if _, created, err := e.s.CreatePayout(t.Context(), p, ev, payoutkit.Lease{}); err != nil || !created {
			t.Fatalf("after the failure, %s: created %v, %v", id, created, err)
		}
	}
	if a := e.audit(); a.Available != 100 {
		t.Fatalf("audit %+v; want available 1.00", a)
	}
}

// A caller that gives up before its write is taken into a batch gets its
// context's error and changes nothing; once taken, a write completes.
func TestBatchCancelledBeforePickup(t *testing.T) {
	e := newBatchEnv(t, 500)
	release := e.hold()
	b0 := e.s.d.batch.Batches.Load()
	first := make(chan error, 1)
	go func() {
		p, ev := e.payout(e.ws, "po-taken", 100)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			// cancelled once taken: it completes all the same
			for e.s.d.batch.Batches.Load() == b0 {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		_, _, err := e.s.CreatePayout(ctx, p, ev, payoutkit.Lease{})
		first <- err
	}()
	waitFor(t, "the first write to be taken", func() bool { return e.s.d.batch.Batches.Load() > b0 })

	p, ev := e.payout(e.ws, "po-dropped", 100)
	ctx, cancel := context.WithCancel(t.Context())
	second := make(chan error, 1)
	go func() {
		_, _, err := e.s.CreatePayout(ctx, p, ev, payoutkit.Lease{})
		second <- err
	}()
	waitFor(t, "the second write to queue", func() bool { return e.s.d.batch.Queued() == 1 })
	cancel()
	select {
	case err := <-second:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled write: %v; want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled write waited for the committer")
	}
	release()
	if err := <-first; err != nil {
		t.Fatalf("taken write: %v", err)
	}
	if _, err := e.s.Payout(t.Context(), e.ws, "po-taken"); err != nil {
		t.Fatalf("taken write: %v", err)
	}
	// The dropped one is skipped by the committer: still no such payout
	// after another write went through.
	p, ev = e.payout(e.ws, "po-after", 100)
	if _, _, err := e.s.CreatePayout(t.Context(), p, ev, payoutkit.Lease{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Payout(t.Context(), e.ws, "po-dropped"); !errors.Is(err, payoutkit.ErrNotFound) {
		t.Fatalf("dropped write: %v; want ErrNotFound", err)
	}
	if a := e.audit(); a.Available != 300 {
		t.Fatalf("audit %+v; want available 3.00", a)
	}
}

// Close with writes queued returns, answers every caller (committed or
// ErrClosed), leaves no goroutine behind and refuses later writes.
func TestBatchCloseWithQueuedWrites(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	e := newBatchEnv(t, 100000)
	release := e.hold()
	w0 := e.s.d.batch.Writes.Load()
	const callers = 50
	results := make(chan error, callers)
	for i := range callers {
		p, ev := e.payout(e.ws, fmt.Sprintf("po-%d", i), 1)
		go func() {
			_, _, err := e.s.CreatePayout(context.Background(), p, ev, payoutkit.Lease{})
			results <- err
		}()
	}
	waitFor(t, "the callers to queue", func() bool { // behind the batch blocked at BEGIN
		return e.s.d.batch.Queued()+int(e.s.d.batch.Writes.Load()-w0) == callers
	})
	closed := make(chan error, 1)
	go func() { closed <- e.s.Close() }()
	waitFor(t, "Close to stop submissions", func() bool {
		return e.s.d.batch.Closed()
	})
	release()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs")
	}
	committed := 0
	for range callers {
		switch err := <-results; {
		case err == nil:
			committed++
		case !errors.Is(err, ErrClosed):
			t.Errorf("queued write: %v; want nil or ErrClosed", err)
		}
	}
	p, ev := e.payout(e.ws, "po-late", 1)
	if _, _, err := e.s.CreatePayout(t.Context(), p, ev, payoutkit.Lease{}); !errors.Is(err, ErrClosed) || err.Error() != "sqlstore: store is closed" {
		t.Fatalf("write after Close: %v; want ErrClosed", err)
	}

	s, err := Open(t.Context(), e.path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e.s = s
	if a := e.audit(); a.SubmittedPayouts != payoutkit.Amount(committed) {
		t.Fatalf("%d writes acknowledged, audit %+v", committed, a)
	}
	t.Logf("%d of %d queued writes committed before Close", committed, callers)
	s.Close()
	waitFor(t, "goroutines to settle", func() bool { return runtime.NumGoroutine() <= goroutines })
}

// The delivery loops' claims share the batches too: a claim whose COMMIT
// fails reports the error and leases nothing, and a claim returns only
// rows that are committed.
func TestBatchClaimCommitFailure(t *testing.T) {
	e := newBatchEnv(t, 500)
	p, ev := e.payout(e.ws, "po-1", 100)
	if _, _, err := e.s.CreatePayout(t.Context(), p, ev, payoutkit.Lease{}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(48 * time.Hour) // after the events' times, which the helper fixes
	errCommit := errors.New("injected commit failure")
	fail := func(int) error { return errCommit }
	e.s.d.batch.BeforeCommit.Store(&fail)
	if _, err := e.s.ClaimEvents(t.Context(), "d1", now, now.Add(time.Minute), 10, nil); !errors.Is(err, errCommit) {
		t.Fatalf("ClaimEvents: %v; want the commit's error", err)
	}
	if _, err := e.s.ClaimPayoutHandoffs(t.Context(), "h1", now, now.Add(time.Minute), 10); !errors.Is(err, errCommit) {
		t.Fatalf("ClaimPayoutHandoffs: %v; want the commit's error", err)
	}
	e.s.d.batch.BeforeCommit.Store(nil)
	evs, err := e.s.ClaimEvents(t.Context(), "d2", now, now.Add(time.Minute), 10, nil)
	if err != nil || len(evs) != 2 { // order.paid, payout.submitted
		t.Fatalf("ClaimEvents after the failure: %d events, %v; want 2", len(evs), err)
	}
	ps, err := e.s.ClaimPayoutHandoffs(t.Context(), "h2", now, now.Add(time.Minute), 10)
	if err != nil || len(ps) != 1 {
		t.Fatalf("ClaimPayoutHandoffs after the failure: %d payouts, %v; want 1", len(ps), err)
	}
}

// An overdraft that shares a committed batch with accepted payouts leaves
// no payout row behind, on both dialects (PostgreSQL has no savepoint to
// roll it back: the create takes its row back itself).
func TestBatchOverdraftLeavesNoPayout(t *testing.T) {
	for name, dsn := range map[string]func(t *testing.T) string{
		"SQLite": func(t *testing.T) string { return filepath.Join(t.TempDir(), "batch.db") },
	} {
		t.Run(name, func(t *testing.T) {
			e := newBatchEnvAt(t, dsn(t), 1000)
			var reqs []*txRequest
			var ops []*createPayoutOp
			for _, c := range []struct {
				id     string
				amount payoutkit.Amount
			}{{"po-1", 600}, {"po-2", 600}, {"po-3", 400}} {
				p, ev := e.payout(e.ws, c.id, c.amount)
				op := &createPayoutOp{s: e.s, p: p, ev: ev}
				ops = append(ops, op)
				reqs = append(reqs, newTxRequest(op.run))
			}
			e.s.d.batch.run(reqs)
			for i, want := range []error{nil, payoutkit.ErrInsufficientBalance, nil} {
				if _, _, err := ops[i].result(t.Context(), <-reqs[i].Done()); !errors.Is(err, want) || (err != nil) != (want != nil) {
					t.Fatalf("payout %d: %v; want %v", i+1, err, want)
				}
			}
			if _, err := e.s.Payout(t.Context(), e.ws, "po-2"); !errors.Is(err, payoutkit.ErrNotFound) {
				t.Fatalf("the overdrafted payout: %v; want ErrNotFound", err)
			}
			e.audit()
		})
	}
}
