package payoutkit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

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

// ParseRole reads a role's name; anything else is a 40000 on role.
func ParseRole(s string) (Role, error) {
	r := Role(strings.ToLower(strings.TrimSpace(s)))
	if !r.Valid() {
		return "", invalidField("role", "must be admin, developer or viewer")
	}
	return r, nil
}

// The actions of the security log about staff users and their sign-ins.
const (
	ActionSignInSucceeded  = "signin.succeeded"
	ActionSignInFailed     = "signin.failed"
	ActionSignInThrottled  = "signin.throttled"
	ActionTwoFactorOn      = "twofactor.enabled"
	ActionTwoFactorOff     = "twofactor.disabled"
	ActionTwoFactorReset   = "twofactor.reset"
	ActionTwoFactorPolicy  = "twofactor.required"
	ActionStaffAdded       = "staff.added"
	ActionStaffRemoved     = "staff.removed"
	ActionStaffRoleChanged = "staff.role_changed"
)

// StaffCaller is a signed-in staff user making a call: their session and
// the client address of the request (empty when there is none).
type StaffCaller struct {
	Session    StaffSession
	ClientAddr string
}

func (c StaffCaller) actor() Actor { return StaffActor(c.Session.StaffEmail, c.ClientAddr) }

// Authorize returns the caller's user, as stored now, when their role
// allows what needs role need; otherwise ErrForbidden. The role is read from
// the store, not from the session value, so that a role changed on another
// instance holds at once and a session value made up by a caller grants
// nothing. A user removed meanwhile is ErrUnauthorized.
func (e *Engine) Authorize(ctx context.Context, c StaffCaller, need Role) (StaffUser, error) {
	u, err := e.store.StaffUser(ctx, c.Session.StaffEmail)
	if errors.Is(err, ErrNotFound) || err == nil && u.WorkspaceID != c.Session.WorkspaceID {
		return StaffUser{}, newError(ErrUnauthorized, "no such staff user")
	} else if err != nil {
		return StaffUser{}, err
	}
	if !u.Role.Allows(need) {
		return StaffUser{}, errForbidden(fmt.Sprintf("this needs the %s role; %s has the %s role", need, u.Email, u.Role))
	}
	return u, nil
}

// StepUp checks a sensitive action's fresh code (contract, section 11):
// the caller must be an admin with two-factor sign-in on, and code a
// current code of theirs not accepted before (it is used up here, on every
// instance). Otherwise ErrForbidden, with a message saying which of these
// failed; nothing else changes.
func (e *Engine) StepUp(ctx context.Context, c StaffCaller, code string) error {
	u, err := e.Authorize(ctx, c, RoleAdmin)
	if err != nil {
		return err
	}
	if !u.TwoFactor() {
		return errForbidden("this action needs a code from two-factor sign-in: turn it on in Settings → Security first")
	}
	code = normalizeCode(code)
	if code == "" {
		return errForbidden("this action needs a fresh two-factor code (totp)")
	}
	// Guessing step-up codes with a stolen session is held to the pace of
	// guessing sign-ins: wrong codes count toward the same limit.
	now := e.clock()
	f, err := e.store.SignInFailures(ctx, u.Email)
	if err != nil {
		return err
	}
	if lerr := e.locked(f, now); lerr != nil {
		return errForbidden("too many wrong codes: " + lerr.Error())
	}
	ok, err := e.useTOTP(ctx, u, code)
	if err != nil {
		return err
	}
	if !ok {
		if _, err := e.store.RecordSignInFailure(ctx, u.Email, now, e.signInWindow); err != nil {
			return err
		}
		return errForbidden("the two-factor code is wrong or was already used")
	}
	return nil
}

// StaffUsers lists the caller's workspace's staff users, by e-mail, for an
// admin, without their password hashes or two-factor secrets.
func (e *Engine) StaffUsers(ctx context.Context, c StaffCaller) ([]StaffUser, error) {
	if _, err := e.Authorize(ctx, c, RoleAdmin); err != nil {
		return nil, err
	}
	list, err := e.store.StaffUsers(ctx, c.Session.WorkspaceID)
	if err != nil {
		return nil, err
	}
	for i := range list {
		list[i] = list[i].public()
	}
	return list, nil
}

