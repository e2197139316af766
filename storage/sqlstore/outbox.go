package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit"
)

// ClaimEvents implements payoutkit.Outbox. It is one statement: on SQLite
// the single writer connection serialises claims; on PostgreSQL the due
// events are locked with FOR UPDATE SKIP LOCKED, so that dispatchers on
// several instances claim disjoint sets, and each claim sees the events
// leased by a committed earlier claim as not due.
func (s *Store) ClaimEvents(ctx context.Context, owner string, now, leaseUntil time.Time, limit int) ([]payoutkit.Event, error) {
	return s.ClaimEventsExcept(ctx, owner, now, leaseUntil, limit, nil)
}

// ClaimEventsExcept implements payoutkit.Outbox: ClaimEvents passing
// over the events of the workspaces in except.
func (s *Store) ClaimEventsExcept(ctx context.Context, owner string, now, leaseUntil time.Time, limit int, except []string) ([]payoutkit.Event, error) {
	if limit <= 0 {
		return nil, nil
	}
	exceptJSON, err := json.Marshal(except)
	if err != nil {
		return nil, err
	}
	if except == nil {
		exceptJSON = []byte("[]")
	}
	evs, err := claim(ctx, s, true, func(sc scanner, seq *int64) (payoutkit.Event, error) { return scanEvent(sc, seq) },
		s.q.claimEvents, s.ts(now), s.ts(leaseUntil), limit, owner, string(exceptJSON))
	if err != nil {
		return nil, translate(ctx, "claim events", err)
	}
	return evs, nil
}

