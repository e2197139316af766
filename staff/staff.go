// Package staff is the identity of a workspace's staff, the people who sign
// in to the portal: passwords, sessions, sign-in and its throttle,
// two-factor sign-in (TOTP and recovery codes), roles, step-up codes and
// the team (contract, sections 8 and 11).
//
// It stands in front of the engine: a [Team] decides who a caller is and
// what their role allows, and hands the engine a [payoutkit.Actor] for the
// action, so that the engine has one method per action whoever acts (an API
// key, the command line or a staff user):
//
//	if _, err := team.Authorize(ctx, caller, staff.RoleAdmin); err != nil { ... }
//	n, err := engine.RemoveAddress(ctx, caller.Session.WorkspaceID, network, addr, caller.Actor())
//
// An action that needs a fresh two-factor code takes the Actor of
// [Team.SteppedUp], whose step-up the engine runs after it has checked the
// action's input and before it changes anything.
//
// A program that serves no portal needs none of this package.
package staff

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/random"
	"github.com/payoutkit/payoutkit/seal"
	"golang.org/x/crypto/bcrypt"
)

// Store keeps staff logins, their portal sessions and the sign-in failures
// that throttle guessing. Sessions and failures live in the store, not in a
// process, so that every instance sharing it sees a sign-out, a removed
// user or a locked e-mail at once. storage/memstore, storage/sqlite and
// storage/postgres implement it beside payoutkit.Store; the conformance
// suite storetest.RunStaff checks one.
//
// Errors are the engine's: ErrNotFound, ErrConflict, matched with errors.Is.
type Store interface {
	// Workspace returns one workspace as stored.
	Workspace(ctx context.Context, id string) (payoutkit.Workspace, error)
	// AppendSecurityLog appends one entry to the workspace's security log.
	AppendSecurityLog(ctx context.Context, e payoutkit.SecurityLogEntry) error

	// StaffUser returns the staff user with the given (lower-cased) e-mail.
	StaffUser(ctx context.Context, email string) (payoutkit.StaffUser, error)
	// StaffUsers lists the workspace's staff users, by e-mail.
	StaffUsers(ctx context.Context, workspaceID string) ([]payoutkit.StaffUser, error)
	// InsertStaffUser stores a staff user (with its Role) and appends log,
	// atomically; a taken e-mail is ErrConflict, an unknown workspace
	// ErrNotFound.
	InsertStaffUser(ctx context.Context, u payoutkit.StaffUser, log payoutkit.SecurityLogEntry) error
	// DeleteStaffUser deletes the workspace's staff user with the given
	// e-mail, every session and recovery code of theirs, and appends log,
	// atomically, and returns how many users it deleted (0 or 1, and no log
	// for 0). Deleting the workspace's last admin is ErrConflict and
	// changes nothing; the count of admins is judged in the same
	// transaction, so that two removals on two instances cannot both pass.
	DeleteStaffUser(ctx context.Context, workspaceID, email string, log payoutkit.SecurityLogEntry) (int, error)
	// SetStaffRole changes the role of the workspace's staff user with the
	// given e-mail and appends log, atomically. An unknown user is
	// ErrNotFound; demoting the workspace's last admin is ErrConflict and
	// changes nothing (judged as DeleteStaffUser judges it).
	SetStaffRole(ctx context.Context, workspaceID, email string, role payoutkit.Role, log payoutkit.SecurityLogEntry) error
	// SetStaffPassword replaces a staff user's password hash and ends every
	// session of theirs except keep (a session's TokenHash; zero keeps none),
	// atomically.
	SetStaffPassword(ctx context.Context, email, passwordHash string, keep [32]byte) error
	// SetStaffTOTP replaces the staff user's two-factor state with t (its
	// recovery codes replaced by t.RecoveryHashes) and appends log unless it
	// is nil, atomically. An unknown user is ErrNotFound.
	SetStaffTOTP(ctx context.Context, email string, t payoutkit.StaffTOTP, log *payoutkit.SecurityLogEntry) error
	// UseTOTPStep records that a code of the given step was accepted for
	// the staff user, only if the user has two-factor sign-in on and step
	// is later than the last accepted one (a compare-and-set); otherwise
	// ErrConflict and nothing changes.
	UseTOTPStep(ctx context.Context, email string, step int64) error
	// UseRecoveryCode deletes the staff user's recovery code with the given
	// SHA-256; one that is not there (never was, or used) is ErrNotFound.
	UseRecoveryCode(ctx context.Context, email string, hash [32]byte) error
	// SetRequireTwoFactor sets the workspace's RequireTwoFactor and appends
	// log, atomically. An unknown workspace is ErrNotFound.
	SetRequireTwoFactor(ctx context.Context, workspaceID string, on bool, log payoutkit.SecurityLogEntry) error

	// InsertStaffSession stores a new session and records its CreatedAt as
	// the user's LastSignInAt, atomically. A session of an unknown user, or
	// of a user of another workspace, is ErrNotFound.
	InsertStaffSession(ctx context.Context, s payoutkit.StaffSession) error
	// StaffSession returns the session with the given token hash.
	StaffSession(ctx context.Context, tokenHash [32]byte) (payoutkit.StaffSession, error)
	// TouchStaffSession records that the session was used at the given time.
	TouchStaffSession(ctx context.Context, tokenHash [32]byte, at time.Time) error
	// DeleteStaffSession ends one session; an unknown one is not an error.
	DeleteStaffSession(ctx context.Context, tokenHash [32]byte) error
	// PurgeStaffSessions deletes the sessions last seen before idleBefore or
	// created before createdBefore, and the sign-in failure windows that
	// started before failuresBefore, and returns how many sessions it deleted.
	PurgeStaffSessions(ctx context.Context, idleBefore, createdBefore, failuresBefore time.Time) (int, error)

	// SignInFailures returns the e-mail's current failure window (zero when
	// there is none).
	SignInFailures(ctx context.Context, email string) (payoutkit.SignInFailures, error)
	// RecordSignInFailure counts one failed sign-in for the e-mail at the
	// given time, atomically: in the current window if it started after
	// at-window, otherwise in a new window starting at at. It returns the
	// window after the change.
	RecordSignInFailure(ctx context.Context, email string, at time.Time, window time.Duration) (payoutkit.SignInFailures, error)
	// ClearSignInFailures forgets the e-mail's failures.
	ClearSignInFailures(ctx context.Context, email string) error
}