// public is u without what must never leave the engine.
func (u StaffUser) public() StaffUser {
	u.PasswordHash = ""
	if u.TOTPSecret != "" {
		u.TOTPSecret = "on"
	}
	u.TOTPPending = ""
	return u
}

// AddStaffAs adds a staff login with the given role to the caller's
// workspace, for an admin, and records it in the security log.
func (e *Engine) AddStaffAs(ctx context.Context, c StaffCaller, email string, role Role) (NewStaff, error) {
	if _, err := e.Authorize(ctx, c, RoleAdmin); err != nil {
		return NewStaff{}, err
	}
	return e.AddStaffWithRole(ctx, c.Session.WorkspaceID, email, role, c.actor())
}

// AddStaffWithRole adds a staff login with the given role to the workspace
// with a random password, returned once, and records it in the security
// log as by's. An invalid or taken e-mail is a 40000 on staff_email, an
// invalid role one on role.
func (e *Engine) AddStaffWithRole(ctx context.Context, workspaceID, email string, role Role, by Actor) (NewStaff, error) {
	var v validation
	email = strings.ToLower(strings.TrimSpace(email))
	checkEmail(&v, email)
	if !role.Valid() {
		v.add("role", "must be admin, developer or viewer")
	}
	if err := v.err(); err != nil {
		return NewStaff{}, err
	}
	if _, err := e.workspace(ctx, workspaceID); err != nil {
		return NewStaff{}, err
	}
	password := randomBase62(20)
	hash, err := bcrypt.GenerateFromPassword([]byte(password), e.pwCost)
	if err != nil {
		return NewStaff{}, fmt.Errorf("hashing staff password: %w", err)
	}
	now := e.clock()
	u := StaffUser{WorkspaceID: workspaceID, Email: email, PasswordHash: string(hash), CreatedAt: now, Role: role}
	log := logEntry(workspaceID, now, ActionStaffAdded, by, map[string]string{"email": email, "role": string(role)})
	err = e.store.InsertStaffUser(ctx, u, log)
	if errors.Is(err, ErrConflict) {
		return NewStaff{}, invalidField("staff_email", "is already in use")
	} else if err != nil {
		return NewStaff{}, err
	}
	return NewStaff{Email: email, Password: password, Role: role}, nil
}

// SetStaffRoleAs changes the role of a staff user of the caller's
// workspace: an admin's action with a fresh step-up code (StepUp). Demoting
// the last admin is ErrConflict; an unknown user ErrNotFound.
func (e *Engine) SetStaffRoleAs(ctx context.Context, c StaffCaller, email string, role Role, code string) error {
	if !role.Valid() {
		return invalidField("role", "must be admin, developer or viewer")
	}
	if err := e.StepUp(ctx, c, code); err != nil {
		return err
	}
	return e.setStaffRole(ctx, c.Session.WorkspaceID, email, role, c.actor())
}

func (e *Engine) setStaffRole(ctx context.Context, workspaceID, email string, role Role, by Actor) error {
	email = strings.ToLower(strings.TrimSpace(email))
	log := logEntry(workspaceID, e.clock(), ActionStaffRoleChanged, by, map[string]string{"email": email, "role": string(role)})
	switch err := e.store.SetStaffRole(ctx, workspaceID, email, role, log); {
	case errors.Is(err, ErrConflict):
		return errConflict("the workspace's last admin cannot be demoted: make another user an admin first")
	case errors.Is(err, ErrNotFound):
		return errNotFound("staff user")
	default:
		return err
	}
}

// RemoveStaffAs removes a staff user of the caller's workspace and ends
// their sessions, for an admin. Removing the last admin is ErrConflict.
func (e *Engine) RemoveStaffAs(ctx context.Context, c StaffCaller, email string) (int, error) {
	if _, err := e.Authorize(ctx, c, RoleAdmin); err != nil {
		return 0, err
	}
	return e.RemoveStaffBy(ctx, c.Session.WorkspaceID, email, c.actor())
}

