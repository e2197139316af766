package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/payoutkit/payoutkit"
)

// A batch create (payoutkit.Store.CreatePayoutBatch) is judged here, on
// both databases, and written by each store's own statements: it locks the
// balance row once (where the database needs it), reads what
// payoutkit.BatchCheck needs in a few statements whatever the batch's size,
// and judges every item in memory.

const (
	selectBatchSQL = `SELECT created_at, all_or_nothing, accepted, refused, accepted_amount, items
		FROM payout_batches WHERE workspace_id = $1 AND batch_id = $2`
	// batchStateSQL: the balance, and the policy with the window when the
	// workspace has one.
	batchStateSQL = `SELECT b.available, p.max_payout, p.daily_limit, p.approval_over, p.address_allowlist, p.cooling_off,
		b.window_pos, b.window_spent, b.window_next
		FROM balances b LEFT JOIN payout_policies p ON p.workspace_id = b.workspace_id WHERE b.workspace_id = $1`
	selectBookSQL = `SELECT network, address_key, usable_from FROM address_book WHERE workspace_id = $1`
	// listBatchesSQL is List's query of the batches, newest first.
	listBatchesSQL = `SELECT workspace_id, batch_id, created_at, all_or_nothing, accepted, refused, accepted_amount, seq
		FROM payout_batches WHERE workspace_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`
)

// InsertBatchCols are the columns a store writes a batch with
// (BatchRecordArgs).
const InsertBatchCols = `workspace_id, batch_id, created_at, all_or_nothing, accepted, refused, accepted_amount, items`

// batchItem is one item of a batch as its row's items keep it: what it
// asked for and what it was answered.
type batchItem struct {
	PayoutID string         `json:"payout_id"`
	Amount   int64          `json:"amount"`
	Asset    string         `json:"asset"`
	Network  string         `json:"network"`
	Address  string         `json:"address"`
	PayerID  string         `json:"payer_id"`
	Code     payoutkit.Code `json:"code"`
	Message  string         `json:"message"`
	Created  bool           `json:"created,omitempty"`
}

// BatchPlan is a judged batch: the items to create, in order, and, under a
// daily limit, the balance row's window once they are debited.
type BatchPlan struct {
	Created []payoutkit.BatchItem
	Window  *Window
	// Total is the sum of Created's amounts.
	Total int64
}

