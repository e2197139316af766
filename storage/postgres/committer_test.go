package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// batchEnv is a store with a workspace funded with amount cents.
type batchEnv struct {
	t    *testing.T
	s    *Store
	path string
	ws   string
	seq  int
	// piped sends the creates of hand-made batches pipelined (PostgreSQL).
	piped bool
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

// On PostgreSQL the batch has no savepoints: the unknown workspace's foreign
// key error and the panic abort its transaction, so every write runs again
// on its own, and each still gets its own answer.
func TestBatchMixedAnswersPostgres(t *testing.T) {
	testBatchMixedAnswers(t, newBatchEnvAt(t, pgtest.Postgres(t), 1000), true)
}

// The same batch with its creates pipelined, as the store sends them on
// PostgreSQL: the aborted pipeline is dropped, and every write runs again
// on its own.
func TestBatchMixedAnswersPipelined(t *testing.T) {
	e := newBatchEnvAt(t, pgtest.Postgres(t), 1000)
	e.piped = true
	testBatchMixedAnswers(t, e, true)
}

// Without a write that fails, a pipelined batch is one transaction: the
// creates go out at once, and those refused (an overdraft, a replay, a
// taken id) finish after the pipeline with their own statements, each
// caller getting its own answer.
func TestBatchPipelined(t *testing.T) {
	e := newBatchEnvAt(t, pgtest.Postgres(t), 1000)
	e.piped = true
	calls := []createCall{
		e.create("first", e.ws, "po-a", 600, nil, true, 600),
		e.create("overdraft", e.ws, "po-b", 600, payoutkit.ErrInsufficientBalance, false, 0),
		e.create("replay of first in the same batch", e.ws, "po-a", 600, nil, false, 600),
		e.create("taken id, other amount", e.ws, "po-a", 100, nil, false, 600),
		e.create("exactly the rest", e.ws, "po-c", 400, nil, true, 400),
		e.create("overdraft at zero", e.ws, "po-d", 1, payoutkit.ErrInsufficientBalance, false, 0),
	}
	var reqs []*txRequest
	for _, c := range calls {
		reqs = append(reqs, e.request(c, true))
	}
	c := e.s.d.batch
	batches, piped := c.Batches.Load(), c.pipelinedBatches.Load()
	c.run(reqs)
	if n, p := c.Batches.Load()-batches, c.pipelinedBatches.Load()-piped; n != 1 || p != 1 {
		t.Fatalf("%d transactions, %d pipelined; want 1 and 1", n, p)
	}
	for i, c := range calls {
		c.check(t, reqs[i])
	}
	e.checkAllSpent("po-b", "po-d")
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

// request is c's write for the committer, pipelined when e.piped.
func (e *batchEnv) request(c createCall, _ bool) *txRequest {
	r := newTxRequest(c.op.run)
	if e.piped {
		r.Extra = c.op.pipe()
	}
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

// An overdraft that shares a committed batch with accepted payouts leaves
// no payout row behind, on both dialects (PostgreSQL has no savepoint to
// roll it back: the create takes its row back itself).
func TestBatchOverdraftLeavesNoPayout(t *testing.T) {
	for name, dsn := range map[string]func(t *testing.T) string{
		"Postgres": func(t *testing.T) string { return pgtest.Postgres(t) },
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
