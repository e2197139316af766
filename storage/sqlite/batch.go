package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

const (
	// insertBatchPayoutSQL: $1-$12 the payout (payoutArgs), $13 its
	// approval, $14 its batch. The batch judged its id free under the write
	// lock: no conflict can come.
	insertBatchPayoutSQL = `INSERT INTO payouts (` + sqlcore.PayoutCols + `, approval, batch_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`
	// debitBatchSQL takes a batch's total ($2) from the balance, which
	// the batch's judgement read under the write lock.
	debitBatchSQL = `UPDATE balances SET available = available - $2, in_progress = in_progress + $2
		WHERE workspace_id = $1 AND available >= $2`
	// addPayoutDaysSQL adds $3 submitted payouts to day $2's counters.
	addPayoutDaysSQL = `INSERT INTO payout_days (workspace_id, day, submitted) VALUES ($1, $2, $3)
		ON CONFLICT (workspace_id, day) DO UPDATE SET submitted = payout_days.submitted + $3`
	insertBatchSQL = `INSERT INTO payout_batches (` + sqlcore.InsertBatchCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
)

// CreatePayoutBatch implements payoutkit.Store: one write of the
// committer's batch, in a savepoint, that judges the batch under the write
// lock (sqlcore.Ops.JudgeBatch) and stores what it accepted, with the
// balance debited once for all of it.
func (s *Store) CreatePayoutBatch(ctx context.Context, b payoutkit.PayoutBatch, items []payoutkit.BatchItem) (payoutkit.PayoutBatch, bool, error) {
	var judged payoutkit.PayoutBatch
	var created int
	err := s.w.Write(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		judged = b
		plan, err := s.ops.JudgeBatch(ctx, tx, &judged, items)
		if err != nil {
			return err
		}
		created = len(plan.Created)
		return s.writeBatch(ctx, tx, judged, plan)
	})
	switch {
	case errors.Is(err, sqlcore.ErrNothingToCommit):
		return judged, false, nil
	case errors.Is(err, payoutkit.ErrBatchRefused):
		return judged, false, err
	case err != nil:
		return payoutkit.PayoutBatch{}, false, translate(ctx, "create payout batch", err)
	}
	if created > 0 {
		s.w.Committed()
	}
	return judged, true, nil
}

// writeBatch stores the judged batch b: each created payout with its
// ledger entry and event, the customers' and the day's totals and the
// balance once, and b's row.
func (s *Store) writeBatch(ctx context.Context, tx *sql.Tx, b payoutkit.PayoutBatch, plan sqlcore.BatchPlan) error {
	if len(plan.Created) > 0 {
		res, err := tx.ExecContext(ctx, debitBatchSQL, b.WorkspaceID, plan.Total)
		if err != nil {
			return err
		}
		if err := sqlcore.MustAffect(res, errors.New("sqlstore: a judged batch's debit was refused")); err != nil {
			return err
		}
		if plan.Window != nil {
			if err := s.ops.SetWindow(ctx, tx, b.WorkspaceID, *plan.Window); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, addPayoutDaysSQL, b.WorkspaceID, payoutkit.PayoutDay(b.CreatedAt), len(plan.Created)); err != nil {
			return err
		}
		if err := s.insertBatchPayouts(ctx, tx, plan.Created); err != nil {
			return err
		}
	}
	args, err := s.ops.BatchRecordArgs(b)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, insertBatchSQL, args...)
	return err
}

// insertBatchPayouts inserts the created payouts with their ledger entries
// and events, and moves each payer's in_progress once.
func (s *Store) insertBatchPayouts(ctx context.Context, tx *sql.Tx, created []payoutkit.BatchItem) error {
	var stmts [3]*sql.Stmt
	for i, q := range []string{insertBatchPayoutSQL, insertLedgerSQL, insertCreatedEventSQL} {
		st, err := tx.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		defer st.Close()
		stmts[i] = st
	}
	payers := map[string]int64{}
	var order []string
	for _, it := range created {
		p, ev := it.Payout, it.Event
		if _, err := stmts[0].ExecContext(ctx, append(payoutArgs(p), string(p.Approval), p.BatchID)...); err != nil {
			return err
		}
		if _, err := stmts[1].ExecContext(ctx, p.WorkspaceID, string(payoutkit.LedgerPayoutDebit), -int64(p.Amount), p.PayoutID,
			ev.ID, ts(ev.CreatedAt)); err != nil {
			return err
		}
		if _, err := stmts[2].ExecContext(ctx, append(append([]any{p.WorkspaceID}, eventArgs(ev)...), nil, nil)...); err != nil {
			return err
		}
		if _, ok := payers[p.PayerID]; !ok {
			order = append(order, p.PayerID)
		}
		payers[p.PayerID] += int64(p.Amount)
	}
	first := created[0].Payout
	for _, payer := range order {
		if _, err := s.st.exec(ctx, tx, moveCustomerSQL, first.WorkspaceID, payer, 0, 0, payers[payer], ts(first.CreatedAt)); err != nil {
			return fmt.Errorf("moving customer totals: %w", err)
		}
	}
	return nil
}
