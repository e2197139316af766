package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

const (
	insertOrderSQL = `INSERT INTO orders (` + sqlcore.OrderCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (workspace_id, order_id) DO NOTHING`
	// MarkOrderPaid: the conditional status change, then the credit.
	payOrderSQL = `UPDATE orders SET status = 'paid', paid_at = $3, updated_at = $4
		WHERE workspace_id = $1 AND order_id = $2 AND status = 'pending' RETURNING amount, payer_id`
	creditSQL = `UPDATE balances SET available = available + $2 WHERE workspace_id = $1`
)

// CreateOrder implements payoutkit.Store.
func (s *Store) CreateOrder(ctx context.Context, o payoutkit.Order) (payoutkit.Order, bool, error) {
	res, err := s.execWrite(ctx, insertOrderSQL,
		o.WorkspaceID, o.OrderID, string(o.Status), int64(o.Amount), o.PayerID, o.Description,
		ts(o.CreatedAt), ts(o.UpdatedAt), ts(o.PaidAt))
	if err != nil {
		return payoutkit.Order{}, false, translate(ctx, "create order", err)
	}
	if err := sqlcore.MustAffect(res, sqlcore.ErrNothingToCommit); err == nil {
		return o, true, nil
	} else if !errors.Is(err, sqlcore.ErrNothingToCommit) {
		return payoutkit.Order{}, false, err
	}
	// The id is taken, by a row committed before the insert looked.
	stored, err := s.Order(ctx, o.WorkspaceID, o.OrderID)
	if err != nil {
		return payoutkit.Order{}, false, err
	}
	return stored, false, nil
}

// MarkOrderPaid implements payoutkit.Store.
func (s *Store) MarkOrderPaid(ctx context.Context, o payoutkit.Order, ev payoutkit.Event) error {
	var paid bool
	err := s.w.Write(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		paid = false
		var amount int64
		var payer string
		err := s.st.queryRow(ctx, tx, payOrderSQL, o.WorkspaceID, o.OrderID, ts(o.PaidAt), ts(o.UpdatedAt)).Scan(&amount, &payer)
		if errors.Is(err, sql.ErrNoRows) {
			return sqlcore.ErrNothingToCommit
		} else if err != nil {
			return err
		}
		if _, err := s.st.exec(ctx, tx, creditSQL, o.WorkspaceID, amount); err != nil {
			return err
		}
		if payer != "" { // an order without a payer is nobody's: no customer
			if _, err := s.st.exec(ctx, tx, moveCustomerSQL, o.WorkspaceID, payer, amount, 0, 0, ts(o.PaidAt)); err != nil {
				return err
			}
		}
		if _, err := s.st.exec(ctx, tx, insertLedgerSQL,
			o.WorkspaceID, string(payoutkit.LedgerOrderCredit), amount, o.OrderID, ev.ID, ts(ev.CreatedAt)); err != nil {
			return err
		}
		if _, err := s.st.exec(ctx, tx, insertEventSQL, append([]any{o.WorkspaceID}, eventArgs(ev)...)...); err != nil {
			return err
		}
		paid = true
		return nil
	})
	if errors.Is(err, sqlcore.ErrNothingToCommit) {
		err = nil
	}
	if err != nil {
		return translate(ctx, "mark order paid", err)
	}
	if !paid { // not pending, or not there
		if _, err := s.Order(ctx, o.WorkspaceID, o.OrderID); err != nil {
			return err
		}
		return payoutkit.ErrConflict
	}
	s.w.Committed()
	return nil
}
