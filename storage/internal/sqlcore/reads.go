package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/payoutkit/payoutkit"
)

// Pages of List, the same on both databases: $1 the workspace, $2 the seq
// to start below, $3 the number of rows; seq last.
const (
	LedgerPageSQL   = `SELECT ` + LedgerCols + `, seq FROM ledger_entries WHERE workspace_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`
	CustomerPageSQL = `SELECT ` + CustomerCols + `, seq FROM customers WHERE workspace_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`
	EventPageSQL    = `SELECT ` + EventCols + `, seq FROM events WHERE workspace_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`
)

// auditSQL sums a workspace's money in one statement, and so one snapshot.
const auditSQL = `SELECT b.available, b.in_progress, l.total, o.paid, o.payer_paid,
		ps.submitted, pc.completed, c.paid_in, c.paid_out, c.in_progress,
		pn.submitted, pn.completed, pn.failed, pd.submitted, pd.completed, pd.failed
		FROM balances b,
		(SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) AS total FROM ledger_entries WHERE workspace_id = $1) l,
		(SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) AS paid,
			CAST(COALESCE(SUM(CASE WHEN payer_id <> '' THEN amount ELSE 0 END), 0) AS BIGINT) AS payer_paid
			FROM orders WHERE workspace_id = $1 AND status = 'paid') o,
		(SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) AS submitted FROM payouts WHERE workspace_id = $1 AND status = 'submitted') ps,
		(SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) AS completed FROM payouts WHERE workspace_id = $1 AND status = 'completed') pc,
		(SELECT CAST(COALESCE(SUM(paid_in), 0) AS BIGINT) AS paid_in, CAST(COALESCE(SUM(paid_out), 0) AS BIGINT) AS paid_out,
			CAST(COALESCE(SUM(in_progress), 0) AS BIGINT) AS in_progress
			FROM customers WHERE workspace_id = $1) c,
		(SELECT COUNT(CASE WHEN status = 'submitted' THEN 1 END) AS submitted, COUNT(CASE WHEN status = 'completed' THEN 1 END) AS completed,
			COUNT(CASE WHEN status = 'failed' THEN 1 END) AS failed FROM payouts WHERE workspace_id = $1) pn,
		(SELECT CAST(COALESCE(SUM(submitted), 0) AS BIGINT) AS submitted, CAST(COALESCE(SUM(completed), 0) AS BIGINT) AS completed,
			CAST(COALESCE(SUM(failed), 0) AS BIGINT) AS failed FROM payout_days WHERE workspace_id = $1) pd
		WHERE b.workspace_id = $1`

// ReadAudit reads a workspace's audit sums through q, in one statement.
func ReadAudit(ctx context.Context, q Querier, workspaceID string) (payoutkit.Audit, error) {
	var a payoutkit.Audit
	err := q.QueryRowContext(ctx, auditSQL, workspaceID).
		Scan(&a.Available, &a.InProgress, &a.LedgerSum, &a.PaidOrders, &a.PayerPaidOrders, &a.SubmittedPayouts, &a.CompletedPayouts,
			&a.CustomersPaidIn, &a.CustomersPaidOut, &a.CustomersInProgress,
			&a.PayoutCounts[0], &a.PayoutCounts[1], &a.PayoutCounts[2], &a.DayCounters[0], &a.DayCounters[1], &a.DayCounters[2])
	return a, err
}

// ReadEvent reads one event of a workspace through q.
func ReadEvent(ctx context.Context, q Querier, workspaceID, eventID string) (payoutkit.Event, error) {
	return ScanEvent(q.QueryRowContext(ctx, `SELECT `+EventCols+` FROM events WHERE id = $1 AND workspace_id = $2`, eventID, workspaceID))
}

// PruneBoundSQL is the seq of the first event recorded at or after $1 (the
// prune's cutoff), or the largest seq there can be: the prune of delivered
// events looks at the events before it only. Events are recorded in about
// the order of their seq, so those after it are not old enough, and with
// nothing to prune the search reads a page or two instead of walking the
// whole table (a million events: 200,000 pages read every ten minutes,
// pushing the hot pages out of PostgreSQL's buffers). An old event that
// came after a newer one (clocks of two instances apart) waits for the
// next prune that passes the newer one too.
const PruneBoundSQL = `COALESCE((SELECT seq FROM events WHERE created_at >= $1 ORDER BY seq LIMIT 1), 9223372036854775807)`

// SubjectEventsSQL reads a subject's events ($1 workspace, $2 subject), oldest first.
const SubjectEventsSQL = `SELECT ` + EventCols + ` FROM events WHERE workspace_id = $1 AND subject = $2 ORDER BY seq`