// JudgeBatch judges the batch b of items in tx: it locks the balance row
// (OpsConfig.LockBalanceSQL), returns the stored batch as ErrNothingToCommit
// when b.BatchID is taken, reads a payoutkit.BatchCheck and applies it to b.
// It changes nothing: a refused all-or-nothing batch is
// payoutkit.ErrBatchRefused with b judged, an unknown workspace
// ErrUnknownWorkspace.
func (o *Ops) JudgeBatch(ctx context.Context, tx *sql.Tx, b *payoutkit.PayoutBatch, items []payoutkit.BatchItem) (BatchPlan, error) {
	if o.c.LockBalanceSQL != "" {
		if _, err := tx.ExecContext(ctx, o.c.LockBalanceSQL, b.WorkspaceID); err != nil {
			return BatchPlan{}, err
		}
	}
	switch stored, err := o.readBatch(ctx, tx, b.WorkspaceID, b.BatchID); {
	case err == nil:
		*b = stored
		return BatchPlan{}, ErrNothingToCommit
	case !errors.Is(err, sql.ErrNoRows):
		return BatchPlan{}, err
	}
	var check payoutkit.BatchCheck
	var available int64
	var maxP, daily, approval, cooling sql.NullInt64
	var allowlist sql.NullBool
	var w Window
	err := tx.QueryRowContext(ctx, batchStateSQL, b.WorkspaceID).Scan(&available, &maxP, &daily, &approval, &allowlist, &cooling,
		TimeCol{&w.Pos}, &w.Spent, TimeCol{&w.Next})
	if errors.Is(err, sql.ErrNoRows) {
		return BatchPlan{}, ErrUnknownWorkspace
	} else if err != nil {
		return BatchPlan{}, err
	}
	check.Available = payoutkit.Amount(available)
	check.Policy = payoutkit.PayoutPolicy{MaxPayout: limitOf(maxP), DailyLimit: limitOf(daily), ApprovalOver: limitOf(approval),
		AddressAllowlist: allowlist.Bool, CoolingOff: time.Duration(cooling.Int64) * time.Microsecond}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.Payout.PayoutID
	}
	if check.Existing, err = o.payoutsByID(ctx, tx, b.WorkspaceID, ids); err != nil {
		return BatchPlan{}, err
	}
	if check.Policy.AddressAllowlist {
		if check.Book, err = o.book(ctx, tx, b.WorkspaceID); err != nil {
			return BatchPlan{}, err
		}
	}
	daily = sql.NullInt64{Valid: check.Policy.DailyLimit.Set}
	if daily.Valid {
		if w, err = o.moveWindow(ctx, tx, payoutkit.Payout{WorkspaceID: b.WorkspaceID, CreatedAt: b.CreatedAt}, w); err != nil {
			return BatchPlan{}, err
		}
		check.Spent = payoutkit.Amount(w.Spent)
	}
	plan := BatchPlan{}
	if plan.Created, err = check.Apply(b, items); err != nil {
		return BatchPlan{}, err
	}
	for _, it := range plan.Created {
		plan.Total += int64(it.Payout.Amount)
	}
	if daily.Valid {
		if len(plan.Created) > 0 && b.CreatedAt.After(w.Pos) {
			w.Spent += plan.Total
			if w.Next.IsZero() || b.CreatedAt.Before(w.Next) {
				w.Next = b.CreatedAt
			}
		}
		plan.Window = &w
	}
	return plan, nil
}

// BatchAnswer is a store's CreatePayoutBatch answer after its write of
// judged ended with err: the stored batch (ErrNothingToCommit: a replay),
// a refused all-or-nothing batch as judged, a created one, or the error
// translated.
func BatchAnswer(ctx context.Context, judged payoutkit.PayoutBatch, err error, translate func(context.Context, string, error) error) (payoutkit.PayoutBatch, bool, error) {
	switch {
	case errors.Is(err, ErrNothingToCommit):
		return judged, false, nil
	case errors.Is(err, payoutkit.ErrBatchRefused):
		return judged, false, err
	case err != nil:
		return payoutkit.PayoutBatch{}, false, translate(ctx, "create payout batch", err)
	}
	return judged, true, nil
}

// SetWindow writes the balance row's window after a batch.
func (o *Ops) SetWindow(ctx context.Context, tx *sql.Tx, workspaceID string, w Window) error {
	_, err := tx.ExecContext(ctx, setWindowSQL, append([]any{workspaceID}, o.WindowArgs(w)...)...)
	return err
}

// payoutsByID reads the stored payouts among ids.
func (o *Ops) payoutsByID(ctx context.Context, q Querier, workspaceID string, ids []string) (map[string]payoutkit.Payout, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+PayoutReadCols+` FROM payouts WHERE workspace_id = $1 AND payout_id IN `+o.c.TextList(2),
		workspaceID, o.c.TextListArg(ids))
	if err != nil {
		return nil, err
	}
	list, err := Collect(rows, func(sc Scanner) (payoutkit.Payout, error) { return ScanPayout(sc) })
	if err != nil {
		return nil, err
	}
	out := make(map[string]payoutkit.Payout, len(list))
	for _, p := range list {
		out[p.PayoutID] = p
	}
	return out, nil
}

// book reads the workspace's address book by payoutkit.BookKey.
func (o *Ops) book(ctx context.Context, q Querier, workspaceID string) (map[string]payoutkit.AddressEntry, error) {
	rows, err := q.QueryContext(ctx, selectBookSQL, workspaceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]payoutkit.AddressEntry{}
	for rows.Next() {
		var e payoutkit.AddressEntry
		if err := rows.Scan(&e.Network, &e.Key, TimeCol{&e.UsableFrom}); err != nil {
			return nil, err
		}
		out[payoutkit.BookKey(e.Network, e.Key)] = e
	}
	return out, rows.Err()
}

