-- Contract section 11: staff roles, two-factor sign-in and the workspace's
-- rule that every staff user has it on.

-- Users from before roles keep what they could do: everything.
ALTER TABLE staff_users ADD COLUMN role TEXT NOT NULL DEFAULT 'viewer'
    CHECK (role IN ('admin', 'developer', 'viewer'));
UPDATE staff_users SET role = 'admin';
-- The sealed TOTP secret ('' while two-factor sign-in is off), the one
-- offered and not yet confirmed, and the last 30-second step whose code was
-- accepted (no code of it or an earlier step is accepted again).
ALTER TABLE staff_users ADD COLUMN totp_secret TEXT NOT NULL DEFAULT '';
ALTER TABLE staff_users ADD COLUMN totp_pending TEXT NOT NULL DEFAULT '';
ALTER TABLE staff_users ADD COLUMN totp_last_step BIGINT NOT NULL DEFAULT 0;
ALTER TABLE staff_users ADD COLUMN last_sign_in_at TIMESTAMPTZ;
-- The last-admin rule counts a workspace's admins.
CREATE INDEX staff_users_workspace_role ON staff_users (workspace_id, role);

-- Unused recovery codes, by their SHA-256; a code is deleted when used.
CREATE TABLE staff_recovery_codes (
    staff_email TEXT NOT NULL REFERENCES staff_users (email),
    code_hash   BYTEA NOT NULL CHECK (length(code_hash) = 32),
    PRIMARY KEY (staff_email, code_hash)
);

ALTER TABLE workspaces ADD COLUMN require_2fa BOOLEAN NOT NULL DEFAULT false;
