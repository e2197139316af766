package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// Staff users, sessions and sign-in failures are administrative writes: they
// run on the writer outside the group committer, as workspaces and keys do.

// InsertStaffUser implements payoutkit.StaffStore.
func (s *Store) InsertStaffUser(ctx context.Context, u payoutkit.StaffUser) error {
	_, err := s.w.Admin().ExecContext(ctx, `INSERT INTO staff_users (email, workspace_id, password_hash, created_at) VALUES ($1, $2, $3, $4)`,
		u.Email, u.WorkspaceID, u.PasswordHash, ts(u.CreatedAt))
	return translate(ctx, "insert staff user", err)
}

// DeleteStaffUser implements payoutkit.StaffStore.
func (s *Store) DeleteStaffUser(ctx context.Context, workspaceID, email string) (int, error) {
	// The user's row is locked first: a session inserted
	// meanwhile (its foreign key check locks the row too) then waits for
	// this transaction and fails, instead of failing the user's DELETE.
	const lock = `SELECT 1 FROM staff_users WHERE email = $1 AND workspace_id = $2 FOR UPDATE`
	deleted := 0
	ctx = detach(ctx) // see detach
	err := s.w.InTx(ctx, func(tx *sql.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, lock, email, workspaceID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return nil // not a user of this workspace
		} else if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM staff_sessions WHERE staff_email = $1`, email); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM staff_users WHERE email = $1 AND workspace_id = $2`, email, workspaceID)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		deleted = int(n)
		return err
	})
	if err != nil {
		return 0, translate(ctx, "delete staff user", err)
	}
	return deleted, nil
}

// SetStaffPassword implements payoutkit.StaffStore.
func (s *Store) SetStaffPassword(ctx context.Context, email, passwordHash string, keep [32]byte) error {
	ctx = detach(ctx) // see detach
	err := s.w.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE staff_users SET password_hash = $2 WHERE email = $1`, email, passwordHash)
		if err != nil {
			return err
		}
		if err := sqlcore.MustAffect(res, payoutkit.ErrNotFound); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM staff_sessions WHERE staff_email = $1 AND token_hash <> $2`, email, keep[:])
		return err
	})
	return translate(ctx, "set staff password", err)
}

// InsertStaffSession implements payoutkit.StaffStore. A session of an
// unknown user, or of a user of another workspace, is ErrNotFound.
func (s *Store) InsertStaffSession(ctx context.Context, ss payoutkit.StaffSession) error {
	res, err := s.w.Admin().ExecContext(ctx, `INSERT INTO staff_sessions (`+sqlcore.SessionCols+`)
		SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM staff_users WHERE email = $3 AND workspace_id = $2)`,
		ss.TokenHash[:], ss.WorkspaceID, ss.StaffEmail, ts(ss.CreatedAt), ts(ss.LastSeenAt))
	if err != nil {
		return translate(ctx, "insert staff session", err)
	}
	return sqlcore.MustAffect(res, payoutkit.ErrNotFound)
}

// StaffSession implements payoutkit.StaffStore.
func (s *Store) StaffSession(ctx context.Context, tokenHash [32]byte) (payoutkit.StaffSession, error) {
	ss, err := sqlcore.ScanSession(s.w.Reader().QueryRowContext(ctx, `SELECT `+sqlcore.SessionCols+` FROM staff_sessions WHERE token_hash = $1`, tokenHash[:]))
	if err != nil {
		return payoutkit.StaffSession{}, translate(ctx, "staff session", err)
	}
	return ss, nil
}

// TouchStaffSession implements payoutkit.StaffStore. last_seen_at only moves
// forward, whatever order concurrent requests touch it in.
func (s *Store) TouchStaffSession(ctx context.Context, tokenHash [32]byte, at time.Time) error {
	_, err := s.w.Admin().ExecContext(ctx, `UPDATE staff_sessions SET last_seen_at = $2 WHERE token_hash = $1 AND last_seen_at < $2`,
		tokenHash[:], ts(at))
	return translate(ctx, "touch staff session", err)
}

// DeleteStaffSession implements payoutkit.StaffStore.
func (s *Store) DeleteStaffSession(ctx context.Context, tokenHash [32]byte) error {
	_, err := s.w.Admin().ExecContext(ctx, `DELETE FROM staff_sessions WHERE token_hash = $1`, tokenHash[:])
	return translate(ctx, "delete staff session", err)
}

// PurgeStaffSessions implements payoutkit.StaffStore.
func (s *Store) PurgeStaffSessions(ctx context.Context, idleBefore, createdBefore, failuresBefore time.Time) (int, error) {
	var purged int
	ctx = detach(ctx) // see detach
	err := s.w.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM staff_sessions WHERE last_seen_at < $1 OR created_at < $2`,
			ts(idleBefore), ts(createdBefore))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		purged = int(n)
		_, err = tx.ExecContext(ctx, `DELETE FROM signin_failures WHERE window_start < $1`, ts(failuresBefore))
		return err
	})
	if err != nil {
		return 0, translate(ctx, "purge staff sessions", err)
	}
	return purged, nil
}

// SignInFailures implements payoutkit.StaffStore.
func (s *Store) SignInFailures(ctx context.Context, email string) (payoutkit.SignInFailures, error) {
	f := payoutkit.SignInFailures{Email: email}
	err := s.w.Reader().QueryRowContext(ctx, `SELECT failures, window_start FROM signin_failures WHERE email = $1`, email).
		Scan(&f.Count, sqlcore.TimeCol{T: &f.WindowStart})
	if errors.Is(err, sql.ErrNoRows) {
		return payoutkit.SignInFailures{Email: email}, nil
	} else if err != nil {
		return payoutkit.SignInFailures{}, translate(ctx, "sign-in failures", err)
	}
	return f, nil
}

// recordSignInFailureSQL: $1 e-mail, $2 the failure's time, $3 the oldest
// window start still current. One statement, so that failures counted at
// once on several instances all count: on PostgreSQL ON CONFLICT DO UPDATE
// locks the row and re-reads its latest version; on SQLite writes are
// serialised. SET expressions all read the row as it was.
const recordSignInFailureSQL = `INSERT INTO signin_failures (email, failures, window_start) VALUES ($1, 1, $2)
	ON CONFLICT (email) DO UPDATE SET
		failures = CASE WHEN signin_failures.window_start > $3 THEN signin_failures.failures + 1 ELSE 1 END,
		window_start = CASE WHEN signin_failures.window_start > $3 THEN signin_failures.window_start ELSE EXCLUDED.window_start END
	RETURNING failures, window_start`

// RecordSignInFailure implements payoutkit.StaffStore.
func (s *Store) RecordSignInFailure(ctx context.Context, email string, at time.Time, window time.Duration) (payoutkit.SignInFailures, error) {
	f := payoutkit.SignInFailures{Email: email}
	err := s.w.Admin().QueryRowContext(ctx, recordSignInFailureSQL, email, ts(at), ts(at.Add(-window))).
		Scan(&f.Count, sqlcore.TimeCol{T: &f.WindowStart})
	if err != nil {
		return payoutkit.SignInFailures{}, translate(ctx, "record sign-in failure", err)
	}
	return f, nil
}

// ClearSignInFailures implements payoutkit.StaffStore.
func (s *Store) ClearSignInFailures(ctx context.Context, email string) error {
	_, err := s.w.Admin().ExecContext(ctx, `DELETE FROM signin_failures WHERE email = $1`, email)
	return translate(ctx, "clear sign-in failures", err)
}