// SubjectEvents reads a subject's events through q, oldest first; an
// unknown workspace is sql.ErrNoRows, not an empty subject.
func SubjectEvents(ctx context.Context, q Querier, workspaceID, subject string) ([]payoutkit.Event, error) {
	rows, err := q.QueryContext(ctx, SubjectEventsSQL, workspaceID, subject)
	if err != nil {
		return nil, err
	}
	evs, err := Collect(rows, func(sc Scanner) (payoutkit.Event, error) { return ScanEvent(sc) })
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 { // an unknown workspace is not an empty subject
		if err := WorkspaceExists(ctx, q, workspaceID); err != nil {
			return nil, err
		}
	}
	return evs, nil
}

// DeliveredCols are the columns where a delivered event keeps its
// successful attempt: its time, status code, latency and response head
// (DeliveredArgs). Failed attempts are rows of delivery_attempts.
const DeliveredCols = `delivered_at, delivered_status, delivered_latency_ns, delivered_head`

// deliveredAttemptCols read an event's delivered attempt as AttemptCols.
const deliveredAttemptCols = `id, attempts, delivered_at, delivered_status, delivered_latency_ns, '', delivered_head`

// DeliveredArgs are a's DeliveredCols, its time as ts stores it.
func DeliveredArgs(a payoutkit.DeliveryAttempt, ts func(time.Time) any) []any {
	return []any{ts(a.At), a.StatusCode, int64(a.Latency), CleanText(a.ResponseHead)}
}

// DeliveryAttempts reads an event's attempts through q, oldest first: the
// rows of delivery_attempts and the delivered one its event keeps.
func DeliveryAttempts(ctx context.Context, q Querier, eventID string) ([]payoutkit.DeliveryAttempt, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+AttemptCols+` FROM (
		SELECT `+AttemptCols+`, seq AS ord FROM delivery_attempts WHERE event_id = $1
		UNION ALL
		SELECT `+deliveredAttemptCols+`, 0 FROM events WHERE id = $1 AND delivered_at IS NOT NULL
	) a ORDER BY attempt, ord`, eventID)
	if err != nil {
		return nil, err
	}
	return Collect(rows, ScanAttempt)
}

// ResendEvent implements payoutkit.Store: one transaction makes a settled
// event pending again, due at now, after moving the attempt a delivered one
// kept (DeliveredCols) into a row of delivery_attempts, so that a later one
// takes its place.
func (o *Ops) ResendEvent(ctx context.Context, workspaceID, eventID string, now time.Time) error {
	var res sql.Result
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO delivery_attempts (`+AttemptCols+`)
			SELECT `+deliveredAttemptCols+` FROM events
			WHERE id = $1 AND workspace_id = $2 AND state <> 'pending' AND delivered_at IS NOT NULL`, eventID, workspaceID); err != nil {
			return err
		}
		var err error
		res, err = tx.ExecContext(ctx, `UPDATE events SET state = 'pending', next_attempt_at = $3, lease_owner = NULL, lease_until = NULL,
				delivered_at = NULL, delivered_status = NULL, delivered_latency_ns = NULL, delivered_head = NULL
			WHERE id = $1 AND workspace_id = $2 AND state <> 'pending'`, eventID, workspaceID, o.c.TS(now))
		return err
	})
	if err != nil {
		return o.c.Translate(ctx, "resend event", err)
	}
	if err := MustAffect(res, ErrNothingToCommit); err == nil || !errors.Is(err, ErrNothingToCommit) {
		if err == nil {
			o.w.Committed()
		}
		return err
	}
	// Already pending, or not there.
	_, err = o.Event(ctx, workspaceID, eventID)
	return err
}

// OutboxHealth reads the outbox's counts through q in one statement. A
// failed event is counted as not sent when its last error is
// payoutkit.NoWebhookURLError, as EventDelivery.EventState has it; both
// counts come from one pass over the failed events.
func OutboxHealth(ctx context.Context, q Querier) (payoutkit.OutboxHealth, error) {
	var h payoutkit.OutboxHealth
	err := q.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM events WHERE state = 'pending'),
		(SELECT count(*) FROM events WHERE state = 'delivered'),
		f.failed, f.not_sent,
		(SELECT MIN(created_at) FROM events WHERE state = 'pending')
		FROM (SELECT
			COALESCE(SUM(CASE WHEN last_error = $1 THEN 0 ELSE 1 END), 0) AS failed,
			COALESCE(SUM(CASE WHEN last_error = $1 THEN 1 ELSE 0 END), 0) AS not_sent
			FROM events WHERE state = 'failed') f`, payoutkit.NoWebhookURLError).
		Scan(&h.Pending, &h.Delivered, &h.Failed, &h.NotSent, TimeCol{&h.OldestPending})
	return h, err
}

