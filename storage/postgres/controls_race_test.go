package postgres

import (
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// A create whose statement the workspace's controls refused, and whose
// follow-up then finds them cleared by a policy change another
// transaction committed in between (READ COMMITTED; in a pipelined batch
// every follow-up runs after the whole pipeline), is debited as in a
// workspace without controls: the balance covers it, so it is no
// overdraft. FuzzMoneyPathsPostgres found it: a create racing a policy
// change that cleared max_payout was refused for an insufficient balance
// with 97.49 available.
func TestCreateAfterControlsCleared(t *testing.T) {
	e := newBatchEnvAt(t, pgtest.Postgres(t), 9999)
	ctx := t.Context()
	eng, err := payoutkit.New(e.s, &payoutkit.Config{PasswordCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	limit := payoutkit.LimitOf(100)
	if _, err := eng.SetPayoutPolicy(ctx, e.ws, payoutkit.PolicyPatch{MaxPayout: &limit}, payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	p, ev := e.payout(e.ws, "po-1", 1000)
	op := &createPayoutOp{s: e.s, p: p, ev: ev}
	tx, err := e.s.d.sqldb.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	query, args := op.statement()
	var ins, deb int
	if err := tx.QueryRowContext(ctx, query, args...).Scan(&ins, &deb); err != nil {
		t.Fatal(err)
	}
	if ins != 1 || deb != 0 {
		t.Fatalf("the create's statement under max_payout 1.00: inserted %d, debited %d; want 1, 0", ins, deb)
	}
	var none payoutkit.Limit
	if _, err := eng.SetPayoutPolicy(ctx, e.ws, payoutkit.PolicyPatch{MaxPayout: &none}, payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	if err := op.finish(ctx, tx, true, false); err != nil {
		t.Fatalf("the create's follow-up with the controls cleared and 99.99 available: %v; want it debited", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if a := e.audit(); a.Available != 8999 || a.SubmittedPayouts != 1000 {
		t.Fatalf("audit %+v; want 89.99 available, 10.00 submitted", a)
	}
}
