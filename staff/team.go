package staff

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/random"
	"golang.org/x/crypto/bcrypt"
)

// The staff roles (contract, section 11), each allowed what the ones after
// it are and more.
const (
	// RoleAdmin may do everything: the team, the address book, the payout
	// policy, approvals and the security log.
	RoleAdmin = payoutkit.RoleAdmin
	// RoleDeveloper may use Settings → Developer (keys, webhooks) and read
	// every page.
	RoleDeveloper = payoutkit.RoleDeveloper
	// RoleViewer may read every page and change nothing but their own
	// password and two-factor sign-in.
	RoleViewer = payoutkit.RoleViewer
)

// ParseRole reads a role's name; anything else is a 40000 on role.
func ParseRole(s string) (payoutkit.Role, error) {
	r := payoutkit.Role(strings.ToLower(strings.TrimSpace(s)))
	if !r.Valid() {
		return "", invalidField("role", "must be admin, developer or viewer")
	}
	return r, nil
}

// NewUser is a freshly added staff login with its password, shown once.
type NewUser struct {
	Email    string         `json:"staff_email"`
	Password string         `json:"staff_password"`
	Role     payoutkit.Role `json:"role,omitempty"`
}

// Authorize returns the caller's user, as stored now (without password
// hash or secrets), when their role allows what needs role need; otherwise
// ErrForbidden. The role is read from the store, not from the session
// value, so that a role changed on another instance holds at once and a
// session value made up by a caller grants nothing. A user removed
// meanwhile is ErrUnauthorized. The engine's action then takes c.Actor().
func (t *Team) Authorize(ctx context.Context, c Caller, need payoutkit.Role) (payoutkit.StaffUser, error) {
	u, err := t.user(ctx, c, need)
	return public(u), err
}

// user is Authorize with the user as stored.
func (t *Team) user(ctx context.Context, c Caller, need payoutkit.Role) (payoutkit.StaffUser, error) {
	u, err := t.store.StaffUser(ctx, c.Session.StaffEmail)
	if errors.Is(err, payoutkit.ErrNotFound) || err == nil && u.WorkspaceID != c.Session.WorkspaceID {
		return payoutkit.StaffUser{}, errorOf(payoutkit.ErrUnauthorized, "no such staff user")
	} else if err != nil {
		return payoutkit.StaffUser{}, err
	}
	if !u.Role.Allows(need) {
		return payoutkit.StaffUser{}, errorOf(payoutkit.ErrForbidden, fmt.Sprintf("this needs the %s role; %s has the %s role", need, u.Email, u.Role))
	}
	return u, nil
}

// StepUp checks a sensitive action's fresh code (contract, section 11):
// the caller must be an admin with two-factor sign-in on, and code a
// current code of theirs not accepted before (it is used up here, on every
// instance). Otherwise ErrForbidden, with a message saying which of these
// failed; nothing else changes. Wrong codes count toward the e-mail's
// sign-in limit, so that a stolen session guesses codes no faster than a
// sign-in guesses passwords.
func (t *Team) StepUp(ctx context.Context, c Caller, code string) error {
	u, err := t.user(ctx, c, RoleAdmin)
	if err != nil {
		return err
	}
	forbidden := func(msg string) error { return errorOf(payoutkit.ErrForbidden, msg) }
	if !u.TwoFactor() {
		return forbidden("this action needs a code from two-factor sign-in: turn it on in Settings → Security first")
	}
	code = normalizeCode(code)
	if code == "" {
		return forbidden("this action needs a fresh two-factor code (totp)")
	}
	now := t.clock()
	f, err := t.store.SignInFailures(ctx, u.Email)
	if err != nil {
		return err
	}
	if lerr := t.locked(f, now); lerr != nil {
		return forbidden("too many wrong codes: " + lerr.Error())
	}
	ok, err := t.useTOTP(ctx, u, code)
	if err != nil {
		return err
	}
	if !ok {
		if _, err := t.store.RecordSignInFailure(ctx, u.Email, now, t.cfg.SignInWindow); err != nil {
			return err
		}
		return forbidden("the two-factor code is wrong or was already used")
	}
	return nil
}

// SteppedUp is the caller as the actor of an engine action that needs a
// fresh code: the engine runs StepUp with code (Actor.Confirm) after it has
// checked the action's input and before it changes anything, so that a
// mistyped address or limit does not use the code up.
func (t *Team) SteppedUp(c Caller, code string) payoutkit.Actor {
	by := c.Actor()
	by.Confirm = func(ctx context.Context) error { return t.StepUp(ctx, c, code) }
	return by
}

// Users lists the workspace's staff users, by e-mail, without their
// password hashes or two-factor secrets.
func (t *Team) Users(ctx context.Context, workspaceID string) ([]payoutkit.StaffUser, error) {
	list, err := t.store.StaffUsers(ctx, workspaceID)
	if err != nil {
		return nil, err
	}
	for i := range list {
		list[i] = public(list[i])
	}
	return list, nil
}

