package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/payoutkit/payoutkit"
)

const (
	workspaceSQL = `SELECT id, name, webhook_url, webhook_secret, created_at FROM workspaces WHERE id = $1`
	apiKeySQL    = `SELECT ` + keyCols + ` FROM api_keys WHERE prefix = $1`
)

// CreateWorkspace implements payoutkit.WorkspaceStore.
func (s *Store) CreateWorkspace(ctx context.Context, ws payoutkit.Workspace, staff payoutkit.StaffUser, key payoutkit.APIKey) error {
	ctx = s.detach(ctx) // see detach
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO workspaces (id, name, webhook_url, webhook_secret, created_at) VALUES ($1, $2, $3, $4, $5)`,
			ws.ID, ws.Name, ws.WebhookURL, ws.WebhookSecret, s.ts(ws.CreatedAt)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO balances (workspace_id) VALUES ($1)`, ws.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO staff_users (email, workspace_id, password_hash, created_at) VALUES ($1, $2, $3, $4)`,
			staff.Email, ws.ID, staff.PasswordHash, s.ts(staff.CreatedAt)); err != nil {
			return err
		}
		return s.insertKey(ctx, tx, key)
	})
	return translate(ctx, "create workspace", err)
}

// Workspace implements payoutkit.WorkspaceStore.
func (s *Store) Workspace(ctx context.Context, id string) (payoutkit.Workspace, error) {
	var ws payoutkit.Workspace
	err := s.readRow(ctx, workspaceSQL, id).Scan(&ws.ID, &ws.Name, &ws.WebhookURL, &ws.WebhookSecret, timeCol{&ws.CreatedAt})
	if err != nil {
		return payoutkit.Workspace{}, translate(ctx, "workspace", err)
	}
	return ws, nil
}

// WorkspaceCount implements payoutkit.WorkspaceStore.
func (s *Store) WorkspaceCount(ctx context.Context) (int, error) {
	n, err := s.bunReader().NewSelect().Model((*WorkspaceRow)(nil)).Count(s.detach(ctx))
	if err != nil {
		return 0, translate(ctx, "count workspaces", err)
	}
	return int(n), nil
}

// WorkspaceIDs implements payoutkit.WorkspaceStore.
func (s *Store) WorkspaceIDs(ctx context.Context) ([]string, error) {
	// A cold path (the audit's), so bun's query builder over the model.
	var ids []string
	err := s.bunReader().NewSelect().Model((*WorkspaceRow)(nil)).Column("id").OrderExpr("created_at, id").Scan(s.detach(ctx), &ids)
	return ids, translate(ctx, "workspace ids", err)
}

// SetWebhook implements payoutkit.WorkspaceStore.
func (s *Store) SetWebhook(ctx context.Context, workspaceID, url, secret string) error {
	res, err := s.writer().ExecContext(ctx, `UPDATE workspaces SET webhook_url = $2, webhook_secret = $3 WHERE id = $1`, workspaceID, url, secret)
	if err != nil {
		return translate(ctx, "set webhook", err)
	}
	return mustAffect(res, payoutkit.ErrNotFound)
}

// SwapWebhookSecret implements payoutkit.WorkspaceStore: one conditional
// UPDATE, its own short transaction.
func (s *Store) SwapWebhookSecret(ctx context.Context, workspaceID, old, next string) error {
	res, err := s.writer().ExecContext(ctx, `UPDATE workspaces SET webhook_secret = $3 WHERE id = $1 AND webhook_secret = $2`, workspaceID, old, next)
	if err != nil {
		return translate(ctx, "swap webhook secret", err)
	}
	if err := mustAffect(res, payoutkit.ErrConflict); err != nil {
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
	err := s.reader().QueryRowContext(ctx, `SELECT workspace_id, email, password_hash, created_at FROM staff_users WHERE email = $1`, email).
		Scan(&u.WorkspaceID, &u.Email, &u.PasswordHash, timeCol{&u.CreatedAt})
	if err != nil {
		return payoutkit.StaffUser{}, translate(ctx, "staff user", err)
	}
	return u, nil
}

// workspaceExists tells a listing of an unknown workspace (ErrNotFound)
// from an empty one.
func (s *Store) workspaceExists(ctx context.Context, q querier, id string) error {
	var one int
	return q.QueryRowContext(ctx, `SELECT 1 FROM workspaces WHERE id = $1`, id).Scan(&one)
}

// InsertAPIKey implements payoutkit.KeyStore.
func (s *Store) InsertAPIKey(ctx context.Context, key payoutkit.APIKey) error {
	return translate(ctx, "insert API key", s.insertKey(ctx, s.writer(), key))
}

func (s *Store) insertKey(ctx context.Context, q querier, key payoutkit.APIKey) error {
	_, err := q.ExecContext(ctx, `INSERT INTO api_keys (`+keyCols+`) VALUES ($1, $2, $3, $4, $5, $6)`,
		key.Prefix, key.WorkspaceID, key.Hash[:], s.ts(key.CreatedAt), s.ts(key.RevokedAt), s.ts(key.LastUsedAt))
	return err
}

// APIKey implements payoutkit.KeyStore.
func (s *Store) APIKey(ctx context.Context, prefix string) (payoutkit.APIKey, error) {
	k, err := scanKey(s.readRow(ctx, apiKeySQL, prefix))
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
	err := s.readRow(ctx, apiKeyBalanceSQL, prefix).Scan(&k.Prefix, &k.WorkspaceID, hashCol{&k.Hash},
		timeCol{&k.CreatedAt}, timeCol{&k.RevokedAt}, timeCol{&k.LastUsedAt}, &b.Available, &b.InProgress)
	if err != nil {
		return payoutkit.APIKey{}, payoutkit.Balance{}, translate(ctx, "API key and balance", err)
	}
	return k, b, nil
}

// APIKeys implements payoutkit.KeyStore.
func (s *Store) APIKeys(ctx context.Context, workspaceID string) ([]payoutkit.APIKey, error) {
	// A cold path (key listings), so bun's query builder over the model.
	var rows []APIKeyRow
	err := s.bunReader().NewSelect().Model(&rows).Where("workspace_id = ?", workspaceID).
		OrderExpr("created_at DESC, prefix DESC").Scan(s.detach(ctx))
	if err != nil {
		return nil, translate(ctx, "API keys", err)
	}
	keys := make([]payoutkit.APIKey, len(rows))
	for i, r := range rows {
		k := payoutkit.APIKey{Prefix: r.Prefix, WorkspaceID: r.WorkspaceID,
			CreatedAt: r.CreatedAt.Time, RevokedAt: r.RevokedAt.Time, LastUsedAt: r.LastUsedAt.Time}
		if err := (hashCol{&k.Hash}).Scan(r.Hash); err != nil {
			return nil, err
		}
		keys[i] = k
	}
	return keys, nil
}

// RevokeAPIKeys implements payoutkit.KeyStore.
func (s *Store) RevokeAPIKeys(ctx context.Context, workspaceID, prefix string, at time.Time) (int, error) {
	n, err := s.revokeKeys(ctx, s.writer(), workspaceID, prefix, at)
	return n, translate(ctx, "revoke API keys", err)
}

func (s *Store) revokeKeys(ctx context.Context, q querier, workspaceID, prefix string, at time.Time) (int, error) {
	query, args := `UPDATE api_keys SET revoked_at = $2 WHERE workspace_id = $1 AND revoked_at IS NULL`, []any{workspaceID, s.ts(at)}
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
	ctx = s.detach(ctx) // see detach
	err := s.inTx(ctx, func(tx *sql.Tx) error {
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
	_, err := s.writer().ExecContext(ctx,
		`UPDATE api_keys SET last_used_at = $2 WHERE prefix = $1 AND (last_used_at IS NULL OR last_used_at < $2)`, prefix, s.ts(at))
	return translate(ctx, "touch API key", err)
}

// mustAffect returns errNone unless res changed a row.
func mustAffect(res sql.Result, errNone error) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	if n == 0 {
		return errNone
	}
	return nil
}
