package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

const (
	// deletePayoutSQL takes back a payout inserted by a create whose debit
	// the balance did not cover, so that the refusal leaves nothing changed.
	deletePayoutSQL = `DELETE FROM payouts WHERE workspace_id = $1 AND payout_id = $2`
)

func payoutArgs(p payoutkit.Payout) []any { return sqlcore.PayoutArgs(p, ts) }
func eventArgs(ev payoutkit.Event) []any  { return sqlcore.EventArgs(ev, ts) }

// CreatePayout implements payoutkit.Store: insert the payout unless
// its id is taken, debit the balance if it covers the amount, record the
// ledger entry and the event; one statement of a group-committed
// transaction, all or nothing.
func (s *Store) CreatePayout(ctx context.Context, p payoutkit.Payout, ev payoutkit.Event, lease payoutkit.Lease) (payoutkit.Payout, bool, error) {
	p.Approval = payoutkit.ApprovalNone // as the payout is inserted; its policy check may hold it
	op := &createPayoutOp{s: s, p: p, ev: ev, lease: lease}
	stored, created, err := op.result(ctx, s.w.Write(ctx, p.WorkspaceID, op.run, op.pipe()))
	if created && err == nil && lease.Owner == "" {
		s.w.Committed()
	}
	return stored, created, err
}

// createPayoutOp is one CreatePayout: run makes its change in a
// transaction, result turns run's error (or the transaction's) into
// CreatePayout's answer.
type createPayoutOp struct {
	s       *Store
	p       payoutkit.Payout
	ev      payoutkit.Event
	lease   payoutkit.Lease
	stored  payoutkit.Payout
	created bool
}

// statement is the create's first statement with its arguments: a
// workspace whose controls were read before is judged from memory, and its
// debit carries what that judgement assumed (sqlcore.Ops.Fast).
func (op *createPayoutOp) statement() (string, []any) {
	var fast *sqlcore.Fast
	if f, ok := op.s.ops.Fast(op.p); ok {
		fast = &f
	}
	return pgCreatePayoutSQL, op.args(op.p, op.ev, fast, nil)
}

// args are pgCreatePayoutSQL's arguments for the create of p with its
// event ev, judged as fast or j says (neither: not judged).
func (op *createPayoutOp) args(p payoutkit.Payout, ev payoutkit.Event, fast *sqlcore.Fast, j *sqlcore.Judged) []any {
	owner, token, until := sqlcore.LeaseArgs(op.lease, ts)
	args := append(append(payoutArgs(p), eventArgs(ev)...), owner, token, until)
	return append(args, op.s.ops.DebitArgs(fast, j)...)
}

func (op *createPayoutOp) run(ctx context.Context, tx *sql.Tx) error {
	var ins, deb int
	query, args := op.statement()
	if err := tx.QueryRowContext(ctx, query, args...).Scan(&ins, &deb); err != nil {
		return err
	}
	return op.finish(ctx, tx, ins == 1, deb == 1)
}

// pipe is the create as the committer pipelines it.
func (op *createPayoutOp) pipe() *pgPipe {
	query, args := op.statement()
	return &pgPipe{query: query, args: args, read: op.readPiped}
}

// readPiped reads the answer of the create's statement sent pipelined: a
// payout created is done; one refused has its follow-up.
func (op *createPayoutOp) readPiped(br pgx.BatchResults) (then txFunc, err error) {
	var ins, deb int
	if err := br.QueryRow().Scan(&ins, &deb); err != nil {
		return nil, err
	}
	if ins == 1 && deb == 1 {
		op.stored, op.created = op.p, true
		return nil, nil
	}
	return func(ctx context.Context, tx *sql.Tx) error { return op.finish(ctx, tx, ins == 1, deb == 1) }, nil
}

// finish decides the create once its statement ran in tx: a payout
// inserted and debited is created; otherwise what refused it is reported and
// nothing is left changed.
func (op *createPayoutOp) finish(ctx context.Context, tx *sql.Tx, inserted, debited bool) error {
	op.stored, op.created = payoutkit.Payout{}, false
	switch {
	case !inserted: // the id is taken: report the stored payout, change nothing
		var err error
		op.stored, err = sqlcore.ScanPayout(tx.QueryRowContext(ctx, sqlcore.SelectPayoutSQL, op.p.WorkspaceID, op.p.PayoutID))
		if err != nil {
			return err
		}
		return sqlcore.ErrNothingToCommit
	case !debited:
		// The balance or the workspace's controls refused the debit: the
		// policy judges the payout first, then the balance.
		return op.controlled(ctx, tx)
	}
	op.stored, op.created = op.p, true
	return nil
}

