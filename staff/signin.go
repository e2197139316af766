package staff

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/random"
	"golang.org/x/crypto/bcrypt"
)

// SignInLockedError is the error of a sign-in refused because its e-mail
// failed too often lately. RetryAfter is when the window passes.
type SignInLockedError struct{ RetryAfter time.Duration }

func (e *SignInLockedError) Error() string {
	return fmt.Sprintf("too many failed sign-ins; try again in %s", e.RetryAfter.Round(time.Second))
}

// NewSession is a freshly started session. Token is the cookie's value:
// hand it to the browser and forget it.
type NewSession struct {
	Token   string
	Session payoutkit.StaffSession
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

// sessionTouchInterval bounds how often a session's last use is written, so
// that checking a session stays a read.
const sessionTouchInterval = time.Minute

// minPasswordLen is the shortest staff password accepted; bcrypt reads no
// more than maxPasswordLen bytes.
const (
	minPasswordLen = 12
	maxPasswordLen = 72
)

// SignInStart is the answer to a right e-mail and password: a session, or,
// for a user with two-factor sign-in on, the pending state of the second
// step (Pending, to hand to FinishSignIn with a code before
// PendingExpires).
type SignInStart struct {
	Session        NewSession
	Pending        string
	PendingExpires time.Time
}

// signInPendingTTL is how long the second step of a sign-in may wait.
const signInPendingTTL = 5 * time.Minute

// SignIn checks a staff user's e-mail and password and starts a session,
// unless the user has two-factor sign-in on: then it returns the pending
// state of the second step instead (FinishSignIn). A wrong pair is
// ErrUnauthorized, with the same message and about the same cost whether
// or not the e-mail exists, and counts as a failure; an e-mail that failed
// Config.SignInMaxFailures times within Config.SignInWindow is a
// *SignInLockedError until the window has passed, even with the right
// password. clientAddr, when known, goes into the security log with the
// outcome.
func (t *Team) SignIn(ctx context.Context, email, password, clientAddr string) (SignInStart, error) {
	u, now, err := t.checkSignIn(ctx, email, password, clientAddr)
	if err != nil {
		return SignInStart{}, err
	}
	if u.TwoFactor() {
		expires := now.Add(signInPendingTTL)
		return SignInStart{Pending: pendingToken(u, expires), PendingExpires: expires}, nil
	}
	ns, err := t.startSession(ctx, u, now)
	if err != nil {
		return SignInStart{}, err
	}
	t.logSignIn(ctx, u, ActionSignInSucceeded, clientAddr, map[string]string{"method": "password"})
	return SignInStart{Session: ns}, nil
}

// startSession starts a portal session of u.
func (t *Team) startSession(ctx context.Context, u payoutkit.StaffUser, now time.Time) (NewSession, error) {
	// Sign-ins are rare: a good moment to forget what has expired.
	if _, err := t.store.PurgeStaffSessions(ctx, now.Add(-t.cfg.SessionIdleTimeout), now.Add(-t.cfg.SessionMaxAge), now.Add(-t.cfg.SignInWindow)); err != nil {
		t.log.WarnContext(ctx, "purging expired staff sessions", "err", err)
	}
	token := newSessionToken()
	s := payoutkit.StaffSession{
		TokenHash: sha256.Sum256([]byte(token)), WorkspaceID: u.WorkspaceID, StaffEmail: u.Email,
		CreatedAt: now, LastSeenAt: now, Role: u.Role, TwoFactor: u.TwoFactor(),
	}
	if err := t.store.InsertStaffSession(ctx, s); err != nil {
		return NewSession{}, err
	}
	return NewSession{Token: token, Session: s}, nil
}

// logSignIn records a sign-in's outcome in the user's workspace's security
// log. A failure to record it is logged, not returned: the sign-in's own
// outcome stands.
func (t *Team) logSignIn(ctx context.Context, u payoutkit.StaffUser, action, clientAddr string, details map[string]string) {
	if details == nil {
		details = map[string]string{}
	}
	details["email"] = u.Email
	e := logEntry(u.WorkspaceID, t.clock(), action, payoutkit.StaffActor(u.Email, clientAddr), details)
	if err := t.store.AppendSecurityLog(ctx, e); err != nil {
		t.log.WarnContext(ctx, "recording a sign-in in the security log", "action", action, "err", err)
	}
}

// checkSignIn checks the e-mail and password under the e-mail's limit and
// returns the user and the time it checked the lock at, which a session
// started on it uses.
func (t *Team) checkSignIn(ctx context.Context, email, password, clientAddr string) (payoutkit.StaffUser, time.Time, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	if len(email) > 254 || !isPrintable(email) {
		email = "" // never stored as is; still costs a bcrypt comparison below
	}
	now := t.clock()
	if email != "" {
		if err := t.checkLock(ctx, email, now, clientAddr); err != nil {
			return payoutkit.StaffUser{}, now, err
		}
	}
	u, err := t.checkPassword(ctx, email, password)
	if errors.Is(err, payoutkit.ErrUnauthorized) {
		if email != "" {
			if rerr := t.signInFailed(ctx, email, now, clientAddr, "password"); rerr != nil {
				return payoutkit.StaffUser{}, now, rerr
			}
		}
		return payoutkit.StaffUser{}, now, err
	} else if err != nil {
		return payoutkit.StaffUser{}, now, err
	}
	if u.TwoFactor() {
		// The failures are cleared when the second step succeeds: a right
		// password alone must not reset the count of wrong codes.
		return u, now, nil
	}
	if err := t.store.ClearSignInFailures(ctx, email); err != nil {
		return payoutkit.StaffUser{}, now, err
	}
	return u, now, nil
}

// checkPassword checks a staff user's e-mail and password, in time that
// does not reveal whether the e-mail exists, without counting failures: its
// callers count them (checkSignIn) or hold a session already
// (ChangePassword). A wrong pair is ErrUnauthorized.
func (t *Team) checkPassword(ctx context.Context, email, password string) (payoutkit.StaffUser, error) {
	u, err := t.store.StaffUser(ctx, strings.ToLower(email))
	if err != nil && !errors.Is(err, payoutkit.ErrNotFound) {
		return payoutkit.StaffUser{}, err
	}
	hash := []byte(u.PasswordHash)
	if u.Email == "" {
		hash = t.dummyHash()
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil || u.Email == "" {
		return payoutkit.StaffUser{}, errorOf(payoutkit.ErrUnauthorized, "wrong e-mail or password")
	}
	return u, nil
}

// checkLock refuses a sign-in of an e-mail that failed too often lately,
// and records the refusal in the user's security log.
func (t *Team) checkLock(ctx context.Context, email string, now time.Time, clientAddr string) error {
	f, err := t.store.SignInFailures(ctx, email)
	if err != nil {
		return err
	}
	if err := t.locked(f, now); err != nil {
		if u, uerr := t.store.StaffUser(ctx, email); uerr == nil {
			t.logSignIn(ctx, u, ActionSignInThrottled, clientAddr, nil)
		}
		return err
	}
	return nil
}

// signInFailed counts a failed sign-in of the e-mail and, when it names a
// user, records it in their security log with what was wrong.
func (t *Team) signInFailed(ctx context.Context, email string, now time.Time, clientAddr, what string) error {
	if _, err := t.store.RecordSignInFailure(ctx, email, now, t.cfg.SignInWindow); err != nil {
		return err
	}
	if u, err := t.store.StaffUser(ctx, email); err == nil {
		t.logSignIn(ctx, u, ActionSignInFailed, clientAddr, map[string]string{"wrong": what})
	}
	return nil
}

func (t *Team) locked(f payoutkit.SignInFailures, now time.Time) error {
	if f.Count < t.cfg.SignInMaxFailures {
		return nil
	}
	if until := f.WindowStart.Add(t.cfg.SignInWindow); now.Before(until) {
		return &SignInLockedError{RetryAfter: until.Sub(now)}
	}
	return nil
}

// Session returns the live session whose cookie value is token, with the
// user's role and two-factor state as stored now. An unknown, ended or
// expired session (idle longer than Config.SessionIdleTimeout, or older
// than Config.SessionMaxAge) is ErrUnauthorized; an expired one is deleted.
func (t *Team) Session(ctx context.Context, token string) (payoutkit.StaffSession, error) {
	noSession := errorOf(payoutkit.ErrUnauthorized, "no session")
	if token == "" || len(token) > 128 {
		return payoutkit.StaffSession{}, noSession
	}
	hash := sha256.Sum256([]byte(token))
	s, err := t.store.StaffSession(ctx, hash)
	if errors.Is(err, payoutkit.ErrNotFound) {
		return payoutkit.StaffSession{}, noSession
	} else if err != nil {
		return payoutkit.StaffSession{}, err
	}
	now := t.clock()
	u, err := t.store.StaffUser(ctx, s.StaffEmail)
	if errors.Is(err, payoutkit.ErrNotFound) || err == nil && u.WorkspaceID != s.WorkspaceID {
		return payoutkit.StaffSession{}, noSession
	} else if err != nil {
		return payoutkit.StaffSession{}, err
	}
	s.Role, s.TwoFactor = u.Role, u.TwoFactor()
	if now.Sub(s.LastSeenAt) >= t.cfg.SessionIdleTimeout || now.Sub(s.CreatedAt) >= t.cfg.SessionMaxAge {
		if err := t.store.DeleteStaffSession(ctx, hash); err != nil {
			t.log.WarnContext(ctx, "deleting an expired staff session", "err", err)
		}
		return payoutkit.StaffSession{}, errorOf(payoutkit.ErrUnauthorized, "session expired")
	}
	if now.Sub(s.LastSeenAt) >= sessionTouchInterval {
		if err := t.store.TouchStaffSession(ctx, hash, now); err != nil {
			t.log.WarnContext(ctx, "recording staff session use", "err", err)
		} else {
			s.LastSeenAt = now
		}
	}
	return s, nil
}

// EndSession signs the session with the given token out, on every instance.
func (t *Team) EndSession(ctx context.Context, token string) error {
	return t.store.DeleteStaffSession(ctx, sha256.Sum256([]byte(token)))
}

// ResetPassword gives the workspace's staff login with the given e-mail a
// new random password, returned once, and ends every session of theirs on
// every instance, for an operator whose staff member lost the password. An
// unknown workspace or login is ErrNotFound.
func (t *Team) ResetPassword(ctx context.Context, workspaceID, email string) (NewUser, error) {
	email = strings.ToLower(email)
	if err := t.workspaceExists(ctx, workspaceID); err != nil {
		return NewUser{}, err
	}
	u, err := t.store.StaffUser(ctx, email)
	if errors.Is(err, payoutkit.ErrNotFound) || err == nil && u.WorkspaceID != workspaceID {
		return NewUser{}, errNotFound("staff user")
	} else if err != nil {
		return NewUser{}, err
	}
	password := random.Base62(20)
	hash, err := bcrypt.GenerateFromPassword([]byte(password), t.pwCost)
	if err != nil {
		return NewUser{}, fmt.Errorf("hashing staff password: %w", err)
	}
	if err := t.store.SetStaffPassword(ctx, email, string(hash), [32]byte{}); errors.Is(err, payoutkit.ErrNotFound) {
		return NewUser{}, errNotFound("staff user") // removed meanwhile
	} else if err != nil {
		return NewUser{}, err
	}
	return NewUser{Email: email, Password: password}, nil
}

// ChangePassword replaces the session's staff user's password after
// checking the current one, and ends every other session of theirs. A wrong
// current password is a 40000 on current_password; a new one must have
// 12 to 72 bytes.
func (t *Team) ChangePassword(ctx context.Context, s payoutkit.StaffSession, current, next string) error {
	switch {
	case len(next) < minPasswordLen:
		return invalidField("new_password", fmt.Sprintf("must be at least %d characters", minPasswordLen))
	case len(next) > maxPasswordLen:
		return invalidField("new_password", fmt.Sprintf("must be at most %d bytes", maxPasswordLen))
	}
	if _, err := t.checkPassword(ctx, s.StaffEmail, current); errors.Is(err, payoutkit.ErrUnauthorized) {
		return invalidField("current_password", "is not your current password")
	} else if err != nil {
		return err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(next), t.pwCost)
	if err != nil {
		return fmt.Errorf("hashing staff password: %w", err)
	}
	return t.store.SetStaffPassword(ctx, s.StaffEmail, string(hash), s.TokenHash)
}

// workspaceExists is ErrNotFound for an unknown workspace.
func (t *Team) workspaceExists(ctx context.Context, workspaceID string) error {
	_, err := t.store.Workspace(ctx, workspaceID)
	if errors.Is(err, payoutkit.ErrNotFound) {
		return errNotFound("workspace")
	}
	return err
}

// newSessionToken returns 256 random bits, base64url without padding.
func newSessionToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func isPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] == 0x7f {
			return false
		}
	}
	return true
}
