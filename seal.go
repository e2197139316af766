package payoutkit

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Sealing keeps each workspace's webhook signing secret encrypted at rest.
// A sealed value, as stored, reads
//
//	sealed:v1:<key id>:<base64url(nonce | AES-256-GCM ciphertext and tag)>
//
// The GCM additional data is the "sealed:v1:<key id>:" header followed by
// the workspace id, so a sealed secret copied to another workspace's row (or
// relabelled with another key id) does not open. A stored value without the
// "sealed:" prefix is a plain secret written before sealing was turned on,
// and reads as it is.

// sealedPrefix starts every sealed value; plain secrets start with "whsec_".
const sealedPrefix = "sealed:"

// sealedVersion is the format of the sealed values written today.
const sealedVersion = "v1"

// SealKeySize is the size of a sealing key: 32 bytes, for AES-256.
const SealKeySize = 32

// maxKeyIDLen bounds a key id, so that a sealed value stays short.
const maxKeyIDLen = 32

// Errors of sealed secrets, matched with errors.Is; the error returned is a
// *SealError naming the workspace and the key id.
var (
	// ErrSealKeyMissing is a sealed secret whose key id is not in the key
	// ring (or an engine without a key ring reading a sealed secret).
	ErrSealKeyMissing = errors.New("payoutkit: the webhook secret is sealed with a key that is not configured")
	// ErrSealedSecretInvalid is a sealed value that is malformed or does not
	// open with its key: tampered with, copied from another workspace, or
	// sealed with another key under the same id.
	ErrSealedSecretInvalid = errors.New("payoutkit: the sealed webhook secret is malformed or does not open")
)

// SealError is a sealed webhook secret that could not be opened. It never
// carries the secret or a key.
type SealError struct {
	WorkspaceID string
	// KeyID is the id of the key the value names; empty when the value is
	// too malformed to name one.
	KeyID string
	// Err is ErrSealKeyMissing or ErrSealedSecretInvalid.
	Err error
}

func (e *SealError) Error() string {
	msg := e.Err.Error() + " (workspace " + e.WorkspaceID
	if e.KeyID != "" {
		msg += ", key id " + e.KeyID
	}
	return msg + ")"
}

// Unwrap returns ErrSealKeyMissing or ErrSealedSecretInvalid.
func (e *SealError) Unwrap() error { return e.Err }

// SealKey is one AES-256 key of a KeyRing.
type SealKey struct {
	// ID names the key in the values it seals: 1 to 32 characters of
	// [A-Za-z0-9_-]. Defaults to KeyID(Key).
	ID string
	// Key is the 32-byte AES-256 key.
	Key []byte
}

// KeyID derives a key's id from the key: 16 hex digits of an HMAC-SHA256
// keyed with it, which tell keys apart without revealing anything of them.
func KeyID(key []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("payoutkit webhook secret sealing key id"))
	return hex.EncodeToString(mac.Sum(nil)[:8])
}

