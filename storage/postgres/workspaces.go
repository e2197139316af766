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
	workspaceSQL = `SELECT id, name, webhook_url, webhook_secret, created_at FROM workspaces WHERE id = $1`
	apiKeySQL    = `SELECT ` + sqlcore.KeyCols + ` FROM api_keys WHERE prefix = $1`
)

// CreateWorkspace implements payoutkit.WorkspaceStore.
func (s *Store) CreateWorkspace(ctx context.Context, ws payoutkit.Workspace, staff payoutkit.StaffUser, key payoutkit.APIKey) error {
	ctx = detach(ctx) // see detach
	err := s.w.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO workspaces (id, name, webhook_url, webhook_secret, created_at) VALUES ($1, $2, $3, $4, $5)`,
			ws.ID, ws.Name, ws.WebhookURL, ws.WebhookSecret, ts(ws.CreatedAt)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO balances (workspace_id) VALUES ($1)`, ws.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO staff_users (email, workspace_id, password_hash, created_at) VALUES ($1, $2, $3, $4)`,
			staff.Email, ws.ID, staff.PasswordHash, ts(staff.CreatedAt)); err != nil {
			return err
		}
		return s.insertKey(ctx, tx, key)
	})
	return translate(ctx, "create workspace", err)
}

// Workspace implements payoutkit.WorkspaceStore.
func (s *Store) Workspace(ctx context.Context, id string) (payoutkit.Workspace, error) {
	var ws payoutkit.Workspace
	err := s.w.ReadRow(ctx, workspaceSQL, id).Scan(&ws.ID, &ws.Name, &ws.WebhookURL, &ws.WebhookSecret, sqlcore.TimeCol{T: &ws.CreatedAt})
	if err != nil {
		return payoutkit.Workspace{}, translate(ctx, "workspace", err)
	}
	return ws, nil
}

// WorkspaceCount implements payoutkit.WorkspaceStore.
func (s *Store) WorkspaceCount(ctx context.Context) (int, error) {
	n, err := sqlcore.WorkspaceCount(ctx, s.w.Reader())
	if err != nil {
		return 0, translate(ctx, "count workspaces", err)
	}
	return n, nil
}

// WorkspaceIDs implements payoutkit.WorkspaceStore.
func (s *Store) WorkspaceIDs(ctx context.Context) ([]string, error) {
	ids, err := sqlcore.WorkspaceIDs(ctx, s.w.Reader())
	return ids, translate(ctx, "workspace ids", err)
}

// SetWebhook implements payoutkit.WorkspaceStore.
func (s *Store) SetWebhook(ctx context.Context, workspaceID, url, secret string) error {
	res, err := s.w.Admin().ExecContext(ctx, `UPDATE workspaces SET webhook_url = $2, webhook_secret = $3 WHERE id = $1`, workspaceID, url, secret)
	if err != nil {
		return translate(ctx, "set webhook", err)
	}
	return sqlcore.MustAffect(res, payoutkit.ErrNotFound)
}

// SwapWebhookSecret implements payoutkit.WorkspaceStore: one conditional
// UPDATE, its own short transaction.
func (s *Store) SwapWebhookSecret(ctx context.Context, workspaceID, old, next string) error {
	res, err := s.w.Admin().ExecContext(ctx, `UPDATE workspaces SET webhook_secret = $3 WHERE id = $1 AND webhook_secret = $2`, workspaceID, old, next)
	if err != nil {
		return translate(ctx, "swap webhook secret", err)
	}
	if err := sqlcore.MustAffect(res, payoutkit.ErrConflict); err != nil {
		if _, werr := s.Workspace(ctx, workspaceID); errors.Is(werr, payoutkit.ErrNotFound) {
			return werr
		}
		return err
	}
	return nil
}

// StaffUser implements payoutkit.WorkspaceStore.
func (s *Store) StaffUser(ctx context.Context, email string) (payoutkit.StaffUser, error) {
	var u payoutkit.StaffUser
	err := s.w.Reader().QueryRowContext(ctx, `SELECT workspace_id, email, password_hash, created_at FROM staff_users WHERE email = $1`, email).
		Scan(&u.WorkspaceID, &u.Email, &u.PasswordHash, sqlcore.TimeCol{T: &u.CreatedAt})
	if err != nil {
		return payoutkit.StaffUser{}, translate(ctx, "staff user", err)
	}
	return u, nil
}

// InsertAPIKey implements payoutkit.KeyStore.
func (s *Store) InsertAPIKey(ctx context.Context, key payoutkit.APIKey) error {
	return translate(ctx, "insert API key", s.insertKey(ctx, s.w.Admin(), key))
}

func (s *Store) insertKey(ctx context.Context, q sqlcore.Querier, key payoutkit.APIKey) error {
	_, err := q.ExecContext(ctx, `INSERT INTO api_keys (`+sqlcore.KeyCols+`) VALUES ($1, $2, $3, $4, $5, $6)`,
		key.Prefix, key.WorkspaceID, key.Hash[:], ts(key.CreatedAt), ts(key.RevokedAt), ts(key.LastUsedAt))
	return err
}

// APIKey implements payoutkit.KeyStore.
func (s *Store) APIKey(ctx context.Context, prefix string) (payoutkit.APIKey, error) {
	k, err := sqlcore.ScanKey(s.w.ReadRow(ctx, apiKeySQL, prefix))
	if err != nil {
		return payoutkit.APIKey{}, translate(ctx, "API key", err)
	}
	return k, nil
}

// apiKeyBalanceSQL reads a key and its workspace's balance in one query.
const apiKeyBalanceSQL = `SELECT k.prefix, k.workspace_id, k.hash, k.created_at, k.revoked_at, k.last_used_at, b.available, b.in_progress
	FROM api_keys k JOIN balances b ON b.workspace_id = k.workspace_id WHERE k.prefix = $1`

// APIKeyBalance implements payoutkit.KeyBalanceReader: one query for what
// GET /v1/balance needs.
func (s *Store) APIKeyBalance(ctx context.Context, prefix string) (payoutkit.APIKey, payoutkit.Balance, error) {
	var k payoutkit.APIKey
	var b payoutkit.Balance
	err := s.w.ReadRow(ctx, apiKeyBalanceSQL, prefix).Scan(&k.Prefix, &k.WorkspaceID, sqlcore.HashCol{H: &k.Hash},
		sqlcore.TimeCol{T: &k.CreatedAt}, sqlcore.TimeCol{T: &k.RevokedAt}, sqlcore.TimeCol{T: &k.LastUsedAt}, &b.Available, &b.InProgress)
	if err != nil {
		return payoutkit.APIKey{}, payoutkit.Balance{}, translate(ctx, "API key and balance", err)
	}
	return k, b, nil
}

// APIKeys implements payoutkit.KeyStore.
func (s *Store) APIKeys(ctx context.Context, workspaceID string) ([]payoutkit.APIKey, error) {
	keys, err := sqlcore.APIKeys(ctx, s.w.Reader(), workspaceID)
	if err != nil {
		return nil, translate(ctx, "API keys", err)
	}
	return keys, nil
}

// RevokeAPIKeys implements payoutkit.KeyStore.
func (s *Store) RevokeAPIKeys(ctx context.Context, workspaceID, prefix string, at time.Time) (int, error) {
	n, err := s.revokeKeys(ctx, s.w.Admin(), workspaceID, prefix, at)
	return n, translate(ctx, "revoke API keys", err)
}

func (s *Store) revokeKeys(ctx context.Context, q sqlcore.Querier, workspaceID, prefix string, at time.Time) (int, error) {
	query, args := `UPDATE api_keys SET revoked_at = $2 WHERE workspace_id = $1 AND revoked_at IS NULL`, []any{workspaceID, ts(at)}
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

// ResetAPIKeys implements payoutkit.KeyStore.
func (s *Store) ResetAPIKeys(ctx context.Context, key payoutkit.APIKey) (int, error) {
	var revoked int
	ctx = detach(ctx) // see detach
	err := s.w.InTx(ctx, func(tx *sql.Tx) error {
		n, err := s.revokeKeys(ctx, tx, key.WorkspaceID, "", key.CreatedAt)
		if err != nil {
			return err
		}
		revoked = n
		return s.insertKey(ctx, tx, key)
	})
	if err != nil {
		return 0, translate(ctx, "reset API keys", err)
	}
	return revoked, nil
}

// TouchAPIKey implements payoutkit.KeyStore.
func (s *Store) TouchAPIKey(ctx context.Context, prefix string, at time.Time) error {
	_, err := s.w.Admin().ExecContext(ctx,
		`UPDATE api_keys SET last_used_at = $2 WHERE prefix = $1 AND (last_used_at IS NULL OR last_used_at < $2)`, prefix, ts(at))
	return translate(ctx, "touch API key", err)
}
