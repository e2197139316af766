package postgres

import (
	"context"
	"database/sql"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// ClaimEvents implements payoutkit.Store. It is one statement: the due
// events are locked with FOR UPDATE SKIP LOCKED, so that dispatchers on
// several instances claim disjoint sets, and each claim sees the events
// leased by a committed earlier claim as not due.
func (s *Store) ClaimEvents(ctx context.Context, owner string, now, leaseUntil time.Time, limit int, except []string) ([]payoutkit.Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	exceptJSON, err := sqlcore.ExceptJSON(except)
	if err != nil {
		return nil, err
	}
	evs, err := sqlcore.Claim(func(read func(sqlcore.RowIter) error) error {
		return s.w.Claim(ctx, true, read, claimEventsSQL, ts(now), ts(leaseUntil), limit, owner, exceptJSON)
	}, func(sc sqlcore.Scanner, seq *int64) (payoutkit.Event, error) { return sqlcore.ScanEvent(sc, seq) })
	if err != nil {
		return nil, translate(ctx, "claim events", err)
	}
	return evs, nil
}

// RecordAttempt implements payoutkit.Store: one statement, pipelined with
// the other writes of its batch.
func (s *Store) RecordAttempt(ctx context.Context, owner string, a payoutkit.DeliveryAttempt, next payoutkit.EventDelivery) error {
	query := pgRecordAttemptSQL
	args := []any{a.EventID, owner, string(next.State), next.Attempts, ts(next.NextAttemptAt), sqlcore.CleanText(next.LastError)}
	if next.State == payoutkit.DeliveryDelivered {
		query, args = pgRecordDeliveredSQL, append(args, sqlcore.DeliveredArgs(a, ts)...)
	} else {
		args = append(args, a.Attempt, ts(a.At), a.StatusCode, int64(a.Latency), sqlcore.CleanText(a.Error), sqlcore.CleanText(a.ResponseHead))
	}
	var recorded bool
	err := s.w.Write(ctx, "", func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		recorded = n == 1
		return err
	}, execPipe(query, args, func(n int64) { recorded = n == 1 }))
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

// PruneEvents implements payoutkit.Store: one statement, which passes
// over the rows another session holds. It looks no further than the first
// event recorded since before (sqlcore.PruneBoundSQL).
func (s *Store) PruneEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	err := s.w.InTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `WITH d AS (
			SELECT seq, id FROM events WHERE state = 'delivered' AND created_at < $1 AND seq < `+sqlcore.PruneBoundSQL+`
			ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED
		), a AS (
			DELETE FROM delivery_attempts WHERE event_id IN (SELECT id FROM d)
		), e AS (
			DELETE FROM events WHERE seq IN (SELECT seq FROM d) RETURNING 1
		)
		SELECT count(*) FROM e`, ts(before), limit).Scan(&n)
	})
	return n, translate(ctx, "prune events", err)
}
