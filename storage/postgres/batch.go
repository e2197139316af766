package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// pgWriteBatchSQL stores a judged batch in one statement over arrays, one
// element per item or per created payout, whatever the batch's size:
// $1 workspace, $2 batch_id, $3 its time (every payout's creation and
// event), $4 all_or_nothing, $5-$7 accepted, refused, accepted_amount, $8
// the items (sqlcore.Ops.BatchRecordArgs); $9-$15 the created payouts
// (payout_id, amount, asset, network, address, payer_id, approval), $16
// their total, $17 their events' ids, $18 subjects, $19 bodies; $20-$21
// each payer's total (payer_id, amount); $22 how many payouts it creates;
// $23 and $24 the owner and end of the lease its payouts' hand-offs (but a
// held one's) and its events are stored with (NULL: none).
// The balance was locked and judged by this transaction
// (sqlcore.Ops.JudgeBatch): it returns the debited rows, 1 whenever $16 is
// above 0, and the caller fails the write otherwise.
var pgWriteBatchSQL = `WITH b AS (
	INSERT INTO payout_batches (` + sqlcore.InsertBatchCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
), x AS (
	SELECT * FROM unnest($9::text[], $10::bigint[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $17::text[], $18::text[], $19::bytea[])
		AS x(payout_id, amount, asset, network, address, payer_id, approval, event_id, subject, body)
), p AS (
	INSERT INTO payouts (` + sqlcore.PayoutCols + `, approval, batch_id, ` + sqlcore.PayoutLeaseCols + `)
	SELECT $1, payout_id, 'submitted', amount, asset, network, address, payer_id, '', '', $3, $3, approval, $2,
		CASE WHEN approval = 'pending' THEN NULL ELSE $23::text END,
		CASE WHEN approval = 'pending' OR $23::text IS NULL THEN 0 ELSE 1 END,
		CASE WHEN approval = 'pending' THEN NULL ELSE $24::timestamptz END
	FROM x
	RETURNING seq
), h AS (
	INSERT INTO payout_handoffs (seq) SELECT seq FROM p
), d AS (
	UPDATE balances SET available = available - $16::bigint, in_progress = in_progress + $16::bigint
	WHERE workspace_id = $1 AND $16::bigint > 0 AND available >= $16::bigint
	RETURNING workspace_id
), l AS (
	INSERT INTO ledger_entries (` + sqlcore.LedgerCols + `)
	SELECT $1, 'payout_debit', -amount, payout_id, event_id, $3 FROM x
), c AS (
	INSERT INTO customers (workspace_id, payer_id, in_progress, first_seen_at)
	SELECT $1, y.payer_id, y.amount, $3 FROM unnest($20::text[], $21::bigint[]) AS y(payer_id, amount)
	ON CONFLICT (workspace_id, payer_id) DO UPDATE SET in_progress = customers.in_progress + EXCLUDED.in_progress
), n AS (
	INSERT INTO payout_days (workspace_id, day, submitted) SELECT $1, ` + pgDay("$3::timestamptz") + `, $22::integer WHERE $22::integer > 0
	ON CONFLICT (workspace_id, day) DO UPDATE SET submitted = payout_days.submitted + EXCLUDED.submitted
), e AS (
	INSERT INTO events (` + sqlcore.EventCols + `, ` + sqlcore.EventLeaseCols + `)
	SELECT x.event_id, w.id, ` + sqlcore.EventValues([]string{"'" + string(payoutkit.EventPayoutSubmitted) + "'", "x.subject", "$3",
	"x.body", "'pending'", "0", "$3", "''"}) + `,
		CASE WHEN w.webhook_url = '' THEN NULL ELSE $23::text END, CASE WHEN w.webhook_url = '' THEN NULL ELSE $24::timestamptz END
	FROM x JOIN workspaces w ON w.id = $1
)
SELECT count(*) FROM d`

// CreatePayoutBatch implements payoutkit.Store: one write of its
// workspace's committer, which locks the balance row once, judges the
// batch (sqlcore.Ops.JudgeBatch) and stores it with pgWriteBatchSQL.
func (s *Store) CreatePayoutBatch(ctx context.Context, b payoutkit.PayoutBatch, items []payoutkit.BatchItem, lease payoutkit.Lease) (payoutkit.PayoutBatch, bool, error) {
	var judged payoutkit.PayoutBatch
	var created int
	err := s.w.Write(ctx, b.WorkspaceID, func(ctx context.Context, tx *sql.Tx) error {
		judged = b
		plan, err := s.ops.JudgeBatch(ctx, tx, &judged, items)
		if err != nil {
			return err
		}
		created = len(plan.Created)
		args, err := s.batchArgs(judged, plan, lease)
		if err != nil {
			return err
		}
		var debited int
		if err := tx.QueryRowContext(ctx, pgWriteBatchSQL, args...).Scan(&debited); err != nil {
			return err
		}
		if plan.Total > 0 && debited != 1 {
			return errors.New("pgstore: a judged batch's debit was refused")
		}
		if plan.Window != nil && created > 0 {
			return s.ops.SetWindow(ctx, tx, b.WorkspaceID, *plan.Window)
		}
		return nil
	}, nil)
	stored, ok, err := sqlcore.BatchAnswer(ctx, judged, err, translate)
	if ok && created > 0 && lease.Owner == "" {
		s.w.Committed()
	}
	return stored, ok, err
}

// batchArgs are pgWriteBatchSQL's arguments for the judged batch b.
func (s *Store) batchArgs(b payoutkit.PayoutBatch, plan sqlcore.BatchPlan, lease payoutkit.Lease) ([]any, error) {
	record, err := s.ops.BatchRecordArgs(b)
	if err != nil {
		return nil, err
	}
	m := len(plan.Created)
	ids, assets, nets, addrs, payers, approvals := make([]string, m), make([]string, m), make([]string, m), make([]string, m), make([]string, m), make([]string, m)
	amounts := make([]int64, m)
	evIDs, subjects, bodies := make([]string, m), make([]string, m), make([][]byte, m)
	payerTotals := map[string]int64{}
	var payerOrder []string
	for i, it := range plan.Created {
		p, ev := it.Payout, it.Event
		ids[i], amounts[i], assets[i], nets[i], addrs[i], payers[i], approvals[i] = p.PayoutID, int64(p.Amount), p.Asset, p.Network, p.Address, p.PayerID, string(p.Approval)
		evIDs[i], subjects[i], bodies[i] = ev.ID, ev.Subject, ev.Body
		if _, ok := payerTotals[p.PayerID]; !ok {
			payerOrder = append(payerOrder, p.PayerID)
		}
		payerTotals[p.PayerID] += int64(p.Amount)
	}
	payerAmounts := make([]int64, len(payerOrder))
	for i, payer := range payerOrder {
		payerAmounts[i] = payerTotals[payer]
	}
	owner, _, until := sqlcore.LeaseArgs(lease, ts)
	return append(record, ids, amounts, assets, nets, addrs, payers, approvals, plan.Total, evIDs, subjects, bodies,
		payerOrder, payerAmounts, m, owner, until), nil
}
