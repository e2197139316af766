package payoutkit

import (
	"crypto/sha256"
	"time"
)

// The records of staff logins, as the stores keep them for package staff,
// which signs staff in to the portal and judges their roles. The engine
// writes a workspace's first admin with the workspace (CreateWorkspace);
// the rest of staff identity is package staff's.

// StaffUser is a person who signs in to the portal with e-mail and password.
// TOTPSecret is the sealed secret of two-factor sign-in, and TOTPPending one
// offered but not yet confirmed (each empty when none); no code of a
// 30-second step at or before TOTPLastStep is accepted again. RecoveryCodes
// counts the unused recovery codes, read only: they are stored hashed, through
// SetStaffTOTP.
type StaffUser struct {
	WorkspaceID   string
	Email         string // lower-cased; unique across workspaces
	PasswordHash  string // bcrypt
	CreatedAt     time.Time
	Role          Role
	TOTPSecret    string
	TOTPPending   string
	TOTPLastStep  int64
	RecoveryCodes int
	LastSignInAt  time.Time // zero if never
}

// TwoFactor reports whether the user has two-factor sign-in on.
func (u StaffUser) TwoFactor() bool { return u.TOTPSecret != "" }

// StaffSession is a signed-in portal session, stored by the SHA-256 of its
// token (the cookie's value), never the token. Role and TwoFactor are read
// with it from its user, not stored, to show the right pages; every staff
// action reads the role again.
type StaffSession struct {
	TokenHash   [sha256.Size]byte
	WorkspaceID string
	StaffEmail  string
	CreatedAt   time.Time
	LastSeenAt  time.Time
	Role        Role
	TwoFactor   bool
}

// SignInFailures is one e-mail's window of failed sign-ins.
type SignInFailures struct {
	Email       string
	Count       int
	WindowStart time.Time // zero when there is no window
}

// StaffTOTP is a staff user's two-factor sign-in state as the store keeps
// it: the sealed secrets, the last accepted step and the SHA-256 of each
// unused recovery code.
type StaffTOTP struct {
	Secret, Pending string
	LastStep        int64
	RecoveryHashes  [][32]byte
}

// Role is what a staff user may do in the portal (contract, section 11).
type Role string

// The staff roles, each allowed what the ones after it are and more: an
// admin everything (the team, the address book, the policy, approvals, the
// security log), a developer the keys and webhooks, a viewer only reading
// and their own password and two-factor sign-in.
const (
	RoleAdmin     Role = "admin"
	RoleDeveloper Role = "developer"
	RoleViewer    Role = "viewer"
)

// rank orders the roles: a role may do what every lower rank may.
func (r Role) rank() int {
	switch r {
	case RoleAdmin:
		return 3
	case RoleDeveloper:
		return 2
	case RoleViewer:
		return 1
	}
	return 0
}

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// Allows reports whether a user of role r may do what needs role need.
func (r Role) Allows(need Role) bool { return r.rank() >= need.rank() && need.Valid() }