// readBatch reads a stored batch through q, each accepted item's payout as
// it is now; sql.ErrNoRows when there is none.
func (o *Ops) readBatch(ctx context.Context, q Querier, workspaceID, batchID string) (payoutkit.PayoutBatch, error) {
	b := payoutkit.PayoutBatch{WorkspaceID: workspaceID, BatchID: batchID}
	var amount int64
	var raw []byte
	err := q.QueryRowContext(ctx, selectBatchSQL, workspaceID, batchID).Scan(TimeCol{&b.CreatedAt}, &b.AllOrNothing,
		&b.Accepted, &b.Refused, &amount, &raw)
	if err != nil {
		return payoutkit.PayoutBatch{}, err
	}
	b.AcceptedAmount = payoutkit.Amount(amount)
	var items []batchItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return payoutkit.PayoutBatch{}, fmt.Errorf("sqlstore: batch %s's items: %w", batchID, err)
	}
	b.Results = make([]payoutkit.BatchResult, len(items))
	for i, it := range items {
		b.Results[i] = payoutkit.BatchResult{PayoutID: it.PayoutID, Code: it.Code, Message: it.Message, Created: it.Created,
			Requested: payoutkit.Payout{PayoutID: it.PayoutID, Amount: payoutkit.Amount(it.Amount), Asset: it.Asset, Network: it.Network,
				Address: it.Address, PayerID: it.PayerID}}
	}
	var accepted []string
	for _, r := range b.Results {
		if r.Code == 0 {
			accepted = append(accepted, r.PayoutID)
		}
	}
	if len(accepted) > 0 {
		payouts, err := o.payoutsByID(ctx, q, workspaceID, accepted)
		if err != nil {
			return payoutkit.PayoutBatch{}, err
		}
		for i, r := range b.Results {
			if p, ok := payouts[r.PayoutID]; ok && r.Code == 0 {
				b.Results[i].Payout = &p
			}
		}
	}
	return b, nil
}

// BatchRecordArgs are a batch's InsertBatchCols.
func (o *Ops) BatchRecordArgs(b payoutkit.PayoutBatch) ([]any, error) {
	items := make([]batchItem, len(b.Results))
	for i, r := range b.Results {
		q := r.Requested
		items[i] = batchItem{PayoutID: q.PayoutID, Amount: int64(q.Amount), Asset: q.Asset, Network: q.Network, Address: q.Address,
			PayerID: q.PayerID, Code: r.Code, Message: r.Message, Created: r.Created}
	}
	raw, err := json.Marshal(items)
	return []any{b.WorkspaceID, b.BatchID, o.c.TS(b.CreatedAt), b.AllOrNothing, b.Accepted, b.Refused, int64(b.AcceptedAmount), raw}, err
}

// PayoutBatch implements payoutkit.Store.
func (o *Ops) PayoutBatch(ctx context.Context, workspaceID, batchID string) (payoutkit.PayoutBatch, error) {
	b, err := o.readBatch(ctx, o.w.Reader(), workspaceID, batchID)
	if err != nil {
		return payoutkit.PayoutBatch{}, o.c.Translate(ctx, "payout batch", err)
	}
	return b, nil
}

// PayoutBatches implements payoutkit.Store.
func (o *Ops) PayoutBatches(ctx context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.PayoutBatch], error) {
	return List(ctx, o, "payout batches", workspaceID, page, listBatchesSQL, func(sc Scanner, extra ...any) (payoutkit.PayoutBatch, error) {
		var b payoutkit.PayoutBatch
		var amount int64
		err := sc.Scan(append([]any{&b.WorkspaceID, &b.BatchID, TimeCol{&b.CreatedAt}, &b.AllOrNothing, &b.Accepted, &b.Refused, &amount}, extra...)...)
		b.AcceptedAmount = payoutkit.Amount(amount)
		return b, err
	})
}