// controlled finishes a create whose debit was refused: by the balance
// alone, or by the workspace's controls, which judge it before the balance
// does. A refusal leaves nothing changed (no savepoint takes the inserted
// payout back): it deletes the payout.
func (op *createPayoutOp) controlled(ctx context.Context, tx *sql.Tx) error {
	refuse := func(why error) error {
		if _, err := tx.ExecContext(ctx, deletePayoutSQL, op.p.WorkspaceID, op.p.PayoutID); err != nil {
			return err
		}
		return why
	}
	j, err := op.s.ops.JudgeCreate(ctx, tx, op.p)
	switch {
	case errors.Is(err, sqlcore.ErrNoControls):
		// No foreign key checks a payout's workspace (migration 0015):
		// one without a balance row is unknown. The create's statement
		// was refused by the balance, or by controls that a policy change
		// committed since has cleared (READ COMMITTED, and in a pipelined
		// batch every follow-up runs after the whole pipeline): the row
		// is locked now (JudgeCreate), so its balance decides.
		var available int64
		err := tx.QueryRowContext(ctx, `SELECT available FROM balances WHERE workspace_id = $1`, op.p.WorkspaceID).Scan(&available)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return refuse(sqlcore.ErrUnknownWorkspace)
		case err != nil:
			return err
		case available < int64(op.p.Amount):
			return refuse(payoutkit.ErrInsufficientBalance)
		}
		j = &sqlcore.Judged{Approval: payoutkit.ApprovalNone} // no hold, no window
	case sqlcore.Refusal(err):
		return refuse(err)
	case err != nil:
		return err
	}
	p, ev := op.p, op.ev
	if p.Approval = j.Approval; p.Approval == payoutkit.ApprovalPending {
		if ev, err = ev.WithPayout(p); err != nil {
			return err
		}
	}
	// The create again, judged: the payout its first run inserted is taken
	// back first, so that the one statement that inserts and debits every
	// payout inserts this one too.
	if _, err := tx.ExecContext(ctx, deletePayoutSQL, op.p.WorkspaceID, op.p.PayoutID); err != nil {
		return err
	}
	var ins, debited int
	if err := tx.QueryRowContext(ctx, pgCreatePayoutSQL, op.args(p, ev, nil, j)...).Scan(&ins, &debited); err != nil {
		return err
	}
	if debited == 0 {
		return refuse(payoutkit.ErrInsufficientBalance)
	}
	if err := j.Record(ctx, tx); err != nil {
		return err
	}
	op.stored, op.created = p, true
	return nil
}

func (op *createPayoutOp) result(ctx context.Context, err error) (payoutkit.Payout, bool, error) {
	if err != nil && !errors.Is(err, sqlcore.ErrNothingToCommit) {
		return payoutkit.Payout{}, false, translate(ctx, "create payout", err)
	}
	return op.stored, op.created, nil
}

// SettlePayout implements payoutkit.Store: one statement, which
// settles all or nothing.
func (s *Store) SettlePayout(ctx context.Context, p payoutkit.Payout, ev payoutkit.Event) error {
	if p.Status != payoutkit.PayoutCompleted && p.Status != payoutkit.PayoutFailed {
		return fmt.Errorf("sqlstore: settle payout: status %q is not completed or failed: %w", p.Status, payoutkit.ErrInvalidInput)
	}
	return s.settle(ctx, "settle payout", pgSettlePayoutSQL, p, ev, nil)
}

// RejectPayout implements payoutkit.Store: SettlePayout of a held
// payout, with its security log entry in the same transaction.
func (s *Store) RejectPayout(ctx context.Context, p payoutkit.Payout, ev payoutkit.Event, log payoutkit.SecurityLogEntry) error {
	p.Status = payoutkit.PayoutFailed
	return s.settle(ctx, "reject payout", pgRejectPayoutSQL, p, ev, &log)
}

