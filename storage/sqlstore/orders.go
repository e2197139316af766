package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"time"

	"github.com/payoutkit/payoutkit"
)

const (
	selectOrderSQL = `SELECT ` + orderCols + ` FROM orders WHERE workspace_id = $1 AND order_id = $2`
	insertOrderSQL = `INSERT INTO orders (` + orderCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (workspace_id, order_id) DO NOTHING`
	// SQLite's MarkOrderPaid: the conditional status change, then the credit.
	payOrderSQL = `UPDATE orders SET status = 'paid', paid_at = $3, updated_at = $4
		WHERE workspace_id = $1 AND order_id = $2 AND status = 'pending' RETURNING amount, payer_id`
	creditSQL  = `UPDATE balances SET available = available + $2 WHERE workspace_id = $1`
	balanceSQL = `SELECT available, in_progress FROM balances WHERE workspace_id = $1`
)

// CreateOrder implements payoutkit.OrderStore.
func (s *Store) CreateOrder(ctx context.Context, o payoutkit.Order) (payoutkit.Order, bool, error) {
	res, err := s.writeExec(ctx, o.WorkspaceID, insertOrderSQL,
		o.WorkspaceID, o.OrderID, string(o.Status), int64(o.Amount), o.PayerID, o.Description,
		s.ts(o.CreatedAt), s.ts(o.UpdatedAt), s.ts(o.PaidAt))
	if err != nil {
		return payoutkit.Order{}, false, translate(ctx, "create order", err)
	}
	if err := mustAffect(res, errNothingToCommit); err == nil {
		return o, true, nil
	} else if !errors.Is(err, errNothingToCommit) {
		return payoutkit.Order{}, false, err
	}
	// The id is taken, by a row committed before the insert looked.
	stored, err := s.Order(ctx, o.WorkspaceID, o.OrderID)
	if err != nil {
		return payoutkit.Order{}, false, err
	}
	return stored, false, nil
}

// MarkOrderPaid implements payoutkit.OrderStore.
func (s *Store) MarkOrderPaid(ctx context.Context, o payoutkit.Order, ev payoutkit.Event) error {
	var paid bool
	var err error
	if s.pg() {
		args := append([]any{o.WorkspaceID, o.OrderID, s.ts(o.PaidAt), s.ts(o.UpdatedAt)}, s.eventArgs(ev)...)
		err = s.writeTx(ctx, o.WorkspaceID, func(ctx context.Context, tx *sql.Tx) error {
			var n int
			err := tx.QueryRowContext(ctx, s.q.pgMarkOrderPaid, args...).Scan(&n)
			paid = n == 1
			return err
		})
	} else {
		err = s.writeTx(ctx, o.WorkspaceID, func(ctx context.Context, tx *sql.Tx) error {
			var amount int64
			var payer string
			err := s.txQueryRow(ctx, tx, payOrderSQL, o.WorkspaceID, o.OrderID, s.ts(o.PaidAt), s.ts(o.UpdatedAt)).Scan(&amount, &payer)
			if errors.Is(err, sql.ErrNoRows) {
				return errNothingToCommit
			} else if err != nil {
				return err
			}
			if _, err := s.txExec(ctx, tx, creditSQL, o.WorkspaceID, amount); err != nil {
				return err
			}
			if payer != "" { // an order without a payer is nobody's: no customer
				if _, err := s.txExec(ctx, tx, moveCustomerSQL, o.WorkspaceID, payer, amount, 0, 0, s.ts(o.PaidAt)); err != nil {
					return err
				}
			}
			if _, err := s.txExec(ctx, tx, insertLedgerSQL,
				o.WorkspaceID, string(payoutkit.LedgerOrderCredit), amount, o.OrderID, ev.ID, s.ts(ev.CreatedAt)); err != nil {
				return err
			}
			if _, err := s.txExec(ctx, tx, insertEventSQL, append([]any{o.WorkspaceID}, s.eventArgs(ev)...)...); err != nil {
				return err
			}
			paid = true
			return nil
		})
		if errors.Is(err, errNothingToCommit) {
			err = nil
		}
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
	s.workCommitted()
	return nil
}

// Order implements payoutkit.OrderStore.
func (s *Store) Order(ctx context.Context, workspaceID, orderID string) (payoutkit.Order, error) {
	o, err := scanOrder(s.readRow(ctx, selectOrderSQL, workspaceID, orderID))
	if err != nil {
		return payoutkit.Order{}, translate(ctx, "order", err)
	}
	return o, nil
}

// Orders implements payoutkit.OrderStore.
func (s *Store) Orders(ctx context.Context, workspaceID string, f payoutkit.OrderFilter, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.Order], error) {
	return listNewest(ctx, s, "orders", orderCols, workspaceID,
		newestFilter{string(f.Status), f.PayerID, f.CreatedFrom, f.CreatedTo}, page,
		scanOrder, func(o payoutkit.Order) time.Time { return o.CreatedAt })
}

// Balance implements payoutkit.LedgerStore.
func (s *Store) Balance(ctx context.Context, workspaceID string) (payoutkit.Balance, error) {
	var b payoutkit.Balance
	err := s.readRow(ctx, balanceSQL, workspaceID).Scan(&b.Available, &b.InProgress)
	if err != nil {
		return payoutkit.Balance{}, translate(ctx, "balance", err)
	}
	return b, nil
}

// Ledger implements payoutkit.LedgerStore.
func (s *Store) Ledger(ctx context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.LedgerEntry], error) {
	return list(ctx, s, "ledger", workspaceID, page,
		`SELECT `+ledgerCols+`, seq FROM ledger_entries WHERE workspace_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`, scanLedger)
}

// Audit implements payoutkit.LedgerStore. It is one statement, and so one
// consistent snapshot on both dialects: every sum sees the same commits.
func (s *Store) Audit(ctx context.Context, workspaceID string) (payoutkit.Audit, error) {
	var a payoutkit.Audit
	err := s.reader().QueryRowContext(ctx, `SELECT b.available, b.in_progress, l.total, o.paid, o.payer_paid,
		ps.submitted, pc.completed, c.paid_in, c.paid_out, c.in_progress
		FROM balances b,
		(SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) AS total FROM ledger_entries WHERE workspace_id = $1) l,
		(SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) AS paid,
			CAST(COALESCE(SUM(CASE WHEN payer_id <> '' THEN amount ELSE 0 END), 0) AS BIGINT) AS payer_paid
			FROM orders WHERE workspace_id = $1 AND status = 'paid') o,
		(SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) AS submitted FROM payouts WHERE workspace_id = $1 AND status = 'submitted') ps,
		(SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) AS completed FROM payouts WHERE workspace_id = $1 AND status = 'completed') pc,
		(SELECT CAST(COALESCE(SUM(paid_in), 0) AS BIGINT) AS paid_in, CAST(COALESCE(SUM(paid_out), 0) AS BIGINT) AS paid_out,
			CAST(COALESCE(SUM(in_progress), 0) AS BIGINT) AS in_progress
			FROM customers WHERE workspace_id = $1) c
		WHERE b.workspace_id = $1`, workspaceID).
		Scan(&a.Available, &a.InProgress, &a.LedgerSum, &a.PaidOrders, &a.PayerPaidOrders, &a.SubmittedPayouts, &a.CompletedPayouts,
			&a.CustomersPaidIn, &a.CustomersPaidOut, &a.CustomersInProgress)
	if err != nil {
		return payoutkit.Audit{}, translate(ctx, "audit", err)
	}
	return a, nil
}

const customerCols = `workspace_id, payer_id, paid_in, paid_out, in_progress, first_seen_at`

func scanCustomer(sc scanner, extra ...any) (payoutkit.Customer, error) {
	var c payoutkit.Customer
	err := sc.Scan(append([]any{&c.WorkspaceID, &c.PayerID, &c.PaidIn, &c.PaidOut, &c.InProgress, timeCol{&c.FirstSeenAt}}, extra...)...)
	return c, err
}

// Customers implements payoutkit.LedgerStore.
func (s *Store) Customers(ctx context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.Customer], error) {
	return list(ctx, s, "customers", workspaceID, page,
		`SELECT `+customerCols+`, seq FROM customers WHERE workspace_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`, scanCustomer)
}

// list reads one newest-first page: query takes $1 the workspace, $2 the
// seq to start below, $3 the number of rows and $4... the args, and selects
// seq last. It asks for one row more than the page holds to learn whether a
// next page exists.
func list[T any](ctx context.Context, s *Store, op, workspaceID string, req payoutkit.PageRequest, query string,
	scan func(scanner, ...any) (T, error), args ...any,
) (payoutkit.Page[T], error) {
	req = req.Normalize()
	before, err := parseCursor(req.Cursor)
	if err != nil {
		return payoutkit.Page[T]{}, err
	}
	rows, err := s.reader().QueryContext(ctx, query, append([]any{workspaceID, before, req.Limit + 1}, args...)...)
	if err != nil {
		return payoutkit.Page[T]{}, translate(ctx, op, err)
	}
	items, seqs, err := collectSeqs(rows, scan)
	if err != nil {
		return payoutkit.Page[T]{}, translate(ctx, op, err)
	}
	var page payoutkit.Page[T]
	if len(items) > req.Limit {
		items = items[:req.Limit]
		page.Next = strconv.FormatInt(seqs[req.Limit-1], 10)
	}
	page.Items = items
	if len(items) == 0 {
		if err := s.workspaceExists(ctx, s.reader(), workspaceID); err != nil {
			return payoutkit.Page[T]{}, translate(ctx, op, err)
		}
	}
	return page, nil
}

// parseCursor reads a Page.Next: the decimal seq of the last row shown.
// The empty cursor starts at the newest row.
func parseCursor(c string) (int64, error) {
	if c == "" {
		return 1<<63 - 1, nil
	}
	for i := 0; i < len(c); i++ {
		if c[i] < '0' || c[i] > '9' {
			return 0, payoutkit.ErrInvalidInput
		}
	}
	n, err := strconv.ParseInt(c, 10, 64)
	if err != nil || n <= 0 {
		return 0, payoutkit.ErrInvalidInput
	}
	return n, nil
}
