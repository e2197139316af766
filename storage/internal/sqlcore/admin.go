package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"strconv"
	"time"

	"github.com/payoutkit/payoutkit"
)

// The point reads of workspaces and keys, which the SQLite store prepares.
const (
	WorkspaceSQL = `SELECT id, name, webhook_url, webhook_secret, created_at, require_2fa FROM workspaces WHERE id = $1`
	APIKeySQL    = `SELECT ` + KeyCols + ` FROM api_keys WHERE prefix = $1`
)

// CreateWorkspace implements payoutkit.Store.
func (o *Ops) CreateWorkspace(ctx context.Context, ws payoutkit.Workspace, staff payoutkit.StaffUser, key payoutkit.APIKey) error {
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO workspaces (id, name, webhook_url, webhook_secret, created_at) VALUES ($1, $2, $3, $4, $5)`,
			ws.ID, ws.Name, ws.WebhookURL, ws.WebhookSecret, o.c.TS(ws.CreatedAt)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO balances (workspace_id) VALUES ($1)`, ws.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, insertStaffSQL, staff.Email, ws.ID, staff.PasswordHash, o.c.TS(staff.CreatedAt), staffRole(staff.Role)); err != nil {
			return err
		}
		return o.insertKey(ctx, tx, key)
	})
	return o.c.Translate(ctx, "create workspace", err)
}

// Workspace implements payoutkit.Store.
func (o *Ops) Workspace(ctx context.Context, id string) (payoutkit.Workspace, error) {
	var ws payoutkit.Workspace
	err := o.w.ReadRow(ctx, WorkspaceSQL, id).Scan(&ws.ID, &ws.Name, &ws.WebhookURL, &ws.WebhookSecret, TimeCol{T: &ws.CreatedAt}, &ws.RequireTwoFactor)
	if err != nil {
		return payoutkit.Workspace{}, o.c.Translate(ctx, "workspace", err)
	}
	return ws, nil
}

// WorkspaceIDs implements payoutkit.Store.
func (o *Ops) WorkspaceIDs(ctx context.Context) ([]string, error) {
	ids, err := WorkspaceIDs(ctx, o.w.Reader())
	return ids, o.c.Translate(ctx, "workspace ids", err)
}

