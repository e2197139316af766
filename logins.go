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
type StaffUser struct {
	WorkspaceID  string
	Email        string // lower-cased; unique across workspaces
	PasswordHash string // bcrypt
	CreatedAt    time.Time
	// Role is what the user may do in the portal.
	Role Role
	// TOTPSecret is the sealed secret of the user's two-factor sign-in;
	// empty while it is off.
	TOTPSecret string
	// TOTPPending is the sealed secret offered on the security page and not
	// yet confirmed with a code; empty when none is offered.
	TOTPPending string
	// TOTPLastStep is the last 30-second step whose code was accepted: no
	// code of this step or an earlier one is accepted again.
	TOTPLastStep int64
	// RecoveryCodes is how many unused recovery codes the user has (read
	// only: the codes are stored hashed, through SetStaffTOTP).
	RecoveryCodes int
	// LastSignInAt is when the user last signed in; zero if never.
	LastSignInAt time.Time
}

// TwoFactor reports whether the user has two-factor sign-in on.
func (u StaffUser) TwoFactor() bool { return u.TOTPSecret != "" }

// StaffSession is a staff user's signed-in portal session. The session's
// token (the cookie's value) is never stored, only its SHA-256.
type StaffSession struct {
	TokenHash   [sha256.Size]byte
	WorkspaceID string
	StaffEmail  string
	CreatedAt   time.Time
	LastSeenAt  time.Time
	// Role and TwoFactor are the user's role and whether they have
	// two-factor sign-in on, as package staff read them with the session
	// (not stored with it): for showing the right pages and forms; every
	// staff action reads the role again.
	Role      Role
	TwoFactor bool
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
	Secret         string
	Pending        string
	LastStep       int64
	RecoveryHashes [][32]byte
}

// Role is what a staff user may do in the portal (contract, section 11).
type Role string

// The staff roles, each allowed what the ones after it are and more.
const (
	// RoleAdmin may do everything: the team, the address book, the payout
	// policy, approvals and the security log.
	RoleAdmin Role = "admin"
	// RoleDeveloper may use Settings → Developer (keys, webhooks) and read
	// every page.
	RoleDeveloper Role = "developer"
	// RoleViewer may read every page and change nothing but their own
	// password and two-factor sign-in.
	RoleViewer Role = "viewer"
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
