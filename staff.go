package payoutkit

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// StaffSession is a staff user's signed-in portal session. The session's
// token (the cookie's value) is never stored, only its SHA-256.
type StaffSession struct {
	TokenHash   [sha256.Size]byte
	WorkspaceID string
	StaffEmail  string
	CreatedAt   time.Time
	LastSeenAt  time.Time
	// Role and TwoFactor are the user's role and whether they have
	// two-factor sign-in on, as Engine.StaffSession read them (not stored
	// with the session). The engine's staff calls read the role again:
	// these are for showing the right pages and forms.
	Role      Role
	TwoFactor bool
}

// SignInFailures is one e-mail's window of failed sign-ins.
type SignInFailures struct {
	Email       string
	Count       int
	WindowStart time.Time // zero when there is no window
}

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
	Session StaffSession
}

// NewStaff is a freshly added staff login with its password, shown once.
type NewStaff struct {
	Email    string `json:"staff_email"`
	Password string `json:"staff_password"`
	Role     Role   `json:"role,omitempty"`
}

// The defaults of the portal's session and sign-in rules (contract, section 8).
const (
	DefaultSessionIdleTimeout = 12 * time.Hour
	DefaultSessionMaxAge      = 7 * 24 * time.Hour
	DefaultSignInMaxFailures  = 5
	DefaultSignInWindow       = 15 * time.Minute
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

// SignIn checks a staff user's e-mail and password without starting a
// session, under the same per-e-mail limit as SignInSession, so that no
// exported path guesses passwords faster than the portal's sign-in: a wrong
// pair is ErrUnauthorized, with the same message and about the same cost
// whether or not the e-mail exists, and counts as a failure; an e-mail that
// failed Config.SignInMaxFailures times within Config.SignInWindow is a
// *SignInLockedError until the window has passed, even with the right
// password. It checks the password alone: a user with two-factor sign-in
// on still needs a code to start a session (BeginSignIn).
func (e *Engine) SignIn(ctx context.Context, email, password string) (StaffUser, error) {
	u, _, err := e.signIn(ctx, email, password, "")
	return u.public(), err
}

// SignInSession checks a staff user's e-mail and password as SignIn does
// (limit included) and starts a portal session. A user with two-factor
// sign-in on gets ErrUnauthorized: their sign-in goes through BeginSignIn
// and FinishSignIn.
func (e *Engine) SignInSession(ctx context.Context, email, password string) (NewSession, error) {
	st, err := e.BeginSignIn(ctx, email, password, "")
	if err != nil {
		return NewSession{}, err
	}
	if st.Pending != "" {
		return NewSession{}, newError(ErrUnauthorized, "two-factor sign-in is on: sign in with BeginSignIn and FinishSignIn")
	}
	return st.Session, nil
}

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

// BeginSignIn checks a staff user's e-mail and password as SignIn does
// (limit included; clientAddr, when known, goes into the security log with
// the outcome) and starts a session, unless the user has two-factor sign-in
// on: then it returns the pending state of the second step instead.
func (e *Engine) BeginSignIn(ctx context.Context, email, password, clientAddr string) (SignInStart, error) {
	u, now, err := e.signIn(ctx, email, password, clientAddr)
	if err != nil {
		return SignInStart{}, err
	}
	if u.TwoFactor() {
		expires := now.Add(signInPendingTTL)
		return SignInStart{Pending: pendingToken(u, expires), PendingExpires: expires}, nil
	}
	ns, err := e.startSession(ctx, u, now)
	if err != nil {
		return SignInStart{}, err
	}
	e.logSignIn(ctx, u, ActionSignInSucceeded, clientAddr, map[string]string{"method": "password"})
	return SignInStart{Session: ns}, nil
}

// startSession starts a portal session of u.
func (e *Engine) startSession(ctx context.Context, u StaffUser, now time.Time) (NewSession, error) {
	// Sign-ins are rare: a good moment to forget what has expired.
	if _, err := e.store.PurgeStaffSessions(ctx, now.Add(-e.sessionIdle), now.Add(-e.sessionMaxAge), now.Add(-e.signInWindow)); err != nil {
		e.log.WarnContext(ctx, "purging expired staff sessions", "err", err)
	}
	token := newSessionToken()
	s := StaffSession{
		TokenHash: sha256.Sum256([]byte(token)), WorkspaceID: u.WorkspaceID, StaffEmail: u.Email,
		CreatedAt: now, LastSeenAt: now, Role: u.Role, TwoFactor: u.TwoFactor(),
	}
	if err := e.store.InsertStaffSession(ctx, s); err != nil {
		return NewSession{}, err
	}
	return NewSession{Token: token, Session: s}, nil
}

// logSignIn records a sign-in's outcome in the user's workspace's security
// log. A failure to record it is logged, not returned: the sign-in's own
// outcome stands.
func (e *Engine) logSignIn(ctx context.Context, u StaffUser, action, clientAddr string, details map[string]string) {
	if details == nil {
		details = map[string]string{}
	}
	details["email"] = u.Email
	if err := e.LogSecurity(ctx, u.WorkspaceID, action, StaffActor(u.Email, clientAddr), details); err != nil {
		e.log.WarnContext(ctx, "recording a sign-in in the security log", "action", action, "err", err)
	}
}

// signIn is SignIn, returning also the time it checked the lock at, which
// a session started on it uses.
func (e *Engine) signIn(ctx context.Context, email, password, clientAddr string) (StaffUser, time.Time, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	if len(email) > 254 || !isPrintable(email) {
		email = "" // never stored as is; still costs a bcrypt comparison below
	}
	now := e.clock()
	if email != "" {
		if err := e.checkLock(ctx, email, now, clientAddr); err != nil {
			return StaffUser{}, now, err
		}
	}
	u, err := e.checkPassword(ctx, email, password)
	if errors.Is(err, ErrUnauthorized) {
		if email != "" {
			if rerr := e.signInFailed(ctx, email, now, clientAddr, "password"); rerr != nil {
				return StaffUser{}, now, rerr
			}
		}
		return StaffUser{}, now, err
	} else if err != nil {
		return StaffUser{}, now, err
	}
	if u.TwoFactor() {
		// The failures are cleared when the second step succeeds: a right
		// password alone must not reset the count of wrong codes.
		return u, now, nil
	}
	if err := e.store.ClearSignInFailures(ctx, email); err != nil {
		return StaffUser{}, now, err
	}
	return u, now, nil
}

// checkLock refuses a sign-in of an e-mail that failed too often lately,
// and records the refusal in the user's security log.
func (e *Engine) checkLock(ctx context.Context, email string, now time.Time, clientAddr string) error {
	f, err := e.store.SignInFailures(ctx, email)
	if err != nil {
		return err
	}
	if err := e.locked(f, now); err != nil {
		if u, uerr := e.store.StaffUser(ctx, email); uerr == nil {
			e.logSignIn(ctx, u, ActionSignInThrottled, clientAddr, nil)
		}
		return err
	}
	return nil
}

// signInFailed counts a failed sign-in of the e-mail and, when it names a
// user, records it in their security log with what was wrong.
func (e *Engine) signInFailed(ctx context.Context, email string, now time.Time, clientAddr, what string) error {
	if _, err := e.store.RecordSignInFailure(ctx, email, now, e.signInWindow); err != nil {
		return err
	}
	if u, err := e.store.StaffUser(ctx, email); err == nil {
		e.logSignIn(ctx, u, ActionSignInFailed, clientAddr, map[string]string{"wrong": what})
	}
	return nil
}

func (e *Engine) locked(f SignInFailures, now time.Time) error {
	if f.Count < e.signInMaxFailures {
		return nil
	}
	if until := f.WindowStart.Add(e.signInWindow); now.Before(until) {
		return &SignInLockedError{RetryAfter: until.Sub(now)}
	}
	return nil
}

// StaffSession returns the live session whose cookie value is token. An
// unknown, ended or expired session (idle longer than
// Config.SessionIdleTimeout, or older than Config.SessionMaxAge) is
// ErrUnauthorized; an expired one is deleted.
func (e *Engine) StaffSession(ctx context.Context, token string) (StaffSession, error) {
	if token == "" || len(token) > 128 {
		return StaffSession{}, newError(ErrUnauthorized, "no session")
	}
	hash := sha256.Sum256([]byte(token))
	s, err := e.store.StaffSession(ctx, hash)
	if errors.Is(err, ErrNotFound) {
		return StaffSession{}, newError(ErrUnauthorized, "no session")
	} else if err != nil {
		return StaffSession{}, err
	}
	now := e.clock()
	u, err := e.store.StaffUser(ctx, s.StaffEmail)
	if errors.Is(err, ErrNotFound) || err == nil && u.WorkspaceID != s.WorkspaceID {
		return StaffSession{}, newError(ErrUnauthorized, "no session")
	} else if err != nil {
		return StaffSession{}, err
	}
	s.Role, s.TwoFactor = u.Role, u.TwoFactor()
	if now.Sub(s.LastSeenAt) >= e.sessionIdle || now.Sub(s.CreatedAt) >= e.sessionMaxAge {
		if err := e.store.DeleteStaffSession(ctx, hash); err != nil {
			e.log.WarnContext(ctx, "deleting an expired staff session", "err", err)
		}
		return StaffSession{}, newError(ErrUnauthorized, "session expired")
	}
	if now.Sub(s.LastSeenAt) >= sessionTouchInterval {
		if err := e.store.TouchStaffSession(ctx, hash, now); err != nil {
			e.log.WarnContext(ctx, "recording staff session use", "err", err)
		} else {
			s.LastSeenAt = now
		}
	}
	return s, nil
}

// EndSession signs the session with the given token out, on every instance.
func (e *Engine) EndSession(ctx context.Context, token string) error {
	return e.store.DeleteStaffSession(ctx, sha256.Sum256([]byte(token)))
}

// AddStaff adds a staff login with the viewer role to the workspace with a
// random password, returned once, recorded in the security log as the
// command line's (ActorCLI). An invalid or taken e-mail is a 40000 on
// staff_email. AddStaffWithRole names the role and the actor.
func (e *Engine) AddStaff(ctx context.Context, workspaceID, email string) (NewStaff, error) {
	return e.AddStaffWithRole(ctx, workspaceID, email, RoleViewer, ActorCLI)
}

// RemoveStaff is RemoveStaffBy with the command line (ActorCLI) as the
// actor.
func (e *Engine) RemoveStaff(ctx context.Context, workspaceID, email string) (int, error) {
	return e.RemoveStaffBy(ctx, workspaceID, email, ActorCLI)
}

// ResetStaffPassword gives the workspace's staff login with the given
// e-mail a new random password, returned once, and ends every session of
// theirs on every instance, for an operator whose staff member lost the
// password. An unknown workspace or login is ErrNotFound.
func (e *Engine) ResetStaffPassword(ctx context.Context, workspaceID, email string) (NewStaff, error) {
	email = strings.ToLower(email)
	if _, err := e.workspace(ctx, workspaceID); err != nil {
		return NewStaff{}, err
	}
	u, err := e.store.StaffUser(ctx, email)
	if errors.Is(err, ErrNotFound) || err == nil && u.WorkspaceID != workspaceID {
		return NewStaff{}, errNotFound("staff user")
	} else if err != nil {
		return NewStaff{}, err
	}
	password := randomBase62(20)
	hash, err := bcrypt.GenerateFromPassword([]byte(password), e.pwCost)
	if err != nil {
		return NewStaff{}, fmt.Errorf("hashing staff password: %w", err)
	}
	if err := e.store.SetStaffPassword(ctx, email, string(hash), [32]byte{}); errors.Is(err, ErrNotFound) {
		return NewStaff{}, errNotFound("staff user") // removed meanwhile
	} else if err != nil {
		return NewStaff{}, err
	}
	return NewStaff{Email: email, Password: password}, nil
}

// ChangePassword replaces the session's staff user's password after
// checking the current one, and ends every other session of theirs. A wrong
// current password is a 40000 on current_password; a new one must have
// 12 to 72 bytes.
func (e *Engine) ChangePassword(ctx context.Context, s StaffSession, current, next string) error {
	var v validation
	switch {
	case len(next) < minPasswordLen:
		v.add("new_password", fmt.Sprintf("must be at least %d characters", minPasswordLen))
	case len(next) > maxPasswordLen:
		v.add("new_password", fmt.Sprintf("must be at most %d bytes", maxPasswordLen))
	}
	if err := v.err(); err != nil {
		return err
	}
	if _, err := e.checkPassword(ctx, s.StaffEmail, current); errors.Is(err, ErrUnauthorized) {
		return invalidField("current_password", "is not your current password")
	} else if err != nil {
		return err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(next), e.pwCost)
	if err != nil {
		return fmt.Errorf("hashing staff password: %w", err)
	}
	return e.store.SetStaffPassword(ctx, s.StaffEmail, string(hash), s.TokenHash)
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