// WorkspaceIDs lists the workspaces' ids through q, oldest first.
func WorkspaceIDs(ctx context.Context, q Querier) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT id FROM workspaces ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	return Collect(rows, func(sc Scanner) (string, error) {
		var id string
		err := sc.Scan(&id)
		return id, err
	})
}

// APIKeys lists a workspace's keys through q, newest first; none is an
// empty slice, not nil.
func APIKeys(ctx context.Context, q Querier, workspaceID string) ([]payoutkit.APIKey, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+KeyCols+` FROM api_keys WHERE workspace_id = $1 ORDER BY created_at DESC, prefix DESC`, workspaceID)
	if err != nil {
		return nil, err
	}
	keys, err := Collect(rows, ScanKey)
	if keys == nil && err == nil {
		keys = []payoutkit.APIKey{}
	}
	return keys, err
}

// Point reads, which the SQLite store prepares and the PostgreSQL store
// groups.
const (
	SelectPayoutSQL = `SELECT ` + PayoutReadCols + ` FROM payouts WHERE workspace_id = $1 AND payout_id = $2`
	SelectOrderSQL  = `SELECT ` + OrderCols + ` FROM orders WHERE workspace_id = $1 AND order_id = $2`
	BalanceSQL      = `SELECT available, in_progress FROM balances WHERE workspace_id = $1`
)

// Payout implements payoutkit.Store.
func (o *Ops) Payout(ctx context.Context, workspaceID, payoutID string) (payoutkit.Payout, error) {
	p, err := ScanPayout(o.w.ReadRow(ctx, SelectPayoutSQL, workspaceID, payoutID))
	if err != nil {
		return payoutkit.Payout{}, o.c.Translate(ctx, "payout", err)
	}
	return p, nil
}

// Payouts implements payoutkit.Store.
func (o *Ops) Payouts(ctx context.Context, workspaceID string, f payoutkit.PayoutFilter, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.Payout], error) {
	return ListNewest(ctx, o, "payouts", PayoutReadCols, workspaceID,
		NewestFilter{Status: string(f.Status), PayerID: f.PayerID, From: f.CreatedFrom, To: f.CreatedTo, Approval: string(f.Approval)}, page,
		ScanPayout, func(p payoutkit.Payout) time.Time { return p.CreatedAt })
}

// Order implements payoutkit.Store.
func (o *Ops) Order(ctx context.Context, workspaceID, orderID string) (payoutkit.Order, error) {
	ord, err := ScanOrder(o.w.ReadRow(ctx, SelectOrderSQL, workspaceID, orderID))
	if err != nil {
		return payoutkit.Order{}, o.c.Translate(ctx, "order", err)
	}
	return ord, nil
}

// Orders implements payoutkit.Store.
func (o *Ops) Orders(ctx context.Context, workspaceID string, f payoutkit.OrderFilter, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.Order], error) {
	return ListNewest(ctx, o, "orders", OrderCols, workspaceID,
		NewestFilter{Status: string(f.Status), PayerID: f.PayerID, From: f.CreatedFrom, To: f.CreatedTo}, page,
		ScanOrder, func(ord payoutkit.Order) time.Time { return ord.CreatedAt })
}

// Balance implements payoutkit.Store.
func (o *Ops) Balance(ctx context.Context, workspaceID string) (payoutkit.Balance, error) {
	var b payoutkit.Balance
	err := o.w.ReadRow(ctx, BalanceSQL, workspaceID).Scan(&b.Available, &b.InProgress)
	if err != nil {
		return payoutkit.Balance{}, o.c.Translate(ctx, "balance", err)
	}
	return b, nil
}

// Ledger implements payoutkit.Store.
func (o *Ops) Ledger(ctx context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.LedgerEntry], error) {
	return List(ctx, o, "ledger", workspaceID, page, LedgerPageSQL, ScanLedger)
}

// Audit implements payoutkit.Store. It is one statement, and so one
// consistent snapshot: every sum sees the same commits.
func (o *Ops) Audit(ctx context.Context, workspaceID string) (payoutkit.Audit, error) {
	a, err := ReadAudit(ctx, o.w.Reader(), workspaceID)
	if err != nil {
		return payoutkit.Audit{}, o.c.Translate(ctx, "audit", err)
	}
	return a, nil
}

