package staff

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

	"github.com/payoutkit/payoutkit"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// ErrSignInExpired is FinishSignIn's refusal of a pending state that has
// expired, was altered, or whose user changed their password or two-factor
// secret since: the sign-in starts again with the password. It matches
// ErrUnauthorized.
var ErrSignInExpired = payoutkit.NewError(payoutkit.CodeUnauthorized, "the sign-in expired; sign in again", nil)

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
func (t *Team) sealTOTP(email, secret string) (string, error) {
	return t.keys.Seal("totp:"+email, secret)
}

func (t *Team) openTOTP(email, stored string) (string, error) {
	return t.keys.Open("totp:"+email, stored)
}

// TOTPSetup returns the secret the caller turns two-factor sign-in on with,
// making one (kept sealed in the store until a code confirms it) when none
// is offered yet. A user who has it on already is ErrConflict.
func (t *Team) TOTPSetup(ctx context.Context, c Caller) (TOTPSetup, error) {
	u, err := t.user(ctx, c, payoutkit.RoleViewer)
	if err != nil {
		return TOTPSetup{}, err
	}
	if u.TwoFactor() {
		return TOTPSetup{}, errorOf(payoutkit.ErrConflict, "two-factor sign-in is already on")
	}
	secret := ""
	if u.TOTPPending != "" {
		if secret, err = t.openTOTP(u.Email, u.TOTPPending); err != nil {
			return TOTPSetup{}, err
		}
	} else {
		secret = newTOTPSecret()
		sealed, err := t.sealTOTP(u.Email, secret)
		if err != nil {
			return TOTPSetup{}, err
		}
		if err := t.store.SetStaffTOTP(ctx, u.Email, payoutkit.StaffTOTP{Pending: sealed, LastStep: u.TOTPLastStep}, nil); err != nil {
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
func (t *Team) EnableTOTP(ctx context.Context, c Caller, code string) ([]string, error) {
	u, err := t.user(ctx, c, payoutkit.RoleViewer)
	if err != nil {
		return nil, err
	}
	if u.TwoFactor() {
		return nil, errorOf(payoutkit.ErrConflict, "two-factor sign-in is already on")
	}
	if u.TOTPPending == "" {
		return nil, invalidField("code", "has no secret to confirm: reload the security page")
	}
	secret, err := t.openTOTP(u.Email, u.TOTPPending)
	if err != nil {
		return nil, err
	}
	step, ok := matchTOTP(secret, normalizeCode(code), t.clock())
	if !ok || step <= u.TOTPLastStep {
		return nil, invalidField("code", "is not the current code of this secret")
	}
	codes := make([]string, RecoveryCodes)
	hashes := make([][32]byte, RecoveryCodes)
	for i := range codes {
		codes[i] = newRecoveryCode()
		hashes[i] = recoveryHash(codes[i])
	}
	log := logEntry(u.WorkspaceID, t.clock(), ActionTwoFactorOn, c.Actor(), map[string]string{"email": u.Email})
	if err := t.store.SetStaffTOTP(ctx, u.Email, payoutkit.StaffTOTP{Secret: u.TOTPPending, LastStep: step, RecoveryHashes: hashes}, &log); err != nil {
		return nil, err
	}
	return codes, nil
}

// DisableTOTP turns two-factor sign-in off for the caller, who confirms it
// with a current code (or a recovery code). A wrong code is a 40000 on code.
func (t *Team) DisableTOTP(ctx context.Context, c Caller, code string) error {
	u, err := t.user(ctx, c, payoutkit.RoleViewer)
	if err != nil {
		return err
	}
	if !u.TwoFactor() {
		return errorOf(payoutkit.ErrConflict, "two-factor sign-in is already off")
	}
	now := t.clock()
	f, err := t.store.SignInFailures(ctx, u.Email)
	if err != nil {
		return err
	}
	if lerr := t.locked(f, now); lerr != nil {
		return invalidField("code", "cannot be tried now: "+lerr.Error())
	}
	ok, err := t.useCode(ctx, u, code)
	if err != nil {
		return err
	}
	if !ok {
		// Counted as a sign-in failure: no path guesses codes faster.
		if _, err := t.store.RecordSignInFailure(ctx, u.Email, now, t.cfg.SignInWindow); err != nil {
			return err
		}
		return invalidField("code", "is wrong or was already used")
	}
	log := logEntry(u.WorkspaceID, t.clock(), ActionTwoFactorOff, c.Actor(), map[string]string{"email": u.Email})
	return t.store.SetStaffTOTP(ctx, u.Email, payoutkit.StaffTOTP{LastStep: u.TOTPLastStep}, &log)
}

// ResetTOTP turns two-factor sign-in off for the workspace's staff user
// with the given e-mail, who lost their device, and records it in the
// security log as by's. An unknown user is ErrNotFound.
func (t *Team) ResetTOTP(ctx context.Context, workspaceID, email string, by payoutkit.Actor) error {
	email = strings.ToLower(strings.TrimSpace(email))
	u, err := t.store.StaffUser(ctx, email)
	if errors.Is(err, payoutkit.ErrNotFound) || err == nil && u.WorkspaceID != workspaceID {
		return errNotFound("staff user")
	} else if err != nil {
		return err
	}
	log := logEntry(workspaceID, t.clock(), ActionTwoFactorReset, by, map[string]string{"email": email})
	if err := t.store.SetStaffTOTP(ctx, email, payoutkit.StaffTOTP{LastStep: u.TOTPLastStep}, &log); errors.Is(err, payoutkit.ErrNotFound) {
		return errNotFound("staff user")
	} else if err != nil {
		return err
	}
	return nil
}

// FinishSignIn is the second step of a sign-in with two-factor sign-in on:
// pending is SignIn's pending state and code a current code (accepted once)
// or an unused recovery code (used up). A wrong code is ErrUnauthorized and
// counts toward the e-mail's sign-in limit, as a wrong password does; an
// expired or altered pending state is ErrUnauthorized; a locked e-mail is a
// *SignInLockedError.
func (t *Team) FinishSignIn(ctx context.Context, pending, code, clientAddr string) (NewSession, error) {
	email, expires, ok := parsePending(pending)
	if !ok {
		return NewSession{}, ErrSignInExpired
	}
	now := t.clock()
	u, err := t.store.StaffUser(ctx, email)
	if errors.Is(err, payoutkit.ErrNotFound) {
		return NewSession{}, ErrSignInExpired
	} else if err != nil {
		return NewSession{}, err
	}
	if !now.Before(expires) || !u.TwoFactor() || !hmac.Equal([]byte(pending), []byte(pendingToken(u, expires))) {
		return NewSession{}, ErrSignInExpired
	}
	if err := t.checkLock(ctx, email, now, clientAddr); err != nil {
		return NewSession{}, err
	}
	ok, err = t.useCode(ctx, u, code)
	if err != nil {
		return NewSession{}, err
	}
	if !ok {
		if err := t.signInFailed(ctx, email, now, clientAddr, "code"); err != nil {
			return NewSession{}, err
		}
		return NewSession{}, errorOf(payoutkit.ErrUnauthorized, "wrong code")
	}
	if err := t.store.ClearSignInFailures(ctx, email); err != nil {
		return NewSession{}, err
	}
	ns, err := t.startSession(ctx, u, now)
	if err != nil {
		return NewSession{}, err
	}
	t.logSignIn(ctx, u, ActionSignInSucceeded, clientAddr, map[string]string{"method": "password+totp"})
	return ns, nil
}

// pendingToken is the state of a sign-in's second step: the e-mail and the
// expiry, with an HMAC keyed by the user's password hash and sealed TOTP
// secret, so that it needs no storage, works on every instance, cannot be
// made without the database's secrets, and stops working when the password
// or the two-factor secret changes.
func pendingToken(u payoutkit.StaffUser, expires time.Time) string {
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
func (t *Team) useCode(ctx context.Context, u payoutkit.StaffUser, code string) (bool, error) {
	code = normalizeCode(code)
	if len(code) == 6 {
		return t.useTOTP(ctx, u, code)
	}
	if code == "" || len(code) > 64 {
		return false, nil
	}
	err := t.store.UseRecoveryCode(ctx, u.Email, recoveryHash(code))
	if errors.Is(err, payoutkit.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// useTOTP accepts a current TOTP code of u whose step is later than the
// last one accepted, and records its step, on every instance at once.
func (t *Team) useTOTP(ctx context.Context, u payoutkit.StaffUser, code string) (bool, error) {
	secret, err := t.openTOTP(u.Email, u.TOTPSecret)
	if err != nil {
		return false, err
	}
	step, ok := matchTOTP(secret, code, t.clock())
	if !ok || step <= u.TOTPLastStep {
		return false, nil
	}
	err = t.store.UseTOTPStep(ctx, u.Email, step)
	if errors.Is(err, payoutkit.ErrConflict) {
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
