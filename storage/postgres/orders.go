package postgres

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
)

// CreateOrder implements payoutkit.Store.
func (s *Store) CreateOrder(ctx context.Context, o payoutkit.Order) (payoutkit.Order, bool, error) {
	res, err := s.execWrite(ctx, o.WorkspaceID, insertOrderSQL,
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

// MarkOrderPaid implements payoutkit.Store: one statement, which
// credits all or nothing.
func (s *Store) MarkOrderPaid(ctx context.Context, o payoutkit.Order, ev payoutkit.Event) error {
	args := append([]any{o.WorkspaceID, o.OrderID, ts(o.PaidAt), ts(o.UpdatedAt)}, eventArgs(ev)...)
	var paid bool
	err := s.w.Write(ctx, o.WorkspaceID, func(ctx context.Context, tx *sql.Tx) error {
		var n int
		err := tx.QueryRowContext(ctx, pgMarkOrderPaidSQL, args...).Scan(&n)
		paid = n == 1
		return err
	}, nil)
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
