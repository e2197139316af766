package payoutkit

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// ErrSignInExpired is FinishSignIn's refusal of a pending state that has
// expired, was altered, or whose user changed their password or two-factor
// secret since: the sign-in starts again with the password. It matches
// ErrUnauthorized.
var ErrSignInExpired = newError(ErrUnauthorized, "the sign-in expired; sign in again")

// StaffTOTP is a staff user's two-factor sign-in state as the store keeps
// it (Store.SetStaffTOTP): the sealed secrets, the last accepted step and
// the SHA-256 of each unused recovery code.
type StaffTOTP struct {
	Secret         string
	Pending        string
	LastStep       int64
	RecoveryHashes [][32]byte
}

// The parameters of two-factor sign-in (contract, section 11): RFC 6238
// with SHA-1, 6 digits, 30-second steps, one step of drift either way.
const (
	totpPeriod    = 30
	totpSkew      = 1
	RecoveryCodes = 10 // how many recovery codes turning it on gives
)

var totpOpts = totp.ValidateOpts{Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

// TOTPSetup is what the security page shows a user turning two-factor
// sign-in on: the secret (base32) and the otpauth:// URL a QR code carries.
type TOTPSetup struct {
	Secret string
	URL    string
}

// sealTOTP seals a user's TOTP secret as webhook secrets are sealed, bound
// to the user's e-mail.
func (e *Engine) sealTOTP(email, secret string) (string, error) {
	return e.keys.Seal("totp:"+email, secret)
}

func (e *Engine) openTOTP(email, stored string) (string, error) {
	return e.keys.Open("totp:"+email, stored)
}

// TOTPSetup returns the secret the caller turns two-factor sign-in on with,
// making one (kept sealed in the store until a code confirms it) when none
// is offered yet. A user who has it on already is ErrConflict.
func (e *Engine) TOTPSetup(ctx context.Context, c StaffCaller) (TOTPSetup, error) {
	u, err := e.Authorize(ctx, c, RoleViewer)
	if err != nil {
		return TOTPSetup{}, err
	}
	if u.TwoFactor() {
		return TOTPSetup{}, errConflict("two-factor sign-in is already on")
	}
	secret := ""
	if u.TOTPPending != "" {
		if secret, err = e.openTOTP(u.Email, u.TOTPPending); err != nil {
			return TOTPSetup{}, err
		}
	} else {
		secret = newTOTPSecret()
		sealed, err := e.sealTOTP(u.Email, secret)
		if err != nil {
			return TOTPSetup{}, err
		}
		if err := e.store.SetStaffTOTP(ctx, u.Email, StaffTOTP{Pending: sealed, LastStep: u.TOTPLastStep}, nil); err != nil {
			return TOTPSetup{}, err
		}
	}
	return TOTPSetup{Secret: secret, URL: totpURL(u.Email, secret)}, nil
}

// newTOTPSecret returns 160 random bits in base32 without padding, the
// length RFC 4226 recommends.
func newTOTPSecret() string {
	var b [20]byte
	rand.Read(b[:])
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])
}

// totpURL is the key URI authenticator apps read from a QR code.
func totpURL(email, secret string) string {
	q := url.Values{}
	q.Set("secret", secret)
	q.Set("issuer", "payoutkit")
	q.Set("algorithm", "SHA1")
	q.Set("digits", "6")
	q.Set("period", strconv.Itoa(totpPeriod))
	return (&url.URL{Scheme: "otpauth", Host: "totp", Path: "/payoutkit:" + email, RawQuery: q.Encode()}).String()
}