// Customers implements payoutkit.Store.
func (o *Ops) Customers(ctx context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.Customer], error) {
	return List(ctx, o, "customers", workspaceID, page, CustomerPageSQL, ScanCustomer)
}

// Events implements payoutkit.Store.
func (o *Ops) Events(ctx context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.Event], error) {
	return List(ctx, o, "events", workspaceID, page, EventPageSQL, ScanEvent)
}

// Event implements payoutkit.Store.
func (o *Ops) Event(ctx context.Context, workspaceID, eventID string) (payoutkit.Event, error) {
	ev, err := ReadEvent(ctx, o.w.Reader(), workspaceID, eventID)
	if err != nil {
		return payoutkit.Event{}, o.c.Translate(ctx, "event", err)
	}
	return ev, nil
}

// SubjectEvents implements payoutkit.Store.
func (o *Ops) SubjectEvents(ctx context.Context, workspaceID, subject string) ([]payoutkit.Event, error) {
	evs, err := SubjectEvents(ctx, o.w.Reader(), workspaceID, subject)
	return evs, o.c.Translate(ctx, "subject events", err)
}

// DeliveryAttempts implements payoutkit.Store.
func (o *Ops) DeliveryAttempts(ctx context.Context, workspaceID, eventID string) ([]payoutkit.DeliveryAttempt, error) {
	if _, err := o.Event(ctx, workspaceID, eventID); err != nil {
		return nil, err
	}
	out, err := DeliveryAttempts(ctx, o.w.Reader(), eventID)
	return out, o.c.Translate(ctx, "delivery attempts", err)
}

// OutboxHealth implements payoutkit.Store: one statement, one snapshot.
func (o *Ops) OutboxHealth(ctx context.Context) (payoutkit.OutboxHealth, error) {
	h, err := OutboxHealth(ctx, o.w.Reader())
	if err != nil {
		return payoutkit.OutboxHealth{}, o.c.Translate(ctx, "outbox health", err)
	}
	return h, nil
}

// perDaySQL reads the workspace's day counters (migration
// 0012_payout_days) of the days [$2, $3): a range of their primary key.
const perDaySQL = `SELECT day, submitted, completed, failed FROM payout_days
	WHERE workspace_id = $1 AND day >= $2 AND day < $3 ORDER BY day`

// PayoutsPerDay implements payoutkit.Store: it reads the day
// counters that every create and settlement keeps (AddPayoutDaySQL,
// SettlePayoutDaySQL), one row a day.
func (o *Ops) PayoutsPerDay(ctx context.Context, workspaceID string, from, to time.Time) ([]payoutkit.DayCount, error) {
	first, end := payoutkit.PayoutDayRange(from, to)
	rows, err := o.w.Reader().QueryContext(ctx, perDaySQL, workspaceID, first, end)
	if err != nil {
		return nil, o.c.Translate(ctx, "payouts per day", err)
	}
	defer rows.Close()
	var out []payoutkit.DayCount
	for rows.Next() {
		var day, sub, done, failed int64
		if err := rows.Scan(&day, &sub, &done, &failed); err != nil {
			return nil, o.c.Translate(ctx, "payouts per day", err)
		}
		if sub+done+failed == 0 {
			continue
		}
		out = append(out, payoutkit.DayCount{Day: time.Unix(day*86400, 0).UTC(),
			Completed: int(done), Failed: int(failed), InProgress: int(sub)})
	}
	if err := rows.Err(); err != nil {
		return nil, o.c.Translate(ctx, "payouts per day", err)
	}
	if len(out) == 0 {
		if err := WorkspaceExists(ctx, o.w.Reader(), workspaceID); err != nil {
			return nil, o.c.Translate(ctx, "payouts per day", err)
		}
	}
	return out, nil
}

// AddPayoutDaySQL adds a created payout to its day's counters: $1 the
// workspace, $2 the day (payoutkit.PayoutDay of its created_at).
const AddPayoutDaySQL = `INSERT INTO payout_days (workspace_id, day, submitted) VALUES ($1, $2, 1)
	ON CONFLICT (workspace_id, day) DO UPDATE SET submitted = payout_days.submitted + 1`

// SettlePayoutDaySQL moves a settled payout from submitted to completed
// ($3 'completed') or failed on its day's counters: $1 the workspace,
// $2 the day of its creation.
const SettlePayoutDaySQL = `UPDATE payout_days SET submitted = submitted - 1,
	completed = completed + CASE WHEN $3 = 'completed' THEN 1 ELSE 0 END,
	failed = failed + CASE WHEN $3 = 'completed' THEN 0 ELSE 1 END
	WHERE workspace_id = $1 AND day = $2`
