package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

const (
	// insertPayoutSQL: $1-$12 the payout (payoutArgs), $13-$15 its
	// hand-off lease (sqlcore.LeaseArgs).
	insertPayoutSQL = `INSERT INTO payouts (` + sqlcore.PayoutCols + `, ` + sqlcore.PayoutLeaseCols + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		ON CONFLICT (workspace_id, payout_id) DO NOTHING`
	insertLedgerSQL = `INSERT INTO ledger_entries (` + sqlcore.LedgerCols + `) VALUES ($1, $2, $3, $4, $5, $6)`
	// SettlePayout: the conditional status change, then the balance.
	settlePayoutSQL = `UPDATE payouts SET status = $3, txid = $4, failure_reason = $5, updated_at = $6, asset_amount = $7, network_fee = $8
		WHERE workspace_id = $1 AND payout_id = $2 AND status = 'submitted' RETURNING amount, payer_id, created_at`
	// rejectPayoutSQL is settlePayoutSQL for a held payout's rejection.
	rejectPayoutSQL = `UPDATE payouts SET status = $3, txid = $4, failure_reason = $5, updated_at = $6, asset_amount = $7, network_fee = $8,
		approval = 'rejected'
		WHERE workspace_id = $1 AND payout_id = $2 AND status = 'submitted' AND approval = 'pending' RETURNING amount, payer_id, created_at`
	// The customer totals: $1 workspace, $2 payer_id, $3-$5 what to add to
	// paid_in, paid_out and in_progress (a settlement's is negative), $6 the
	// time of the movement, the customer's first if it is new. A new row
	// cannot start below zero: CHECK constraints judge the row to insert
	// before the conflict makes it an update.
	moveCustomerSQL = `INSERT INTO customers (workspace_id, payer_id, paid_in, paid_out, in_progress, first_seen_at)
		VALUES ($1, $2, $3, $4, max($5, 0), $6)
		ON CONFLICT (workspace_id, payer_id) DO UPDATE SET
			paid_in = paid_in + $3, paid_out = paid_out + $4, in_progress = in_progress + $5`
	// deletePayoutSQL takes back a payout inserted by a create whose debit
	// the balance did not cover, so that the refusal leaves nothing changed.
	deletePayoutSQL = `DELETE FROM payouts WHERE workspace_id = $1 AND payout_id = $2`
)

// debitSQL is the debit of every create, the store's one statement of the
// no-overdraft rule and of the 24-hour limit (sqlcore.Debit): $1 workspace,
// $2 amount, $3 the payout's creation, $4-$11 how the create was judged
// (sqlcore.Ops.DebitArgs).
var debitSQL = func() string {
	set, where := sqlcore.Debit(func(n int, _ string) string { return fmt.Sprintf("$%d", n) }, "$2", "$3", 4)
	return `UPDATE balances SET ` + set + `
		WHERE workspace_id = $1 AND ` + where
}()

// settleBalanceSQL: $2 the amount, $3 the refund (the amount of a failed
// payout, else 0), $4 its creation: a failed payout the 24-hour window holds
// leaves it.
var settleBalanceSQL = `UPDATE balances SET in_progress = in_progress - $2, available = available + $3,
		` + sqlcore.WindowRefund("$3 <> 0", "$2", "$4") + `
	WHERE workspace_id = $1`

// insertEventSQL takes $1 workspace_id and $2-$10 the event's columns
// (sqlcore.EventArgs); see sqlcore.EventValues.
var insertEventSQL = `INSERT INTO events (` + sqlcore.EventCols + `)
	SELECT $2, w.id, ` + sqlcore.EventValues([]string{"$3", "$4", "$5", "$6", "$7", "$8", "$9", "$10"}) + ` FROM workspaces w WHERE w.id = $1`

// insertCreatedEventSQL is insertEventSQL for a new payout's event, with
// $11 and $12 the lease owner and end (NULL for none) that a workspace
// with a webhook URL stores it leased with.
var insertCreatedEventSQL = `INSERT INTO events (` + sqlcore.EventCols + `, ` + sqlcore.EventLeaseCols + `)
	SELECT $2, w.id, ` + sqlcore.EventValues([]string{"$3", "$4", "$5", "$6", "$7", "$8", "$9", "$10"}) + `,
		CASE WHEN w.webhook_url = '' THEN NULL ELSE $11 END, CASE WHEN w.webhook_url = '' THEN NULL ELSE $12 END
	FROM workspaces w WHERE w.id = $1`

func payoutArgs(p payoutkit.Payout) []any { return sqlcore.PayoutArgs(p, ts) }
func eventArgs(ev payoutkit.Event) []any  { return sqlcore.EventArgs(ev, ts) }

// CreatePayout implements payoutkit.Store: insert the payout unless
// its id is taken, debit the balance if it covers the amount, record the
// ledger entry and the event; one savepoint of a group-committed
// transaction (or none: a refusal changes nothing), all or nothing.
func (s *Store) CreatePayout(ctx context.Context, p payoutkit.Payout, ev payoutkit.Event, lease payoutkit.Lease) (payoutkit.Payout, bool, error) {
	p.Approval = payoutkit.ApprovalNone // as the payout is inserted; its policy check may hold it
	op := &createPayoutOp{s: s, p: p, ev: ev, lease: lease}
	stored, created, err := op.result(ctx, s.w.Write(ctx, true, op.run))
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

func (op *createPayoutOp) run(ctx context.Context, tx *sql.Tx) error {
	inserted, err := op.s.insertPayout(ctx, tx, op.p, op.lease)
	switch {
	case err != nil:
		return err
	case !inserted:
		return op.finish(ctx, tx, false, false)
	}
	var fast *sqlcore.Fast
	if op.s.ops.Controlled(op.p.WorkspaceID) {
		// Its last create found controls: judged from memory if it can
		// be, else by the database before its debit is tried.
		f, ok := op.s.ops.Fast(op.p)
		if !ok {
			return op.controlled(ctx, tx, false)
		}
		fast = &f
	}
	debited, err := op.s.debit(ctx, tx, op.p, fast, nil)
	if err != nil {
		return err
	}
	return op.finish(ctx, tx, true, debited)
}

// finish decides the create once its statements ran in tx: a payout
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
		return op.controlled(ctx, tx, true)
	}
	if err := op.s.afterDebit(ctx, tx, op.p, op.ev, op.lease); err != nil {
		return err
	}
	op.stored, op.created = op.p, true
	return nil
}

// controlled finishes a create whose payout is inserted but not debited,
// judging it by the workspace's controls before the balance does: after a
// debit that was refused (debitTried: by the balance alone, or by the
// controls), or first, where the workspace's last create found controls. A
// refusal leaves nothing changed (no savepoint takes the inserted payout
// back): it deletes the payout.
func (op *createPayoutOp) controlled(ctx context.Context, tx *sql.Tx, debitTried bool) error {
	refuse := func(why error) error {
		if _, err := op.s.st.exec(ctx, tx, deletePayoutSQL, op.p.WorkspaceID, op.p.PayoutID); err != nil {
			return err
		}
		return why
	}
	j, err := op.s.ops.JudgeCreate(ctx, tx, op.p)
	switch {
	case errors.Is(err, sqlcore.ErrNoControls):
		if debitTried {
			return refuse(payoutkit.ErrInsufficientBalance)
		}
		j = nil // not judged: debited only without controls
	case sqlcore.Refusal(err):
		return refuse(err)
	case err != nil:
		return err
	}
	p, ev := op.p, op.ev
	if j != nil {
		if p.Approval = j.Approval; p.Approval == payoutkit.ApprovalPending {
			if ev, err = ev.WithPayout(p); err != nil {
				return err
			}
		}
	}
	debited, err := op.s.debit(ctx, tx, p, nil, j)
	switch {
	case err != nil:
		return err
	case !debited:
		return refuse(payoutkit.ErrInsufficientBalance)
	}
	if err := op.s.afterDebit(ctx, tx, p, ev, op.lease); err != nil {
		return err
	}
	if j != nil {
		if err := j.Record(ctx, tx); err != nil {
			return err
		}
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

// insertPayout inserts p, its hand-off leased as lease says, unless its id
// is taken.
func (s *Store) insertPayout(ctx context.Context, tx *sql.Tx, p payoutkit.Payout, lease payoutkit.Lease) (bool, error) {
	owner, token, until := sqlcore.LeaseArgs(lease, ts)
	res, err := s.st.exec(ctx, tx, insertPayoutSQL, append(payoutArgs(p), owner, token, until)...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// debit takes the inserted payout p from its balance (debitSQL), judged as
// fast or j says (neither: not judged), and reports whether it did.
func (s *Store) debit(ctx context.Context, tx *sql.Tx, p payoutkit.Payout, fast *sqlcore.Fast, j *sqlcore.Judged) (bool, error) {
	args := append([]any{p.WorkspaceID, int64(p.Amount), ts(p.CreatedAt)}, s.ops.DebitArgs(fast, j)...)
	res, err := s.st.exec(ctx, tx, debitSQL, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// afterDebit records a debited payout's day counter, customer movement,
// ledger entry and event (leased as lease says) in tx. Every path that
// creates a payout comes through here.
func (s *Store) afterDebit(ctx context.Context, tx *sql.Tx, p payoutkit.Payout, ev payoutkit.Event, lease payoutkit.Lease) error {
	if _, err := s.st.exec(ctx, tx, sqlcore.AddPayoutDaySQL, p.WorkspaceID, payoutkit.PayoutDay(p.CreatedAt)); err != nil {
		return err
	}
	if _, err := s.st.exec(ctx, tx, moveCustomerSQL, p.WorkspaceID, p.PayerID, 0, 0, int64(p.Amount), ts(p.CreatedAt)); err != nil {
		return err
	}
	if _, err := s.st.exec(ctx, tx, insertLedgerSQL,
		p.WorkspaceID, string(payoutkit.LedgerPayoutDebit), -int64(p.Amount), p.PayoutID, ev.ID, ts(ev.CreatedAt)); err != nil {
		return err
	}
	owner, _, until := sqlcore.LeaseArgs(lease, ts)
	_, err := s.st.exec(ctx, tx, insertCreatedEventSQL, append(append([]any{p.WorkspaceID}, eventArgs(ev)...), owner, until)...)
	return err
}

// SettlePayout implements payoutkit.Store.
func (s *Store) SettlePayout(ctx context.Context, p payoutkit.Payout, ev payoutkit.Event) error {
	if p.Status != payoutkit.PayoutCompleted && p.Status != payoutkit.PayoutFailed {
		return fmt.Errorf("sqlstore: settle payout: status %q is not completed or failed: %w", p.Status, payoutkit.ErrInvalidInput)
	}
	return s.settle(ctx, "settle payout", settlePayoutSQL, p, ev, nil)
}

// RejectPayout implements payoutkit.Store: SettlePayout of a held
// payout, with its security log entry.
func (s *Store) RejectPayout(ctx context.Context, p payoutkit.Payout, ev payoutkit.Event, log payoutkit.SecurityLogEntry) error {
	p.Status = payoutkit.PayoutFailed
	return s.settle(ctx, "reject payout", rejectPayoutSQL, p, ev, func(ctx context.Context, tx *sql.Tx) error {
		return s.ops.AppendLog(ctx, tx, log)
	})
}

// settle runs update (settlePayoutSQL's parameters) and the balance, the
// day counter, the customer, the ledger, the 24-hour window and the event that follow, and
// then also, in the same transaction.
func (s *Store) settle(ctx context.Context, op, update string, p payoutkit.Payout, ev payoutkit.Event, also sqlcore.TxFunc) error {
	var settled bool
	err := s.w.Write(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		settled = false
		var amount int64
		var payer string
		var createdAt time.Time
		err := s.st.queryRow(ctx, tx, update, p.WorkspaceID, p.PayoutID, string(p.Status), p.TxID, p.FailureReason, ts(p.UpdatedAt),
			sqlcore.DecimalArg(p.AssetAmount), sqlcore.DecimalArg(p.NetworkFee)).Scan(&amount, &payer, sqlcore.TimeCol{T: &createdAt})
		if errors.Is(err, sql.ErrNoRows) {
			return sqlcore.ErrNothingToCommit
		} else if err != nil {
			return err
		}
		refund, paidOut := int64(0), int64(0)
		if p.Status == payoutkit.PayoutFailed {
			refund = amount
		} else {
			paidOut = amount
		}
		if _, err := s.st.exec(ctx, tx, settleBalanceSQL, p.WorkspaceID, amount, refund, ts(createdAt)); err != nil {
			return err
		}
		if _, err := s.st.exec(ctx, tx, sqlcore.SettlePayoutDaySQL, p.WorkspaceID, payoutkit.PayoutDay(createdAt), string(p.Status)); err != nil {
			return err
		}
		if _, err := s.st.exec(ctx, tx, moveCustomerSQL, p.WorkspaceID, payer, 0, paidOut, -amount, ts(p.UpdatedAt)); err != nil {
			return err
		}
		if refund != 0 {
			if _, err := s.st.exec(ctx, tx, insertLedgerSQL,
				p.WorkspaceID, string(payoutkit.LedgerPayoutRefund), refund, p.PayoutID, ev.ID, ts(ev.CreatedAt)); err != nil {
				return err
			}
		}
		if _, err := s.st.exec(ctx, tx, insertEventSQL, append([]any{p.WorkspaceID}, eventArgs(ev)...)...); err != nil {
			return err
		}
		if also != nil {
			if err := also(ctx, tx); err != nil {
				return err
			}
		}
		settled = true
		return nil
	})
	if errors.Is(err, sqlcore.ErrNothingToCommit) {
		err = nil
	}
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

// ClaimPayoutHandoffs implements payoutkit.Store: one statement, which
// the single writer connection serialises with other claims. A claim reads
// on from where this store's last full claim ended (sqlcore.HandoffCursor).
func (s *Store) ClaimPayoutHandoffs(ctx context.Context, owner string, now, leaseUntil time.Time, limit int) ([]payoutkit.PayoutLease, error) {
	if limit <= 0 {
		return nil, nil
	}
	ls, err := s.d.handoffs.Claim(now, leaseUntil, limit, func(after int64, n int) ([]payoutkit.PayoutLease, int64, error) {
		return sqlcore.ClaimHandoffLeases(owner, func(read func(sqlcore.RowIter) error) error {
			return s.rowsWrite(ctx, read, claimHandoffsSQL, ts(now), ts(leaseUntil), n, owner, after)
		})
	})
	if err != nil {
		return nil, translate(ctx, "claim payout hand-offs", err)
	}
	return ls, nil
}

// markHandedOffSQL records a hand-off if the claim (owner and fencing token)
// still holds.
const markHandedOffSQL = `UPDATE payouts SET handed_off_at = COALESCE(handed_off_at, $3), handoff_lease_until = NULL
	WHERE workspace_id = $1 AND payout_id = $2 AND handoff_owner = $4 AND handoff_token = $5`

// MarkPayoutHandedOff implements payoutkit.Store: a conditional
// update on the claim's owner and fencing token.
func (s *Store) MarkPayoutHandedOff(ctx context.Context, l payoutkit.PayoutLease, at time.Time) error {
	res, err := s.execWrite(ctx, markHandedOffSQL, l.WorkspaceID, l.PayoutID, ts(at), l.Owner, l.Token)
	if err != nil {
		return translate(ctx, "mark payout handed off", err)
	}
	if err := sqlcore.MustAffect(res, payoutkit.ErrConflict); err != nil {
		if _, perr := s.Payout(ctx, l.WorkspaceID, l.PayoutID); perr != nil {
			return perr
		}
		return err
	}
	return nil
}