// EnableTOTP turns two-factor sign-in on for the caller with the secret
// TOTPSetup offered, once code is a current code of it, and returns the 10
// recovery codes, shown once (the store keeps their SHA-256). A wrong code
// is a 40000 on code and changes nothing.
func (e *Engine) EnableTOTP(ctx context.Context, c StaffCaller, code string) ([]string, error) {
	u, err := e.Authorize(ctx, c, RoleViewer)
	if err != nil {
		return nil, err
	}
	if u.TwoFactor() {
		return nil, errConflict("two-factor sign-in is already on")
	}
	if u.TOTPPending == "" {
		return nil, invalidField("code", "has no secret to confirm: reload the security page")
	}
	secret, err := e.openTOTP(u.Email, u.TOTPPending)
	if err != nil {
		return nil, err
	}
	step, ok := matchTOTP(secret, normalizeCode(code), e.clock())
	if !ok || step <= u.TOTPLastStep {
		return nil, invalidField("code", "is not the current code of this secret")
	}
	codes := make([]string, RecoveryCodes)
	hashes := make([][32]byte, RecoveryCodes)
	for i := range codes {
		codes[i] = newRecoveryCode()
		hashes[i] = recoveryHash(codes[i])
	}
	log := logEntry(u.WorkspaceID, e.clock(), ActionTwoFactorOn, c.actor(), map[string]string{"email": u.Email})
	if err := e.store.SetStaffTOTP(ctx, u.Email, StaffTOTP{Secret: u.TOTPPending, LastStep: step, RecoveryHashes: hashes}, &log); err != nil {
		return nil, err
	}
	return codes, nil
}

// DisableTOTP turns two-factor sign-in off for the caller, who confirms it
// with a current code (or a recovery code). A wrong code is a 40000 on code.
func (e *Engine) DisableTOTP(ctx context.Context, c StaffCaller, code string) error {
	u, err := e.Authorize(ctx, c, RoleViewer)
	if err != nil {
		return err
	}
	if !u.TwoFactor() {
		return errConflict("two-factor sign-in is already off")
	}
	now := e.clock()
	f, err := e.store.SignInFailures(ctx, u.Email)
	if err != nil {
		return err
	}
	if lerr := e.locked(f, now); lerr != nil {
		return invalidField("code", "cannot be tried now: "+lerr.Error())
	}
	ok, err := e.useCode(ctx, u, code)
	if err != nil {
		return err
	}
	if !ok {
		// Counted as a sign-in failure: no path guesses codes faster.
		if _, err := e.store.RecordSignInFailure(ctx, u.Email, now, e.signInWindow); err != nil {
			return err
		}
		return invalidField("code", "is wrong or was already used")
	}
	log := logEntry(u.WorkspaceID, e.clock(), ActionTwoFactorOff, c.actor(), map[string]string{"email": u.Email})
	return e.store.SetStaffTOTP(ctx, u.Email, StaffTOTP{LastStep: u.TOTPLastStep}, &log)
}

// ResetTOTP turns two-factor sign-in off for the workspace's staff user
// with the given e-mail, who lost their device, and records it in the
// security log as by's. An unknown user is ErrNotFound.
func (e *Engine) ResetTOTP(ctx context.Context, workspaceID, email string, by Actor) error {
	email = strings.ToLower(strings.TrimSpace(email))
	u, err := e.store.StaffUser(ctx, email)
	if errors.Is(err, ErrNotFound) || err == nil && u.WorkspaceID != workspaceID {
		return errNotFound("staff user")
	} else if err != nil {
		return err
	}
	log := logEntry(workspaceID, e.clock(), ActionTwoFactorReset, by, map[string]string{"email": email})
	if err := e.store.SetStaffTOTP(ctx, email, StaffTOTP{LastStep: u.TOTPLastStep}, &log); errors.Is(err, ErrNotFound) {
		return errNotFound("staff user")
	} else if err != nil {
		return err
	}
	return nil
}

// FinishSignIn is the second step of a sign-in with two-factor sign-in on:
// pending is BeginSignIn's state and code a current code (accepted once)
// or an unused recovery code (used up). A wrong code is ErrUnauthorized and
// counts toward the e-mail's sign-in limit, as a wrong password does; an
// expired or altered pending state is ErrUnauthorized; a locked e-mail is a
// *SignInLockedError.
func (e *Engine) FinishSignIn(ctx context.Context, pending, code, clientAddr string) (NewSession, error) {
	email, expires, ok := parsePending(pending)
	if !ok {
		return NewSession{}, ErrSignInExpired
	}
	now := e.clock()
	u, err := e.store.StaffUser(ctx, email)
	if errors.Is(err, ErrNotFound) {
		return NewSession{}, ErrSignInExpired
	} else if err != nil {
		return NewSession{}, err
	}
	if !now.Before(expires) || !u.TwoFactor() || !hmac.Equal([]byte(pending), []byte(pendingToken(u, expires))) {
		return NewSession{}, ErrSignInExpired
	}
	if err := e.checkLock(ctx, email, now, clientAddr); err != nil {
		return NewSession{}, err
	}
	ok, err = e.useCode(ctx, u, code)
	if err != nil {
		return NewSession{}, err
	}
	if !ok {
		if err := e.signInFailed(ctx, email, now, clientAddr, "code"); err != nil {
			return NewSession{}, err
		}
		return NewSession{}, newError(ErrUnauthorized, "wrong code")
	}
	if err := e.store.ClearSignInFailures(ctx, email); err != nil {
		return NewSession{}, err
	}
	ns, err := e.startSession(ctx, u, now)
	if err != nil {
		return NewSession{}, err
	}
	e.logSignIn(ctx, u, ActionSignInSucceeded, clientAddr, map[string]string{"method": "password+totp"})
	return ns, nil
}