// SetWebhook implements payoutkit.Store.
func (o *Ops) SetWebhook(ctx context.Context, workspaceID, url, secret string, log payoutkit.SecurityLogEntry) error {
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE workspaces SET webhook_url = $2, webhook_secret = $3 WHERE id = $1`, workspaceID, url, secret)
		if err != nil {
			return err
		}
		if err := MustAffect(res, payoutkit.ErrNotFound); err != nil {
			return err
		}
		return o.appendLog(ctx, tx, log)
	})
	return o.c.Translate(ctx, "set webhook", err)
}

// SwapWebhookSecret implements payoutkit.Store: one conditional
// UPDATE, its own short transaction.
func (o *Ops) SwapWebhookSecret(ctx context.Context, workspaceID, old, next string) error {
	res, err := o.execAlone(ctx, `UPDATE workspaces SET webhook_secret = $3 WHERE id = $1 AND webhook_secret = $2`, workspaceID, old, next)
	if err != nil {
		return o.c.Translate(ctx, "swap webhook secret", err)
	}
	if err := MustAffect(res, payoutkit.ErrConflict); err != nil {
		if _, werr := o.Workspace(ctx, workspaceID); errors.Is(werr, payoutkit.ErrNotFound) {
			return werr
		}
		return err
	}
	return nil
}

// StaffUser implements staff.Store.
func (o *Ops) StaffUser(ctx context.Context, email string) (payoutkit.StaffUser, error) {
	u, err := ScanStaffUser(o.w.Reader().QueryRowContext(ctx, `SELECT `+StaffUserCols+` FROM staff_users WHERE email = $1`, email))
	if err != nil {
		return payoutkit.StaffUser{}, o.c.Translate(ctx, "staff user", err)
	}
	return u, nil
}

// InsertAPIKey implements payoutkit.Store.
func (o *Ops) InsertAPIKey(ctx context.Context, key payoutkit.APIKey, revokeOthers bool, log payoutkit.SecurityLogEntry) (int, error) {
	var revoked int
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		if revokeOthers {
			n, err := o.revokeKeys(ctx, tx, key.WorkspaceID, "", key.CreatedAt)
			if err != nil {
				return err
			}
			revoked = n
			log.Details = maps.Clone(log.Details)
			if log.Details == nil {
				log.Details = map[string]string{}
			}
			log.Details["revoked"] = strconv.Itoa(n)
		}
		if err := o.insertKey(ctx, tx, key); err != nil {
			return err
		}
		return o.appendLog(ctx, tx, log)
	})
	if err != nil {
		return 0, o.c.Translate(ctx, "insert API key", err)
	}
	return revoked, nil
}

func (o *Ops) insertKey(ctx context.Context, q Querier, key payoutkit.APIKey) error {
	scopes, allowIPs := KeyControlArgs(key)
	_, err := q.ExecContext(ctx, `INSERT INTO api_keys (`+KeyCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		key.Prefix, key.WorkspaceID, key.Hash[:], o.c.TS(key.CreatedAt), o.c.TS(key.RevokedAt), o.c.TS(key.LastUsedAt), scopes, allowIPs)
	return err
}

// APIKey implements payoutkit.Store.
func (o *Ops) APIKey(ctx context.Context, prefix string) (payoutkit.APIKey, error) {
	k, err := ScanKey(o.w.ReadRow(ctx, APIKeySQL, prefix))
	if err != nil {
		return payoutkit.APIKey{}, o.c.Translate(ctx, "API key", err)
	}
	return k, nil
}

// APIKeyBalanceSQL reads a key and its workspace's balance in one query.
const APIKeyBalanceSQL = `SELECT k.prefix, k.workspace_id, k.hash, k.created_at, k.revoked_at, k.last_used_at, k.scopes, k.allow_ips, b.available, b.in_progress
	FROM api_keys k JOIN balances b ON b.workspace_id = k.workspace_id WHERE k.prefix = $1`

// APIKeyBalance implements payoutkit.Store: one query for what
// GET /v1/balance needs.
func (o *Ops) APIKeyBalance(ctx context.Context, prefix string) (payoutkit.APIKey, payoutkit.Balance, error) {
	var k payoutkit.APIKey
	var b payoutkit.Balance
	err := o.w.ReadRow(ctx, APIKeyBalanceSQL, prefix).Scan(&k.Prefix, &k.WorkspaceID, HashCol{H: &k.Hash},
		TimeCol{T: &k.CreatedAt}, TimeCol{T: &k.RevokedAt}, TimeCol{T: &k.LastUsedAt},
		ScopesCol{S: &k.Scopes}, AllowIPsCol{P: &k.AllowIPs}, &b.Available, &b.InProgress)
	if err != nil {
		return payoutkit.APIKey{}, payoutkit.Balance{}, o.c.Translate(ctx, "API key and balance", err)
	}
	return k, b, nil
}

// APIKeys implements payoutkit.Store.
func (o *Ops) APIKeys(ctx context.Context, workspaceID string) ([]payoutkit.APIKey, error) {
	keys, err := APIKeys(ctx, o.w.Reader(), workspaceID)
	if err != nil {
		return nil, o.c.Translate(ctx, "API keys", err)
	}
	return keys, nil
}

// RevokeAPIKeys implements payoutkit.Store.
func (o *Ops) RevokeAPIKeys(ctx context.Context, workspaceID, prefix string, at time.Time, log payoutkit.SecurityLogEntry) (int, error) {
	var revoked int
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		n, err := o.revokeKeys(ctx, tx, workspaceID, prefix, at)
		if err != nil || n == 0 {
			return err
		}
		revoked = n
		return o.appendLog(ctx, tx, log)
	})
	if err != nil {
		return 0, o.c.Translate(ctx, "revoke API keys", err)
	}
	return revoked, nil
}

func (o *Ops) revokeKeys(ctx context.Context, q Querier, workspaceID, prefix string, at time.Time) (int, error) {
	query, args := `UPDATE api_keys SET revoked_at = $2 WHERE workspace_id = $1 AND revoked_at IS NULL`, []any{workspaceID, o.c.TS(at)}
	if prefix != "" {
		query, args = query+` AND prefix = $3`, append(args, prefix)
	}
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// TouchAPIKey implements payoutkit.Store.
func (o *Ops) TouchAPIKey(ctx context.Context, prefix string, at time.Time) error {
	_, err := o.execAlone(ctx,
		`UPDATE api_keys SET last_used_at = $2 WHERE prefix = $1 AND (last_used_at IS NULL OR last_used_at < $2)`, prefix, o.c.TS(at))
	return o.c.Translate(ctx, "touch API key", err)
}

// Staff users, sessions and sign-in failures are administrative writes: they
// run on the writer outside the group committer, as workspaces and keys do.

// InsertStaffUser implements staff.Store.
func (o *Ops) InsertStaffUser(ctx context.Context, u payoutkit.StaffUser, log payoutkit.SecurityLogEntry) error {
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, insertStaffSQL, u.Email, u.WorkspaceID, u.PasswordHash, o.c.TS(u.CreatedAt), staffRole(u.Role)); err != nil {
			return err
		}
		return o.appendLog(ctx, tx, log)
	})
	return o.c.Translate(ctx, "insert staff user", err)
}

// DeleteStaffUser implements staff.Store.
func (o *Ops) DeleteStaffUser(ctx context.Context, workspaceID, email string, log payoutkit.SecurityLogEntry) (int, error) {
	deleted := 0
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		// The workspace's staff changes serialise on its row, so that the
		// count of admins below is the latest on every instance.
		if err := o.lockStaffOf(ctx, tx, workspaceID); err != nil {
			return err
		}
		// The user's row is found (and on PostgreSQL locked: a session
		// inserted meanwhile then waits for this transaction and fails,
		// instead of failing the user's DELETE).
		var one int
		if err := tx.QueryRowContext(ctx, o.c.StaffLockSQL, email, workspaceID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return nil // not a user of this workspace
		} else if err != nil {
			return err
		}
		if err := o.keepAnAdmin(ctx, tx, workspaceID, email); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM staff_sessions WHERE staff_email = $1`, email); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM staff_recovery_codes WHERE staff_email = $1`, email); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM staff_users WHERE email = $1 AND workspace_id = $2`, email, workspaceID)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		deleted = int(n)
		if err != nil || n == 0 {
			return err
		}
		return o.appendLog(ctx, tx, log)
	})
	if err != nil {
		return 0, o.c.Translate(ctx, "delete staff user", err)
	}
	return deleted, nil
}

