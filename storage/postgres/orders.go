package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

const (
	selectOrderSQL = `SELECT ` + sqlcore.OrderCols + ` FROM orders WHERE workspace_id = $1 AND order_id = $2`
	insertOrderSQL = `INSERT INTO orders (` + sqlcore.OrderCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (workspace_id, order_id) DO NOTHING`
	balanceSQL = `SELECT available, in_progress FROM balances WHERE workspace_id = $1`
)

// CreateOrder implements payoutkit.OrderStore.
func (s *Store) CreateOrder(ctx context.Context, o payoutkit.Order) (payoutkit.Order, bool, error) {
	res, err := s.w.Exec(ctx, o.WorkspaceID, insertOrderSQL,
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

// MarkOrderPaid implements payoutkit.OrderStore: one statement, which
// credits all or nothing.
func (s *Store) MarkOrderPaid(ctx context.Context, o payoutkit.Order, ev payoutkit.Event) error {
	args := append([]any{o.WorkspaceID, o.OrderID, ts(o.PaidAt), ts(o.UpdatedAt)}, eventArgs(ev)...)
	var paid bool
	err := s.w.Write(ctx, o.WorkspaceID, func(ctx context.Context, tx *sql.Tx) error {
		var n int
		err := tx.QueryRowContext(ctx, pgMarkOrderPaidSQL, args...).Scan(&n)
		paid = n == 1
		return err
	})
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

// Order implements payoutkit.OrderStore.
func (s *Store) Order(ctx context.Context, workspaceID, orderID string) (payoutkit.Order, error) {
	o, err := sqlcore.ScanOrder(s.w.ReadRow(ctx, selectOrderSQL, workspaceID, orderID))
	if err != nil {
		return payoutkit.Order{}, translate(ctx, "order", err)
	}
	return o, nil
}

// Orders implements payoutkit.OrderStore.
func (s *Store) Orders(ctx context.Context, workspaceID string, f payoutkit.OrderFilter, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.Order], error) {
	return sqlcore.ListNewest(ctx, &s.l, "orders", sqlcore.OrderCols, workspaceID,
		sqlcore.NewestFilter{Status: string(f.Status), PayerID: f.PayerID, From: f.CreatedFrom, To: f.CreatedTo}, page,
		sqlcore.ScanOrder, func(o payoutkit.Order) time.Time { return o.CreatedAt })
}

// Balance implements payoutkit.LedgerStore.
func (s *Store) Balance(ctx context.Context, workspaceID string) (payoutkit.Balance, error) {
	var b payoutkit.Balance
	err := s.w.ReadRow(ctx, balanceSQL, workspaceID).Scan(&b.Available, &b.InProgress)
	if err != nil {
		return payoutkit.Balance{}, translate(ctx, "balance", err)
	}
	return b, nil
}

// Ledger implements payoutkit.LedgerStore.
func (s *Store) Ledger(ctx context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.LedgerEntry], error) {
	return sqlcore.List(ctx, &s.l, "ledger", workspaceID, page, sqlcore.LedgerPageSQL, sqlcore.ScanLedger)
}

// Audit implements payoutkit.LedgerStore. It is one statement, and so one
// consistent snapshot: every sum sees the same commits.
func (s *Store) Audit(ctx context.Context, workspaceID string) (payoutkit.Audit, error) {
	a, err := sqlcore.ReadAudit(ctx, s.w.Reader(), workspaceID)
	if err != nil {
		return payoutkit.Audit{}, translate(ctx, "audit", err)
	}
	return a, nil
}

// Customers implements payoutkit.LedgerStore.
func (s *Store) Customers(ctx context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.Customer], error) {
	return sqlcore.List(ctx, &s.l, "customers", workspaceID, page, sqlcore.CustomerPageSQL, sqlcore.ScanCustomer)
}