// pendingToken is the state of a sign-in's second step: the e-mail and the
// expiry, with an HMAC keyed by the user's password hash and sealed TOTP
// secret, so that it needs no storage, works on every instance, cannot be
// made without the database's secrets, and stops working when the password
// or the two-factor secret changes.
func pendingToken(u StaffUser, expires time.Time) string {
	body := base64.RawURLEncoding.EncodeToString([]byte(u.Email)) + "." + strconv.FormatInt(expires.UnixMicro(), 10)
	key := sha256.Sum256([]byte("payoutkit sign-in pending v1\x00" + u.PasswordHash + "\x00" + u.TOTPSecret))
	mac := hmac.New(sha256.New, key[:])
	mac.Write([]byte(body))
	return body + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func parsePending(s string) (email string, expires time.Time, ok bool) {
	if len(s) > 1024 {
		return "", time.Time{}, false
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return "", time.Time{}, false
	}
	e, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return "", time.Time{}, false
	}
	us, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	return string(e), time.UnixMicro(us).UTC(), true
}

// useCode accepts a current TOTP code (once) or an unused recovery code
// (using it up) of u.
func (e *Engine) useCode(ctx context.Context, u StaffUser, code string) (bool, error) {
	code = normalizeCode(code)
	if len(code) == 6 {
		return e.useTOTP(ctx, u, code)
	}
	if code == "" || len(code) > 64 {
		return false, nil
	}
	err := e.store.UseRecoveryCode(ctx, u.Email, recoveryHash(code))
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// useTOTP accepts a current TOTP code of u whose step is later than the
// last one accepted, and records its step, on every instance at once.
func (e *Engine) useTOTP(ctx context.Context, u StaffUser, code string) (bool, error) {
	secret, err := e.openTOTP(u.Email, u.TOTPSecret)
	if err != nil {
		return false, err
	}
	step, ok := matchTOTP(secret, code, e.clock())
	if !ok || step <= u.TOTPLastStep {
		return false, nil
	}
	err = e.store.UseTOTPStep(ctx, u.Email, step)
	if errors.Is(err, ErrConflict) {
		return false, nil // used meanwhile, or turned off
	}
	return err == nil, err
}

// matchTOTP returns the step of now (give or take totpSkew) whose code is
// code.
func matchTOTP(secret, code string, now time.Time) (int64, bool) {
	if len(code) != 6 {
		return 0, false
	}
	base := now.Unix() / totpPeriod
	for d := int64(-totpSkew); d <= totpSkew; d++ {
		step := base + d
		want, err := totp.GenerateCodeCustom(secret, time.Unix(step*totpPeriod, 0), totpOpts)
		if err != nil {
			return 0, false
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			return step, true
		}
	}
	return 0, false
}

// normalizeCode drops the spaces and dashes people type into codes and
// lower-cases them.
func normalizeCode(code string) string {
	return strings.ToLower(strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' || r == '\t' {
			return -1
		}
		return r
	}, code))
}

// newRecoveryCode returns 80 random bits as four groups of four base32
// letters and digits, e.g. "k3f7-qz2m-8hta-w4pn".
func newRecoveryCode() string {
	var b [10]byte
	rand.Read(b[:])
	s := strings.ToLower(base32.StdEncoding.EncodeToString(b[:]))
	return s[0:4] + "-" + s[4:8] + "-" + s[8:12] + "-" + s[12:16]
}

// recoveryHash is the stored form of a recovery code.
func recoveryHash(code string) [32]byte {
	return sha256.Sum256([]byte("payoutkit recovery v1\x00" + normalizeCode(code)))
}