// settle runs the settlement statement query (pgSettleSQL's parameters),
// and appends log (when it has an action) if it settled.
func (s *Store) settle(ctx context.Context, op, query string, p payoutkit.Payout, ev payoutkit.Event, log *payoutkit.SecurityLogEntry) error {
	args := append([]any{p.WorkspaceID, p.PayoutID, string(p.Status), p.TxID, p.FailureReason, ts(p.UpdatedAt)}, eventArgs(ev)...)
	args = append(args, sqlcore.DecimalArg(p.AssetAmount), sqlcore.DecimalArg(p.NetworkFee))
	var settled bool
	err := s.w.Write(ctx, p.WorkspaceID, func(ctx context.Context, tx *sql.Tx) error {
		var n int
		err := tx.QueryRowContext(ctx, query, args...).Scan(&n)
		settled = n == 1
		if err != nil || !settled || log == nil {
			return err
		}
		return s.ops.AppendLog(ctx, tx, *log)
	}, nil)
	if err != nil {
		return translate(ctx, op, err)
	}
	if !settled { // not submitted (or not held), or not there
		if _, err := s.Payout(ctx, p.WorkspaceID, p.PayoutID); err != nil {
			return err
		}
		return payoutkit.ErrConflict
	}
	s.w.Committed()
	return nil
}

// ClaimPayoutHandoffs implements payoutkit.Store: the due payouts are
// locked with FOR UPDATE SKIP LOCKED, so that instances claim disjoint
// sets. A claim reads on from where this store's last full claim ended
// (sqlcore.HandoffCursor).
func (s *Store) ClaimPayoutHandoffs(ctx context.Context, owner string, now, leaseUntil time.Time, limit int) ([]payoutkit.PayoutLease, error) {
	if limit <= 0 {
		return nil, nil
	}
	ls, err := s.d.handoffs.Claim(now, leaseUntil, limit, func(after int64, n int) ([]payoutkit.PayoutLease, int64, error) {
		// The plan is pinned (TestPostgresClaimPlans): without statistics
		// the planner may rather read every submitted payout and sort them
		// than walk the queue in order.
		return sqlcore.ClaimHandoffLeases(owner, func(read func(sqlcore.RowIter) error) error {
			return s.w.Claim(ctx, true, read, claimHandoffsSQL, ts(now), ts(leaseUntil), n, owner, after)
		})
	})
	if err != nil {
		return nil, translate(ctx, "claim payout hand-offs", err)
	}
	return ls, nil
}

// markHandedOffSQL records a hand-off if the claim (owner and fencing token)
// still holds, and takes the payout out of the hand-off queue; it returns
// how many payouts it marked. The queue's row goes only with an update
// that held, so a record too late for its lease leaves the payout to the
// claim that took it over. The update changes no indexed column.
const markHandedOffSQL = `WITH p AS (
	UPDATE payouts SET handed_off_at = COALESCE(handed_off_at, $3), handoff_lease_until = NULL
	WHERE workspace_id = $1 AND payout_id = $2 AND handoff_owner = $4 AND handoff_token = $5
	RETURNING seq
), q AS (
	DELETE FROM payout_handoffs WHERE seq IN (SELECT seq FROM p)
)
SELECT count(*) FROM p`

// MarkPayoutHandedOff implements payoutkit.Store: a conditional
// update on the claim's owner and fencing token. It goes in the outbox's
// batches, with the delivery attempts, not in its workspace's: those hold
// the workspace's balance row from their first create to their COMMIT, and
// a hand-off record there made every create of a hot workspace wait for
// it. A settlement of the same payout racing its record can meet it in a
// lock cycle with another payout's; PostgreSQL breaks it by failing one of
// them, whose batch runs again write by write, as after any failed
// statement.
func (s *Store) MarkPayoutHandedOff(ctx context.Context, l payoutkit.PayoutLease, at time.Time) error {
	args := []any{l.WorkspaceID, l.PayoutID, ts(at), l.Owner, l.Token}
	var marked int
	err := s.w.Write(ctx, "", func(ctx context.Context, tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, markHandedOffSQL, args...).Scan(&marked)
	}, &pgPipe{query: markHandedOffSQL, args: args, read: func(br pgx.BatchResults) (txFunc, error) {
		return nil, br.QueryRow().Scan(&marked)
	}})
	if err != nil {
		return translate(ctx, "mark payout handed off", err)
	}
	if marked == 0 {
		if _, perr := s.Payout(ctx, l.WorkspaceID, l.PayoutID); perr != nil {
			return perr
		}
		return payoutkit.ErrConflict
	}
	return nil
}