// RemoveStaffBy deletes the workspace's staff login with the given e-mail,
// ends their sessions on every instance, records it in the security log as
// by's, and returns how many logins it removed (0 when the workspace has no
// such login). Removing the workspace's last admin is ErrConflict.
func (e *Engine) RemoveStaffBy(ctx context.Context, workspaceID, email string, by Actor) (int, error) {
	if _, err := e.workspace(ctx, workspaceID); err != nil {
		return 0, err
	}
	email = strings.ToLower(strings.TrimSpace(email))
	log := logEntry(workspaceID, e.clock(), ActionStaffRemoved, by, map[string]string{"email": email})
	n, err := e.store.DeleteStaffUser(ctx, workspaceID, email, log)
	if errors.Is(err, ErrConflict) {
		return 0, errConflict("the workspace's last admin cannot be removed: make another user an admin first")
	}
	return n, err
}

// SetRequireTwoFactorAs turns the workspace's rule that every staff user
// has two-factor sign-in on or off, for an admin.
func (e *Engine) SetRequireTwoFactorAs(ctx context.Context, c StaffCaller, on bool) error {
	if _, err := e.Authorize(ctx, c, RoleAdmin); err != nil {
		return err
	}
	return e.SetRequireTwoFactor(ctx, c.Session.WorkspaceID, on, c.actor())
}

// SetRequireTwoFactor turns the workspace's rule that every staff user has
// two-factor sign-in on or off, and records it in the security log as by's.
func (e *Engine) SetRequireTwoFactor(ctx context.Context, workspaceID string, on bool, by Actor) error {
	log := logEntry(workspaceID, e.clock(), ActionTwoFactorPolicy, by, map[string]string{"required": fmt.Sprint(on)})
	err := e.store.SetRequireTwoFactor(ctx, workspaceID, on, log)
	if errors.Is(err, ErrNotFound) {
		return errNotFound("workspace")
	}
	return err
}

// ApprovePayoutAs approves a held payout: an admin's action with a fresh
// step-up code.
func (e *Engine) ApprovePayoutAs(ctx context.Context, c StaffCaller, payoutID, code string) (Payout, error) {
	if err := e.StepUp(ctx, c, code); err != nil {
		return Payout{}, err
	}
	return e.ApprovePayout(ctx, c.Session.WorkspaceID, payoutID, c.actor())
}

// RejectPayoutAs rejects a held payout: an admin's action with a fresh
// step-up code.
func (e *Engine) RejectPayoutAs(ctx context.Context, c StaffCaller, payoutID, reason, code string) (Payout, error) {
	if err := e.StepUp(ctx, c, code); err != nil {
		return Payout{}, err
	}
	return e.RejectPayout(ctx, c.Session.WorkspaceID, payoutID, reason, c.actor())
}

// AddAddressAs adds an entry to the address book: an admin's action with
// a fresh step-up code. The entry is checked before the code is used up.
func (e *Engine) AddAddressAs(ctx context.Context, c StaffCaller, network, addr, label, code string) (AddressEntry, error) {
	if err := e.checkAddress(network, addr, label); err != nil {
		return AddressEntry{}, err
	}
	if err := e.StepUp(ctx, c, code); err != nil {
		return AddressEntry{}, err
	}
	return e.AddAddress(ctx, c.Session.WorkspaceID, network, addr, label, c.actor())
}

// RemoveAddressAs removes an entry of the address book, for an admin.
func (e *Engine) RemoveAddressAs(ctx context.Context, c StaffCaller, network, addr string) (int, error) {
	if _, err := e.Authorize(ctx, c, RoleAdmin); err != nil {
		return 0, err
	}
	return e.RemoveAddress(ctx, c.Session.WorkspaceID, network, addr, c.actor())
}

// SetPayoutPolicyAs changes the payout policy: an admin's action with a
// fresh step-up code. The patch is checked before the code is used up.
func (e *Engine) SetPayoutPolicyAs(ctx context.Context, c StaffCaller, patch PolicyPatch, code string) (PayoutPolicy, error) {
	if err := patch.check(); err != nil {
		return PayoutPolicy{}, err
	}
	if err := e.StepUp(ctx, c, code); err != nil {
		return PayoutPolicy{}, err
	}
	return e.SetPayoutPolicy(ctx, c.Session.WorkspaceID, patch, c.actor())
}
