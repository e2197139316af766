package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// A batch's payouts, ledger entries and events go in one statement per
// table, each reading the created payouts from one JSON array (json_each):
// $1 the workspace, $2 the batch's time, $3 the rows, each
// [payout_id, amount, asset, network, address, payer_id, approval,
// event id, subject, body], and $4 the batch_id. A statement per payout
// cost more in its own overhead than in its rows. The batch judged the ids
// free under the write lock: no conflict can come.
const (
	insertBatchPayoutsSQL = `INSERT INTO payouts (` + sqlcore.PayoutCols + `, approval, batch_id)
		SELECT $1, j.value ->> 0, 'submitted', j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, j.value ->> 5, '', '', $2, $2,
			j.value ->> 6, $4
		FROM json_each($3) j ORDER BY j.key`
	insertBatchLedgerSQL = `INSERT INTO ledger_entries (` + sqlcore.LedgerCols + `)
		SELECT $1, 'payout_debit', -(j.value ->> 1), j.value ->> 0, j.value ->> 7, $2 FROM json_each($3) j ORDER BY j.key`
)

var (
	insertBatchEventsSQL = `INSERT INTO events (` + sqlcore.EventCols + `)
		SELECT j.value ->> 7, w.id, ` + sqlcore.EventValues([]string{"'" + string(payoutkit.EventPayoutSubmitted) + "'", "j.value ->> 8", "$2",
		"CAST(j.value ->> 9 AS BLOB)", "'pending'", "0", "$2", "''"}) + `
		FROM json_each($3) j JOIN workspaces w ON w.id = $1 ORDER BY j.key`
)

const (
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
	rows := make([]any, len(created))
	payers := map[string]int64{}
	var order []string
	for i, it := range created {
		p, ev := it.Payout, it.Event
		rows[i] = []any{p.PayoutID, int64(p.Amount), p.Asset, p.Network, p.Address, p.PayerID, string(p.Approval), ev.ID, ev.Subject, string(ev.Body)}
		if _, ok := payers[p.PayerID]; !ok {
			order = append(order, p.PayerID)
		}
		payers[p.PayerID] += int64(p.Amount)
	}
	raw, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	first := created[0].Payout
	for _, q := range []string{insertBatchPayoutsSQL, insertBatchLedgerSQL, insertBatchEventsSQL} {
		if _, err := tx.ExecContext(ctx, q, first.WorkspaceID, ts(first.CreatedAt), string(raw), first.BatchID); err != nil {
			return err
		}
	}
	for _, payer := range order {
		if _, err := s.st.exec(ctx, tx, moveCustomerSQL, first.WorkspaceID, payer, 0, 0, payers[payer], ts(first.CreatedAt)); err != nil {
			return fmt.Errorf("moving customer totals: %w", err)
		}
	}
	return nil
}