// ParseSealKey decodes a key given as base64 (standard or URL alphabet,
// padded or not) of 32 bytes, as in PAYOUTKIT_SECRET_KEY. Its ID is derived
// with KeyID. The error never quotes the value.
func ParseSealKey(encoded string) (SealKey, error) {
	s := strings.TrimRight(strings.TrimSpace(encoded), "=")
	var key []byte
	var err error
	if strings.ContainsAny(s, "-_") {
		key, err = base64.RawURLEncoding.DecodeString(s)
	} else {
		key, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil || len(key) != SealKeySize {
		return SealKey{}, fmt.Errorf("payoutkit: a sealing key must be the base64 of %d random bytes", SealKeySize)
	}
	return SealKey{ID: KeyID(key), Key: key}, nil
}

// KeyRing seals webhook secrets with its current key and opens values
// sealed with any of its keys, so that keys can be rotated: make the new key
// current, keep the old one as previous, reseal (Engine.ResealWebhookSecrets),
// then drop the old one. It is safe for concurrent use.
//
// A nil *KeyRing seals nothing: Seal returns the secret as is, and Open
// returns plain values as they are and refuses sealed ones with
// ErrSealKeyMissing.
type KeyRing struct {
	current string // the id Seal uses
	aeads   map[string]cipher.AEAD
}

// NewKeyRing returns a key ring that seals with current and opens with
// current and every previous key. Key ids must be distinct.
func NewKeyRing(current SealKey, previous ...SealKey) (*KeyRing, error) {
	r := &KeyRing{aeads: make(map[string]cipher.AEAD, 1+len(previous))}
	for i, k := range append([]SealKey{current}, previous...) {
		if len(k.Key) != SealKeySize {
			return nil, fmt.Errorf("payoutkit: sealing key %d is %d bytes; want %d", i, len(k.Key), SealKeySize)
		}
		if k.ID == "" {
			k.ID = KeyID(k.Key)
		}
		if !validKeyID(k.ID) {
			return nil, fmt.Errorf("payoutkit: sealing key id %q: want 1 to %d characters of [A-Za-z0-9_-]", k.ID, maxKeyIDLen)
		}
		if _, dup := r.aeads[k.ID]; dup {
			return nil, fmt.Errorf("payoutkit: sealing key id %q is given twice", k.ID)
		}
		block, err := aes.NewCipher(k.Key)
		if err != nil {
			return nil, fmt.Errorf("payoutkit: sealing key %q: %w", k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("payoutkit: sealing key %q: %w", k.ID, err)
		}
		if i == 0 {
			r.current = k.ID
		}
		r.aeads[k.ID] = aead
	}
	return r, nil
}

// CurrentKeyID returns the id of the key Seal uses ("" for a nil ring).
func (r *KeyRing) CurrentKeyID() string {
	if r == nil {
		return ""
	}
	return r.current
}

// Seal returns the stored form of a workspace's secret, sealed with the
// current key and bound to workspaceID. A nil ring returns secret as is.
func (r *KeyRing) Seal(workspaceID, secret string) (string, error) {
	if r == nil {
		return secret, nil
	}
	aead := r.aeads[r.current]
	header := sealedPrefix + sealedVersion + ":" + r.current + ":"
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(secret)+aead.Overhead())
	rand.Read(nonce) // never returns an error; crashes the program if the OS fails
	out := aead.Seal(nonce, nonce, []byte(secret), additionalData(header, workspaceID))
	return header + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open returns the secret of a workspace's stored value: a plain value as it
// is, a sealed one decrypted with the key it names. Failures are *SealError
// matching ErrSealKeyMissing or ErrSealedSecretInvalid.
func (r *KeyRing) Open(workspaceID, stored string) (string, error) {
	if !IsSealedSecret(stored) {
		return stored, nil
	}
	sv, err := ParseSealedSecret(stored)
	if err != nil {
		return "", &SealError{WorkspaceID: workspaceID, Err: ErrSealedSecretInvalid}
	}
	var aead cipher.AEAD
	if r != nil {
		aead = r.aeads[sv.KeyID]
	}
	if aead == nil {
		return "", &SealError{WorkspaceID: workspaceID, KeyID: sv.KeyID, Err: ErrSealKeyMissing}
	}
	if len(sv.Payload) < aead.NonceSize()+aead.Overhead() {
		return "", &SealError{WorkspaceID: workspaceID, KeyID: sv.KeyID, Err: ErrSealedSecretInvalid}
	}
	nonce, ct := sv.Payload[:aead.NonceSize()], sv.Payload[aead.NonceSize():]
	plain, err := aead.Open(nil, nonce, ct, additionalData(sv.header(), workspaceID))
	if err != nil {
		return "", &SealError{WorkspaceID: workspaceID, KeyID: sv.KeyID, Err: ErrSealedSecretInvalid}
	}
	return string(plain), nil
}

// IsCurrent reports whether stored is sealed with the ring's current key,
// so that a reseal can leave it alone.
func (r *KeyRing) IsCurrent(stored string) bool {
	if r == nil {
		return !IsSealedSecret(stored)
	}
	sv, err := ParseSealedSecret(stored)
	return err == nil && sv.KeyID == r.current
}

// additionalData binds a sealed value to its header and its workspace.
func additionalData(header, workspaceID string) []byte {
	return []byte(header + workspaceID)
}

// IsSealedSecret reports whether a stored webhook secret is sealed (well
// formed or not) rather than plain.
func IsSealedSecret(stored string) bool { return strings.HasPrefix(stored, sealedPrefix) }

// SealedSecret is a parsed sealed value.
type SealedSecret struct {
	// Version is the format, "v1".
	Version string
	// KeyID names the key that sealed it.
	KeyID string
	// Payload is the nonce followed by the ciphertext and tag.
	Payload []byte
}

func (s SealedSecret) header() string {
	return sealedPrefix + s.Version + ":" + s.KeyID + ":"
}

// errMalformedSealed is what ParseSealedSecret returns for any malformed
// value; it matches ErrSealedSecretInvalid.
var errMalformedSealed = fmt.Errorf("%w: malformed", ErrSealedSecretInvalid)

// ParseSealedSecret parses "sealed:v1:<key id>:<base64url payload>". It
// checks the form only, not that the payload opens; any malformed value
// matches ErrSealedSecretInvalid.
func ParseSealedSecret(stored string) (SealedSecret, error) {
	rest, ok := strings.CutPrefix(stored, sealedPrefix)
	if !ok {
		return SealedSecret{}, errMalformedSealed
	}
	version, rest, ok := strings.Cut(rest, ":")
	if !ok || version != sealedVersion {
		return SealedSecret{}, errMalformedSealed
	}
	keyID, payload, ok := strings.Cut(rest, ":")
	// The payload is checked against the alphabet first: the decoder
	// would skip line breaks.
	if !ok || !validKeyID(keyID) || !isURLBase64(payload) {
		return SealedSecret{}, errMalformedSealed
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(payload)
	if err != nil {
		return SealedSecret{}, errMalformedSealed
	}
	return SealedSecret{Version: version, KeyID: keyID, Payload: raw}, nil
}

func validKeyID(id string) bool {
	return len(id) <= maxKeyIDLen && isURLBase64(id)
}

// isURLBase64 reports whether s is non-empty and all [A-Za-z0-9_-].
func isURLBase64(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' {
			return false
		}
	}
	return s != ""
}

// ErrNoSecretKeys is a reseal asked of an engine without Config.SecretKeys.
var ErrNoSecretKeys = errors.New("payoutkit: no sealing keys are configured")

// ResealReport is what Engine.ResealWebhookSecrets did.
type ResealReport struct {
	// Workspaces is how many workspaces it looked at.
	Workspaces int `json:"workspaces"`
	// Resealed is how many secrets it sealed again with the current key
	// (plain ones included).
	Resealed int `json:"resealed"`
	// Current is how many were already sealed with the current key.
	Current int `json:"current"`
	// Failed lists the workspaces whose secret it could not open, with why.
	Failed []ResealFailure `json:"failed"`
}

// ResealFailure is one workspace whose secret could not be resealed.
type ResealFailure struct {
	WorkspaceID string `json:"workspace_id"`
	Error       string `json:"error"`
}

// ResealWebhookSecrets seals every workspace's webhook secret with the
// current key of Config.SecretKeys: plain secrets and those sealed with a
// previous key. Each workspace is one short conditional update, so it runs
// beside live servers; a secret rotated meanwhile is left as the rotation
// wrote it. Secrets that do not open are listed in the report and their
// errors joined in err (each a *SealError); the others are resealed anyway.
// Once it reports no failure, every secret opens with the current key alone
// and previous keys can be dropped.
func (e *Engine) ResealWebhookSecrets(ctx context.Context) (ResealReport, error) {
	rep := ResealReport{Failed: []ResealFailure{}}
	if e.keys == nil {
		return rep, ErrNoSecretKeys
	}
	ids, err := e.store.WorkspaceIDs(ctx)
	if err != nil {
		return rep, err
	}
	var errs []error
	for _, id := range ids {
		resealed, err := e.resealOne(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			continue // deleted meanwhile
		case err != nil && ctx.Err() != nil:
			return rep, ctx.Err()
		case err != nil:
			rep.Failed = append(rep.Failed, ResealFailure{WorkspaceID: id, Error: err.Error()})
			errs = append(errs, err)
		case resealed:
			rep.Resealed++
		default:
			rep.Current++
		}
		rep.Workspaces++
	}
	return rep, errors.Join(errs...)
}

// resealOne reseals one workspace's secret unless it is current. A
// concurrent change of the secret makes it look again.
func (e *Engine) resealOne(ctx context.Context, id string) (resealed bool, err error) {
	for range 3 {
		ws, err := e.store.Workspace(ctx, id)
		if err != nil {
			return false, err
		}
		if e.keys.IsCurrent(ws.WebhookSecret) {
			return false, nil
		}
		secret, err := e.keys.Open(id, ws.WebhookSecret)
		if err != nil {
			return false, err
		}
		sealed, err := e.keys.Seal(id, secret)
		if err != nil {
			return false, err
		}
		err = e.store.SwapWebhookSecret(ctx, id, ws.WebhookSecret, sealed)
		if !errors.Is(err, ErrConflict) {
			return err == nil, err
		}
	}
	return false, fmt.Errorf("payoutkit: the webhook secret of workspace %s kept changing during the reseal", id)
}
