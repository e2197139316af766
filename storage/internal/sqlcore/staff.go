package sqlcore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/payoutkit/payoutkit"
)

// Staff users' columns, with the count of their unused recovery codes.
const StaffUserCols = `workspace_id, email, password_hash, created_at, role, totp_secret, totp_pending, totp_last_step, last_sign_in_at,
	(SELECT count(*) FROM staff_recovery_codes r WHERE r.staff_email = staff_users.email)`

const insertStaffSQL = `INSERT INTO staff_users (email, workspace_id, password_hash, created_at, role) VALUES ($1, $2, $3, $4, $5)`

// ScanStaffUser scans StaffUserCols.
func ScanStaffUser(sc Scanner) (payoutkit.StaffUser, error) {
	var u payoutkit.StaffUser
	err := sc.Scan(&u.WorkspaceID, &u.Email, &u.PasswordHash, TimeCol{&u.CreatedAt}, &u.Role,
		&u.TOTPSecret, &u.TOTPPending, &u.TOTPLastStep, TimeCol{&u.LastSignInAt}, &u.RecoveryCodes)
	return u, err
}

// staffRole is the role a user is stored with: viewer unless told.
func staffRole(r payoutkit.Role) string {
	if r == "" {
		return string(payoutkit.RoleViewer)
	}
	return string(r)
}

// lockStaffOf serialises the workspace's changes of staff roles and
// removals (on PostgreSQL a row lock of the workspace that leaves the
// foreign-key checks of its payouts alone; SQLite's writer holds the whole
// database), and is ErrNotFound for an unknown workspace.
func (o *Ops) lockStaffOf(ctx context.Context, tx *sql.Tx, workspaceID string) error {
	var one int
	err := tx.QueryRowContext(ctx, o.c.WorkspaceLockSQL, workspaceID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return payoutkit.ErrNotFound
	}
	return err
}

// keepAnAdmin is ErrConflict when email is the workspace's only admin. It
// runs after lockStaffOf, in a statement of its own, so that it reads the
// latest admins.
func (o *Ops) keepAnAdmin(ctx context.Context, tx *sql.Tx, workspaceID, email string) error {
	var others, self int
	err := tx.QueryRowContext(ctx, `SELECT
		count(*) FILTER (WHERE email <> $2), count(*) FILTER (WHERE email = $2)
		FROM staff_users WHERE workspace_id = $1 AND role = 'admin'`, workspaceID, email).Scan(&others, &self)
	if err != nil {
		return err
	}
	if self > 0 && others == 0 {
		return payoutkit.ErrConflict
	}
	return nil
}

// StaffUsers implements staff.Store.
func (o *Ops) StaffUsers(ctx context.Context, workspaceID string) ([]payoutkit.StaffUser, error) {
	rows, err := o.w.Reader().QueryContext(ctx, `SELECT `+StaffUserCols+` FROM staff_users WHERE workspace_id = $1 ORDER BY email`, workspaceID)
	if err != nil {
		return nil, o.c.Translate(ctx, "staff users", err)
	}
	list, err := Collect(rows, ScanStaffUser)
	return list, o.c.Translate(ctx, "staff users", err)
}

// SetStaffRole implements staff.Store.
func (o *Ops) SetStaffRole(ctx context.Context, workspaceID, email string, role payoutkit.Role, log payoutkit.SecurityLogEntry) error {
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		if err := o.lockStaffOf(ctx, tx, workspaceID); err != nil {
			return err
		}
		if role != payoutkit.RoleAdmin {
			if err := o.keepAnAdmin(ctx, tx, workspaceID, email); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `UPDATE staff_users SET role = $3 WHERE email = $1 AND workspace_id = $2`, email, workspaceID, string(role))
		if err != nil {
			return err
		}
		if err := MustAffect(res, payoutkit.ErrNotFound); err != nil {
			return err
		}
		return o.appendLog(ctx, tx, log)
	})
	return o.c.Translate(ctx, "set staff role", err)
}

// SetStaffTOTP implements staff.Store.
func (o *Ops) SetStaffTOTP(ctx context.Context, email string, t payoutkit.StaffTOTP, log *payoutkit.SecurityLogEntry) error {
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE staff_users SET totp_secret = $2, totp_pending = $3, totp_last_step = $4 WHERE email = $1`,
			email, t.Secret, t.Pending, t.LastStep)
		if err != nil {
			return err
		}
		if err := MustAffect(res, payoutkit.ErrNotFound); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM staff_recovery_codes WHERE staff_email = $1`, email); err != nil {
			return err
		}
		for _, h := range t.RecoveryHashes {
			if _, err := tx.ExecContext(ctx, `INSERT INTO staff_recovery_codes (staff_email, code_hash) VALUES ($1, $2)`, email, h[:]); err != nil {
				return err
			}
		}
		if log == nil {
			return nil
		}
		return o.appendLog(ctx, tx, *log)
	})
	return o.c.Translate(ctx, "set staff totp", err)
}

// UseTOTPStep implements staff.Store: one conditional UPDATE.
func (o *Ops) UseTOTPStep(ctx context.Context, email string, step int64) error {
	res, err := o.execAlone(ctx, `UPDATE staff_users SET totp_last_step = $2
		WHERE email = $1 AND totp_secret <> '' AND totp_last_step < $2`, email, step)
	if err != nil {
		return o.c.Translate(ctx, "use totp step", err)
	}
	return MustAffect(res, payoutkit.ErrConflict)
}

// UseRecoveryCode implements staff.Store.
func (o *Ops) UseRecoveryCode(ctx context.Context, email string, hash [32]byte) error {
	res, err := o.execAlone(ctx, `DELETE FROM staff_recovery_codes WHERE staff_email = $1 AND code_hash = $2`, email, hash[:])
	if err != nil {
		return o.c.Translate(ctx, "use recovery code", err)
	}
	return MustAffect(res, payoutkit.ErrNotFound)
}

// SetRequireTwoFactor implements staff.Store.
func (o *Ops) SetRequireTwoFactor(ctx context.Context, workspaceID string, on bool, log payoutkit.SecurityLogEntry) error {
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE workspaces SET require_2fa = $2 WHERE id = $1`, workspaceID, on)
		if err != nil {
			return err
		}
		if err := MustAffect(res, payoutkit.ErrNotFound); err != nil {
			return err
		}
		return o.appendLog(ctx, tx, log)
	})
	return o.c.Translate(ctx, "set require two-factor", err)
}