// The defaults of the portal's session and sign-in rules (contract, section 8).
const (
	DefaultSessionIdleTimeout = 12 * time.Hour
	DefaultSessionMaxAge      = 7 * 24 * time.Hour
	DefaultSignInMaxFailures  = 5
	DefaultSignInWindow       = 15 * time.Minute
)

// Config configures a Team. The zero value is usable.
type Config struct {
	// PasswordCost is the bcrypt cost of staff passwords. Defaults to 12;
	// tests may lower it to bcrypt.MinCost.
	PasswordCost int
	// SessionIdleTimeout ends a portal session unused for this long.
	// Defaults to DefaultSessionIdleTimeout.
	SessionIdleTimeout time.Duration
	// SessionMaxAge ends a portal session this long after its sign-in,
	// however busy. Defaults to DefaultSessionMaxAge.
	SessionMaxAge time.Duration
	// SignInMaxFailures is how many failed sign-ins (or wrong two-factor
	// codes) for one e-mail within SignInWindow lock that e-mail until the
	// window has passed. Defaults to DefaultSignInMaxFailures.
	SignInMaxFailures int
	// SignInWindow is the window of SignInMaxFailures. Defaults to
	// DefaultSignInWindow.
	SignInWindow time.Duration
	// SecretKeys seals the users' TOTP secrets at rest, bound to their
	// e-mail, as the engine's Config.SecretKeys seals webhook secrets; pass
	// the same ring. Defaults to nil: secrets are stored plain.
	SecretKeys *seal.KeyRing
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Logger receives what cannot be returned (a failed write of the
	// security log beside a sign-in). Defaults to slog.Default().
	Logger *slog.Logger
}

func (c *Config) withDefaults() *Config {
	out := *c
	if out.PasswordCost == 0 {
		out.PasswordCost = 12
	}
	if out.SessionIdleTimeout <= 0 {
		out.SessionIdleTimeout = DefaultSessionIdleTimeout
	}
	if out.SessionMaxAge <= 0 {
		out.SessionMaxAge = DefaultSessionMaxAge
	}
	if out.SignInMaxFailures <= 0 {
		out.SignInMaxFailures = DefaultSignInMaxFailures
	}
	if out.SignInWindow <= 0 {
		out.SignInWindow = DefaultSignInWindow
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	return &out
}

// Team is the staff identity of every workspace in a store. It is safe for
// concurrent use, and teams in several processes may share one store.
type Team struct {
	store  Store
	cfg    *Config
	keys   *seal.KeyRing
	log    *slog.Logger
	pwCost int
	// dummyHash is compared against when a sign-in names an unknown e-mail,
	// so that both failures cost one bcrypt comparison.
	dummyHash func() []byte
}

// New returns the team of the workspaces in store. cfg may be nil for the
// defaults.
func New(store Store, cfg *Config) (*Team, error) {
	if store == nil {
		return nil, errors.New("staff: New needs a store")
	}
	if cfg == nil {
		cfg = &Config{}
	}
	cfg = cfg.withDefaults()
	return &Team{
		store: store, cfg: cfg, keys: cfg.SecretKeys, log: cfg.Logger, pwCost: cfg.PasswordCost,
		dummyHash: sync.OnceValue(func() []byte {
			h, _ := bcrypt.GenerateFromPassword([]byte(random.Base62(20)), cfg.PasswordCost)
			return h
		}),
	}, nil
}

// clock returns the current time as stored: UTC, at microsecond precision.
func (t *Team) clock() time.Time { return t.cfg.Now().UTC().Truncate(time.Microsecond) }

// Caller is a signed-in staff user making a call: their session and the
// client address of the request (empty when there is none).
type Caller struct {
	Session    payoutkit.StaffSession
	ClientAddr string
}

// Actor is the caller as the engine's security log records them.
func (c Caller) Actor() payoutkit.Actor {
	return payoutkit.StaffActor(c.Session.StaffEmail, c.ClientAddr)
}

// logEntry is one entry of the security log.
func logEntry(workspaceID string, at time.Time, action string, by payoutkit.Actor, details map[string]string) payoutkit.SecurityLogEntry {
	return payoutkit.SecurityLogEntry{WorkspaceID: workspaceID, At: at, Action: action, Actor: by.ID, ClientAddr: by.ClientAddr, Details: details}
}

// invalid is a 40000 naming each field, as the engine's validation errors
// do.
func invalid(fields ...payoutkit.FieldError) error {
	return payoutkit.NewError(payoutkit.CodeInvalidInput, "", fields)
}

// invalidField is a 40000 for a single field.
func invalidField(field, message string) error {
	return invalid(payoutkit.FieldError{Field: field, Message: message})
}

func errorOf(kind *payoutkit.Error, message string) error {
	return payoutkit.NewError(kind.Code, message, nil)
}

func errNotFound(what string) error { return errorOf(payoutkit.ErrNotFound, what+" not found") }