// SetStaffPassword implements staff.Store.
func (o *Ops) SetStaffPassword(ctx context.Context, email, passwordHash string, keep [32]byte) error {
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE staff_users SET password_hash = $2 WHERE email = $1`, email, passwordHash)
		if err != nil {
			return err
		}
		if err := MustAffect(res, payoutkit.ErrNotFound); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM staff_sessions WHERE staff_email = $1 AND token_hash <> $2`, email, keep[:])
		return err
	})
	return o.c.Translate(ctx, "set staff password", err)
}

// InsertStaffSession implements staff.Store. A session of an
// unknown user, or of a user of another workspace, is ErrNotFound.
func (o *Ops) InsertStaffSession(ctx context.Context, ss payoutkit.StaffSession) error {
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO staff_sessions (`+SessionCols+`)
		SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM staff_users WHERE email = $3 AND workspace_id = $2)`,
			ss.TokenHash[:], ss.WorkspaceID, ss.StaffEmail, o.c.TS(ss.CreatedAt), o.c.TS(ss.LastSeenAt))
		if err != nil {
			return err
		}
		if err := MustAffect(res, payoutkit.ErrNotFound); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE staff_users SET last_sign_in_at = $2 WHERE email = $1`, ss.StaffEmail, o.c.TS(ss.CreatedAt))
		return err
	})
	return o.c.Translate(ctx, "insert staff session", err)
}

