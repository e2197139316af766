package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// A batch's payouts, ledger entries and events go in statements of up to
// batchChunk rows each, a VALUES list v of anonymous parameters ("?": the
// driver looks each named one up by a walk of the statement's names, which
// grows with their number). A statement per payout cost more in its own
// overhead than in its rows, and rows read out of one JSON argument cost
// more in parsing. The batch judged the ids free under the write lock: no
// conflict can come.
const batchChunk = 100

// batchTables are the three tables, each with its INSERT ... SELECT over a
// VALUES list v of n parameters a row (column1...): what batchRow gives.
var batchTables = []struct {
	n          int
	head, tail string
}{
	// workspace, payout_id, amount, asset, network, address, payer_id, approval, created, batch_id,
	// and its hand-off's lease (sqlcore.LeaseArgs)
	{13, `INSERT INTO payouts (` + sqlcore.PayoutCols + `, approval, batch_id, ` + sqlcore.PayoutLeaseCols + `)
		SELECT v.column1, v.column2, 'submitted', v.column3, v.column4, v.column5, v.column6, v.column7, '', '',
			v.column9, v.column9, v.column8, v.column10, v.column11, v.column12, v.column13 FROM (`, `) v`},
	// workspace, amount, payout_id, event id, created
	{5, `INSERT INTO ledger_entries (` + sqlcore.LedgerCols + `)
		SELECT v.column1, 'payout_debit', -v.column2, v.column3, v.column4, v.column5 FROM (`, `) v`},
	// event id, workspace, subject, created, body, and its lease's owner
	// and end, which a workspace without a webhook URL does not take
	{7, `INSERT INTO events (` + sqlcore.EventCols + `, ` + sqlcore.EventLeaseCols + `)
		SELECT v.column1, w.id, ` + sqlcore.EventValues([]string{"'" + string(payoutkit.EventPayoutSubmitted) + "'", "v.column3", "v.column4",
		"v.column5", "'pending'", "0", "v.column4", "''"}) + `,
			CASE WHEN w.webhook_url = '' THEN NULL ELSE v.column6 END, CASE WHEN w.webhook_url = '' THEN NULL ELSE v.column7 END
		FROM (`, `) v JOIN workspaces w ON w.id = v.column2`},
}

// batchRow appends table t's parameters for the created item it, leased
// as lease says.
func batchRow(args []any, t int, it payoutkit.BatchItem, lease payoutkit.Lease) []any {
	p, ev := it.Payout, it.Event
	switch t {
	case 0:
		handoff := lease
		if p.Approval == payoutkit.ApprovalPending {
			handoff = payoutkit.Lease{} // held: no hand-off until approved
		}
		owner, token, until := sqlcore.LeaseArgs(handoff, ts)
		return append(args, p.WorkspaceID, p.PayoutID, int64(p.Amount), p.Asset, p.Network, p.Address, p.PayerID, string(p.Approval),
			ts(p.CreatedAt), p.BatchID, owner, token, until)
	case 1:
		return append(args, p.WorkspaceID, int64(p.Amount), p.PayoutID, ev.ID, ts(ev.CreatedAt))
	}
	owner, _, until := sqlcore.LeaseArgs(lease, ts)
	return append(args, ev.ID, p.WorkspaceID, ev.Subject, ts(ev.CreatedAt), ev.Body, owner, until)
}

// batchInsertSQL is table t's statement for rows rows.
func batchInsertSQL(t, rows int) string {
	tb := batchTables[t]
	row := "(?" + strings.Repeat(", ?", tb.n-1) + ")"
	return tb.head + "VALUES " + row + strings.Repeat(", "+row, rows-1) + tb.tail
}

// fullChunkSQL are the statements of full chunks, by table.
var fullChunkSQL = [3]string{batchInsertSQL(0, batchChunk), batchInsertSQL(1, batchChunk), batchInsertSQL(2, batchChunk)}

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
func (s *Store) CreatePayoutBatch(ctx context.Context, b payoutkit.PayoutBatch, items []payoutkit.BatchItem, lease payoutkit.Lease) (payoutkit.PayoutBatch, bool, error) {
	var judged payoutkit.PayoutBatch
	var created int
	err := s.w.Write(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		judged = b
		plan, err := s.ops.JudgeBatch(ctx, tx, &judged, items)
		if err != nil {
			return err
		}
		created = len(plan.Created)
		return s.writeBatch(ctx, tx, judged, plan, lease)
	})
	stored, ok, err := sqlcore.BatchAnswer(ctx, judged, err, translate)
	if ok && created > 0 && lease.Owner == "" {
		s.w.Committed()
	}
	return stored, ok, err
}

// writeBatch stores the judged batch b: each created payout with its
// ledger entry and event, the customers' and the day's totals and the
// balance once, and b's row.
func (s *Store) writeBatch(ctx context.Context, tx *sql.Tx, b payoutkit.PayoutBatch, plan sqlcore.BatchPlan, lease payoutkit.Lease) error {
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
		if err := s.insertBatchPayouts(ctx, tx, plan.Created, lease); err != nil {
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
func (s *Store) insertBatchPayouts(ctx context.Context, tx *sql.Tx, created []payoutkit.BatchItem, lease payoutkit.Lease) error {
	first := created[0].Payout
	for start := 0; start < len(created); start += batchChunk {
		chunk := created[start:min(start+batchChunk, len(created))]
		for t := range batchTables {
			args := make([]any, 0, len(chunk)*batchTables[t].n)
			for _, it := range chunk {
				args = batchRow(args, t, it, lease)
			}
			query := fullChunkSQL[t]
			if len(chunk) < batchChunk {
				query = batchInsertSQL(t, len(chunk))
			}
			if _, err := s.st.exec(ctx, tx, query, args...); err != nil {
				return err
			}
		}
	}
	payers := map[string]int64{}
	var order []string
	for _, it := range created {
		p := it.Payout
		if _, ok := payers[p.PayerID]; !ok {
			order = append(order, p.PayerID)
		}
		payers[p.PayerID] += int64(p.Amount)
	}
	for _, payer := range order {
		if _, err := s.st.exec(ctx, tx, moveCustomerSQL, first.WorkspaceID, payer, 0, 0, payers[payer], ts(first.CreatedAt)); err != nil {
			return fmt.Errorf("moving customer totals: %w", err)
		}
	}
	return nil
}
