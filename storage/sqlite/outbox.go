package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// The claims: the single writer connection serialises them, so they need
// no row locks.
var claimEventsSQL = sqlcore.ClaimEventsSQL("SELECT value FROM json_each($5)", "")

// claimHandoffsSQL claims the payouts after seq $5 whose hand-off is due
// (submitted, not handed off, not held, lease free), in their order, along
// the partial index payouts_handoff_due. (PostgreSQL keeps a queue table
// instead.)
const claimHandoffsSQL = `WITH due AS MATERIALIZED (
	SELECT seq FROM payouts
	WHERE seq > $5 AND status = 'submitted' AND handed_off_at IS NULL AND approval <> 'pending'
		AND (handoff_lease_until IS NULL OR handoff_lease_until <= $1)
	ORDER BY seq
	LIMIT $3
)
UPDATE payouts SET handoff_lease_until = $2, handoff_owner = $4, handoff_token = handoff_token + 1
WHERE seq IN (SELECT seq FROM due)
RETURNING ` + sqlcore.PayoutReadCols + `, seq, handoff_token`

const (
	insertAttemptSQL = `INSERT INTO delivery_attempts (` + sqlcore.AttemptCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7)`
	// RecordAttempt: the event's new state, if its lease is still owner's.
	recordAttemptSQL = `UPDATE events SET state = $3, attempts = $4, next_attempt_at = $5, last_error = $6,
		lease_owner = NULL, lease_until = NULL
		WHERE id = $1 AND lease_owner = $2 AND state = 'pending'`
	// recordDeliveredSQL is recordAttemptSQL for a delivered event, which
	// keeps its attempt, $7-$10 (sqlcore.DeliveredArgs), on its own row.
	recordDeliveredSQL = `UPDATE events SET state = $3, attempts = $4, next_attempt_at = $5, last_error = $6,
		lease_owner = NULL, lease_until = NULL, (` + sqlcore.DeliveredCols + `) = ($7, $8, $9, $10)
		WHERE id = $1 AND lease_owner = $2 AND state = 'pending'`
)

// ClaimEvents implements payoutkit.Store. It is one statement, which the
// single writer connection serialises with other claims, so that each claim
// sees the events leased by an earlier claim as not due.
func (s *Store) ClaimEvents(ctx context.Context, owner string, now, leaseUntil time.Time, limit int, except []string) ([]payoutkit.Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	exceptJSON, err := sqlcore.ExceptJSON(except)
	if err != nil {
		return nil, err
	}
	evs, err := sqlcore.Claim(func(read func(sqlcore.RowIter) error) error {
		return s.rowsWrite(ctx, read, claimEventsSQL, ts(now), ts(leaseUntil), limit, owner, exceptJSON)
	}, func(sc sqlcore.Scanner, seq *int64) (payoutkit.Event, error) { return sqlcore.ScanEvent(sc, seq) })
	if err != nil {
		return nil, translate(ctx, "claim events", err)
	}
	return evs, nil
}

// RecordAttempt implements payoutkit.Store.
func (s *Store) RecordAttempt(ctx context.Context, owner string, a payoutkit.DeliveryAttempt, next payoutkit.EventDelivery) error {
	update, eventArgs := recordAttemptSQL, []any{a.EventID, owner, string(next.State), next.Attempts, ts(next.NextAttemptAt), sqlcore.CleanText(next.LastError)}
	delivered := next.State == payoutkit.DeliveryDelivered
	if delivered {
		update, eventArgs = recordDeliveredSQL, append(eventArgs, sqlcore.DeliveredArgs(a, ts)...)
	}
	var recorded bool
	// Refusal-safe: the UPDATE refuses (nothing leased to owner) before
	// anything changed.
	err := s.w.Write(ctx, true, func(ctx context.Context, tx *sql.Tx) error {
		recorded = false
		res, err := s.st.exec(ctx, tx, update, eventArgs...)
		if err != nil {
			return err
		}
		if err := sqlcore.MustAffect(res, sqlcore.ErrNothingToCommit); err != nil {
			return err
		}
		if !delivered { // a delivered event keeps its attempt on its row
			if _, err := s.st.exec(ctx, tx, insertAttemptSQL,
				a.EventID, a.Attempt, ts(a.At), a.StatusCode, int64(a.Latency), sqlcore.CleanText(a.Error), sqlcore.CleanText(a.ResponseHead)); err != nil {
				return err
			}
		}
		recorded = true
		return nil
	})
	if errors.Is(err, sqlcore.ErrNothingToCommit) {
		err = nil
	}
	if err != nil {
		return translate(ctx, "record delivery attempt", err)
	}
	if !recorded { // the lease is gone, or the event is
		var one int
		err := s.w.Reader().QueryRowContext(ctx, `SELECT 1 FROM events WHERE id = $1`, a.EventID).Scan(&one)
		if err != nil {
			return translate(ctx, "record delivery attempt", err)
		}
		return payoutkit.ErrConflict
	}
	return nil
}

// PruneEvents implements payoutkit.Store. The candidates are found on the
// read pool, so that the search never holds the write lock, and deleted in
// one short write that checks them again. The search looks no further than
// the first event recorded since before (sqlcore.PruneBoundSQL).
func (s *Store) PruneEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	rows, err := s.w.Reader().QueryContext(ctx,
		`SELECT seq FROM events WHERE state = 'delivered' AND created_at < $1 AND seq < `+sqlcore.PruneBoundSQL+`
		ORDER BY seq LIMIT $2`, ts(before), limit)
	if err != nil {
		return 0, translate(ctx, "prune events", err)
	}
	seqs, err := sqlcore.Collect(rows, func(sc sqlcore.Scanner) (any, error) {
		var seq int64
		return seq, sc.Scan(&seq)
	})
	if err != nil || len(seqs) == 0 {
		return 0, translate(ctx, "prune events", err)
	}
	in := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(seqs)), ", ") + ")"
	var n int64
	err = s.w.Write(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		still := `SELECT id FROM events WHERE state = 'delivered' AND seq IN ` + in
		if _, err := tx.ExecContext(ctx, `DELETE FROM delivery_attempts WHERE event_id IN (`+still+`)`, seqs...); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM events WHERE state = 'delivered' AND seq IN `+in, seqs...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), translate(ctx, "prune events", err)
}