const (
	insertAttemptSQL = `INSERT INTO delivery_attempts (` + attemptCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7)`
	// SQLite's RecordAttempt: the event's new state, if its lease is still
	// owner's.
	recordAttemptSQL = `UPDATE events SET state = $3, attempts = $4, next_attempt_at = $5, last_error = $6,
		lease_owner = NULL, lease_until = NULL
		WHERE id = $1 AND lease_owner = $2 AND state = 'pending'`
)

// RecordAttempt implements payoutkit.Outbox.
func (s *Store) RecordAttempt(ctx context.Context, owner string, a payoutkit.DeliveryAttempt, next payoutkit.EventDelivery) error {
	eventArgs := []any{a.EventID, owner, string(next.State), next.Attempts, s.ts(next.NextAttemptAt), cleanText(next.LastError)}
	attemptArgs := []any{a.Attempt, s.ts(a.At), a.StatusCode, int64(a.Latency), cleanText(a.Error), cleanText(a.ResponseHead)}
	var recorded bool
	var err error
	if s.pg() {
		args := append(eventArgs, attemptArgs...)
		err = s.writePiped(ctx, "", func(ctx context.Context, tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, s.q.pgRecordAttempt, args...)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			recorded = n == 1
			return err
		}, execPipe(s.q.pgRecordAttempt, args, func(n int64) { recorded = n == 1 }))
	} else {
		// Refusal-safe: the UPDATE refuses (nothing leased to owner) before
		// anything changed.
		err = s.writeTxRefusalSafe(ctx, "", func(ctx context.Context, tx *sql.Tx) error {
			res, err := s.txExec(ctx, tx, recordAttemptSQL, eventArgs...)
			if err != nil {
				return err
			}
			if err := mustAffect(res, errNothingToCommit); err != nil {
				return err
			}
			if _, err := s.txExec(ctx, tx, insertAttemptSQL, append([]any{a.EventID}, attemptArgs...)...); err != nil {
				return err
			}
			recorded = true
			return nil
		})
		if errors.Is(err, errNothingToCommit) {
			err = nil
		}
	}
	if err != nil {
		return translate(ctx, "record delivery attempt", err)
	}
	if !recorded { // the lease is gone, or the event is
		var one int
		err := s.reader().QueryRowContext(ctx, `SELECT 1 FROM events WHERE id = $1`, a.EventID).Scan(&one)
		if err != nil {
			return translate(ctx, "record delivery attempt", err)
		}
		return payoutkit.ErrConflict
	}
	return nil
}

// Events implements payoutkit.Outbox.
func (s *Store) Events(ctx context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.Event], error) {
	return list(ctx, s, "events", workspaceID, page,
		`SELECT `+eventCols+`, seq FROM events WHERE workspace_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`, scanEvent)
}

// Event implements payoutkit.Outbox.
func (s *Store) Event(ctx context.Context, workspaceID, eventID string) (payoutkit.Event, error) {
	ev, err := scanEvent(s.reader().QueryRowContext(ctx,
		`SELECT `+eventCols+` FROM events WHERE id = $1 AND workspace_id = $2`, eventID, workspaceID))
	if err != nil {
		return payoutkit.Event{}, translate(ctx, "event", err)
	}
	return ev, nil
}

const subjectEventsSQL = `SELECT ` + eventCols + ` FROM events WHERE workspace_id = $1 AND subject = $2 ORDER BY seq`

// SubjectEvents implements payoutkit.Outbox.
func (s *Store) SubjectEvents(ctx context.Context, workspaceID, subject string) ([]payoutkit.Event, error) {
	rows, err := s.reader().QueryContext(ctx, subjectEventsSQL, workspaceID, subject)
	if err != nil {
		return nil, translate(ctx, "subject events", err)
	}
	evs, err := collect(rows, func(sc scanner) (payoutkit.Event, error) { return scanEvent(sc) })
	if err != nil {
		return nil, translate(ctx, "subject events", err)
	}
	if len(evs) == 0 { // an unknown workspace is not an empty subject
		if err := s.workspaceExists(ctx, s.reader(), workspaceID); err != nil {
			return nil, translate(ctx, "subject events", err)
		}
	}
	return evs, nil
}

// DeliveryAttempts implements payoutkit.Outbox.
func (s *Store) DeliveryAttempts(ctx context.Context, workspaceID, eventID string) ([]payoutkit.DeliveryAttempt, error) {
	if _, err := s.Event(ctx, workspaceID, eventID); err != nil {
		return nil, err
	}
	rows, err := s.reader().QueryContext(ctx,
		`SELECT `+attemptCols+` FROM delivery_attempts WHERE event_id = $1 ORDER BY seq`, eventID)
	if err != nil {
		return nil, translate(ctx, "delivery attempts", err)
	}
	out, err := collect(rows, scanAttempt)
	return out, translate(ctx, "delivery attempts", err)
}

// ResendEvent implements payoutkit.Outbox.
func (s *Store) ResendEvent(ctx context.Context, workspaceID, eventID string, now time.Time) error {
	res, err := s.writer().ExecContext(ctx, `UPDATE events SET state = 'pending', next_attempt_at = $3, lease_owner = NULL, lease_until = NULL
		WHERE id = $1 AND workspace_id = $2 AND state <> 'pending'`, eventID, workspaceID, s.ts(now))
	if err != nil {
		return translate(ctx, "resend event", err)
	}
	if err := mustAffect(res, errNothingToCommit); err == nil || !errors.Is(err, errNothingToCommit) {
		if err == nil {
			s.workCommitted()
		}
		return err
	}
	// Already pending, or not there.
	_, err = s.Event(ctx, workspaceID, eventID)
	return err
}

// PruneEvents implements payoutkit.Outbox. On PostgreSQL it is one
// statement. On SQLite the candidates are found on the read pool, so that
// the search (a scan when there is nothing to prune) never holds the write
// lock, and deleted in one short write that checks them again.
func (s *Store) PruneEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	if s.pg() {
		var n int
		err := s.writer().QueryRowContext(ctx, `WITH d AS (
			SELECT seq, id FROM events WHERE state = 'delivered' AND created_at < $1
			ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED
		), a AS (
			DELETE FROM delivery_attempts WHERE event_id IN (SELECT id FROM d)
		), e AS (
			DELETE FROM events WHERE seq IN (SELECT seq FROM d) RETURNING 1
		)
		SELECT count(*) FROM e`, s.ts(before), limit).Scan(&n)
		return n, translate(ctx, "prune events", err)
	}
	rows, err := s.reader().QueryContext(ctx,
		`SELECT seq FROM events WHERE state = 'delivered' AND created_at < $1 ORDER BY seq LIMIT $2`, s.ts(before), limit)
	if err != nil {
		return 0, translate(ctx, "prune events", err)
	}
	seqs, err := collect(rows, func(sc scanner) (any, error) {
		var seq int64
		return seq, sc.Scan(&seq)
	})
	if err != nil || len(seqs) == 0 {
		return 0, translate(ctx, "prune events", err)
	}
	in := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(seqs)), ", ") + ")"
	var n int64
	err = s.writeTx(ctx, "", func(ctx context.Context, tx *sql.Tx) error {
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

// OutboxHealth implements payoutkit.Outbox: one statement, one snapshot.
func (s *Store) OutboxHealth(ctx context.Context) (payoutkit.OutboxHealth, error) {
	var h payoutkit.OutboxHealth
	err := s.reader().QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM events WHERE state = 'pending'),
		(SELECT count(*) FROM events WHERE state = 'delivered'),
		(SELECT count(*) FROM events WHERE state = 'failed'),
		(SELECT MIN(created_at) FROM events WHERE state = 'pending')`).
		Scan(&h.Pending, &h.Delivered, &h.Failed, timeCol{&h.OldestPending})
	if err != nil {
		return payoutkit.OutboxHealth{}, translate(ctx, "outbox health", err)
	}
	return h, nil
}