// StaffSession implements staff.Store.
func (o *Ops) StaffSession(ctx context.Context, tokenHash [32]byte) (payoutkit.StaffSession, error) {
	ss, err := ScanSession(o.w.Reader().QueryRowContext(ctx, `SELECT `+SessionCols+` FROM staff_sessions WHERE token_hash = $1`, tokenHash[:]))
	if err != nil {
		return payoutkit.StaffSession{}, o.c.Translate(ctx, "staff session", err)
	}
	return ss, nil
}

// TouchStaffSession implements staff.Store. last_seen_at only moves
// forward, whatever order concurrent requests touch it in.
func (o *Ops) TouchStaffSession(ctx context.Context, tokenHash [32]byte, at time.Time) error {
	_, err := o.execAlone(ctx, `UPDATE staff_sessions SET last_seen_at = $2 WHERE token_hash = $1 AND last_seen_at < $2`,
		tokenHash[:], o.c.TS(at))
	return o.c.Translate(ctx, "touch staff session", err)
}

// DeleteStaffSession implements staff.Store.
func (o *Ops) DeleteStaffSession(ctx context.Context, tokenHash [32]byte) error {
	_, err := o.execAlone(ctx, `DELETE FROM staff_sessions WHERE token_hash = $1`, tokenHash[:])
	return o.c.Translate(ctx, "delete staff session", err)
}

// PurgeStaffSessions implements staff.Store.
func (o *Ops) PurgeStaffSessions(ctx context.Context, idleBefore, createdBefore, failuresBefore time.Time) (int, error) {
	var purged int
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM staff_sessions WHERE last_seen_at < $1 OR created_at < $2`,
			o.c.TS(idleBefore), o.c.TS(createdBefore))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		purged = int(n)
		_, err = tx.ExecContext(ctx, `DELETE FROM signin_failures WHERE window_start < $1`, o.c.TS(failuresBefore))
		return err
	})
	if err != nil {
		return 0, o.c.Translate(ctx, "purge staff sessions", err)
	}
	return purged, nil
}

// SignInFailures implements staff.Store.
func (o *Ops) SignInFailures(ctx context.Context, email string) (payoutkit.SignInFailures, error) {
	f := payoutkit.SignInFailures{Email: email}
	err := o.w.Reader().QueryRowContext(ctx, `SELECT failures, window_start FROM signin_failures WHERE email = $1`, email).
		Scan(&f.Count, TimeCol{T: &f.WindowStart})
	if errors.Is(err, sql.ErrNoRows) {
		return payoutkit.SignInFailures{Email: email}, nil
	} else if err != nil {
		return payoutkit.SignInFailures{}, o.c.Translate(ctx, "sign-in failures", err)
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

// RecordSignInFailure implements staff.Store.
func (o *Ops) RecordSignInFailure(ctx context.Context, email string, at time.Time, window time.Duration) (payoutkit.SignInFailures, error) {
	f := payoutkit.SignInFailures{Email: email}
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, recordSignInFailureSQL, email, o.c.TS(at), o.c.TS(at.Add(-window))).
			Scan(&f.Count, TimeCol{T: &f.WindowStart})
	})
	if err != nil {
		return payoutkit.SignInFailures{}, o.c.Translate(ctx, "record sign-in failure", err)
	}
	return f, nil
}

// ClearSignInFailures implements staff.Store.
func (o *Ops) ClearSignInFailures(ctx context.Context, email string) error {
	_, err := o.execAlone(ctx, `DELETE FROM signin_failures WHERE email = $1`, email)
	return o.c.Translate(ctx, "clear sign-in failures", err)
}