// public is u without what must never leave the package.
func public(u payoutkit.StaffUser) payoutkit.StaffUser {
	u.PasswordHash = ""
	if u.TOTPSecret != "" {
		u.TOTPSecret = "on"
	}
	u.TOTPPending = ""
	return u
}

// AddUser adds a staff login with the given role to the workspace with a
// random password, returned once, and records it in the security log as
// by's. An invalid or taken e-mail is a 40000 on staff_email, an invalid
// role one on role.
func (t *Team) AddUser(ctx context.Context, workspaceID, email string, role payoutkit.Role, by payoutkit.Actor) (NewUser, error) {
	var fields []payoutkit.FieldError
	email = strings.ToLower(strings.TrimSpace(email))
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || len(email) > 254 {
		fields = append(fields, payoutkit.FieldError{Field: "staff_email", Message: "must be an e-mail address"})
	}
	if !role.Valid() {
		fields = append(fields, payoutkit.FieldError{Field: "role", Message: "must be admin, developer or viewer"})
	}
	if len(fields) > 0 {
		return NewUser{}, invalid(fields...)
	}
	if err := t.workspaceExists(ctx, workspaceID); err != nil {
		return NewUser{}, err
	}
	password := random.Base62(20)
	hash, err := bcrypt.GenerateFromPassword([]byte(password), t.pwCost)
	if err != nil {
		return NewUser{}, fmt.Errorf("hashing staff password: %w", err)
	}
	now := t.clock()
	u := payoutkit.StaffUser{WorkspaceID: workspaceID, Email: email, PasswordHash: string(hash), CreatedAt: now, Role: role}
	log := logEntry(workspaceID, now, ActionStaffAdded, by, map[string]string{"email": email, "role": string(role)})
	err = t.store.InsertStaffUser(ctx, u, log)
	if errors.Is(err, payoutkit.ErrConflict) {
		return NewUser{}, invalidField("staff_email", "is already in use")
	} else if err != nil {
		return NewUser{}, err
	}
	return NewUser{Email: email, Password: password, Role: role}, nil
}

// SetRole changes the role of the caller's workspace's staff user with the
// given e-mail: an admin's action with a fresh step-up code (StepUp).
// Demoting the last admin is ErrConflict; an unknown user ErrNotFound.
func (t *Team) SetRole(ctx context.Context, c Caller, email string, role payoutkit.Role, code string) error {
	if !role.Valid() {
		return invalidField("role", "must be admin, developer or viewer")
	}
	if err := t.StepUp(ctx, c, code); err != nil {
		return err
	}
	workspaceID := c.Session.WorkspaceID
	email = strings.ToLower(strings.TrimSpace(email))
	log := logEntry(workspaceID, t.clock(), ActionStaffRoleChanged, c.Actor(), map[string]string{"email": email, "role": string(role)})
	switch err := t.store.SetStaffRole(ctx, workspaceID, email, role, log); {
	case errors.Is(err, payoutkit.ErrConflict):
		return errorOf(payoutkit.ErrConflict, "the workspace's last admin cannot be demoted: make another user an admin first")
	case errors.Is(err, payoutkit.ErrNotFound):
		return errNotFound("staff user")
	default:
		return err
	}
}

// RemoveUser deletes the workspace's staff login with the given e-mail,
// ends their sessions on every instance, records it in the security log as
// by's, and returns how many logins it removed (0 when the workspace has no
// such login). Removing the workspace's last admin is ErrConflict.
func (t *Team) RemoveUser(ctx context.Context, workspaceID, email string, by payoutkit.Actor) (int, error) {
	if err := t.workspaceExists(ctx, workspaceID); err != nil {
		return 0, err
	}
	email = strings.ToLower(strings.TrimSpace(email))
	log := logEntry(workspaceID, t.clock(), ActionStaffRemoved, by, map[string]string{"email": email})
	n, err := t.store.DeleteStaffUser(ctx, workspaceID, email, log)
	if errors.Is(err, payoutkit.ErrConflict) {
		return 0, errorOf(payoutkit.ErrConflict, "the workspace's last admin cannot be removed: make another user an admin first")
	}
	return n, err
}

// SetRequireTwoFactor turns the workspace's rule that every staff user has
// two-factor sign-in on or off, and records it in the security log as by's.
func (t *Team) SetRequireTwoFactor(ctx context.Context, workspaceID string, on bool, by payoutkit.Actor) error {
	log := logEntry(workspaceID, t.clock(), ActionTwoFactorPolicy, by, map[string]string{"required": fmt.Sprint(on)})
	err := t.store.SetRequireTwoFactor(ctx, workspaceID, on, log)
	if errors.Is(err, payoutkit.ErrNotFound) {
		return errNotFound("workspace")
	}
	return err
}
