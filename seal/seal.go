// Package seal keeps secrets encrypted at rest: each workspace's webhook
// signing secret (package payoutkit, Config.SecretKeys) and each staff
// user's TOTP secret (package staff). A sealed value, as stored, reads
//
//	sealed:v1:<key id>:<base64url(nonce | AES-256-GCM ciphertext and tag)>
//
// The GCM additional data is the "sealed:v1:<key id>:" header followed by
// the id the value is bound to (a workspace id), so a sealed value copied
// to another row (or relabelled with another key id) does not open. A
// stored value without the "sealed:" prefix is a plain secret written
// before sealing was turned on, and reads as it is.
//
// A [KeyRing] seals with its current key and opens values sealed with any
// of its keys, so that keys can be rotated.
package seal

import (
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

// sealedPrefix starts every sealed value; plain webhook secrets start with
// "whsec_".
const sealedPrefix = "sealed:"

// sealedVersion is the format of the sealed values written today.
const sealedVersion = "v1"

// KeySize is the size of a sealing key: 32 bytes, for AES-256.
const KeySize = 32

// maxKeyIDLen bounds a key id, so that a sealed value stays short.
const maxKeyIDLen = 32

// Errors of sealed values, matched with errors.Is; the error returned by
// [KeyRing.Open] is an [*Error] naming the workspace and the key id.
var (
	// ErrKeyMissing is a sealed value whose key id is not in the key ring
	// (or a nil key ring reading a sealed value).
	ErrKeyMissing = errors.New("payoutkit: the webhook secret is sealed with a key that is not configured")
	// ErrInvalid is a sealed value that is malformed or does not open with
	// its key: tampered with, copied from another workspace, or sealed with
	// another key under the same id.
	ErrInvalid = errors.New("payoutkit: the sealed webhook secret is malformed or does not open")
)

// Error is a sealed value that could not be opened. It never carries the
// secret or a key.
type Error struct {
	// WorkspaceID is the id the value is bound to.
	WorkspaceID string
	// KeyID is the id of the key the value names; empty when the value is
	// too malformed to name one.
	KeyID string
	// Err is ErrKeyMissing or ErrInvalid.
	Err error
}

// Error names the failure, the workspace and the key id.
func (e *Error) Error() string {
	msg := e.Err.Error() + " (workspace " + e.WorkspaceID
	if e.KeyID != "" {
		msg += ", key id " + e.KeyID
	}
	return msg + ")"
}

// Unwrap returns ErrKeyMissing or ErrInvalid.
func (e *Error) Unwrap() error { return e.Err }

// Key is one AES-256 key of a KeyRing.
type Key struct {
	// ID names the key in the values it seals: 1 to 32 characters of
	// [A-Za-z0-9_-]. Defaults to KeyID(Key).
	ID string
	// Key is the 32-byte AES-256 key.
	Key []byte
}

// NewKey returns a new random key (KeySize bytes from crypto/rand) with
// its derived id.
func NewKey() Key {
	key := make([]byte, KeySize)
	rand.Read(key) // never returns an error; crashes the program if the OS fails
	return Key{ID: KeyID(key), Key: key}
}

// KeyID derives a key's id from the key: 16 hex digits of an HMAC-SHA256
// keyed with it, which tell keys apart without revealing anything of them.
func KeyID(key []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("payoutkit webhook secret sealing key id"))
	return hex.EncodeToString(mac.Sum(nil)[:8])
}

// ParseKey decodes a key given as base64 (standard or URL alphabet, padded
// or not) of 32 bytes, as in PAYOUTKIT_SECRET_KEY. Its ID is derived with
// KeyID. The error never quotes the value.
func ParseKey(encoded string) (Key, error) {
	s := strings.TrimRight(strings.TrimSpace(encoded), "=")
	var key []byte
	var err error
	if strings.ContainsAny(s, "-_") {
		key, err = base64.RawURLEncoding.DecodeString(s)
	} else {
		key, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil || len(key) != KeySize {
		return Key{}, fmt.Errorf("payoutkit: a sealing key must be the base64 of %d random bytes", KeySize)
	}
	return Key{ID: KeyID(key), Key: key}, nil
}

// KeyRing seals secrets with its current key and opens values sealed with
// any of its keys, so that keys can be rotated: make the new key current,
// keep the old one as previous, reseal (payoutkit's
// Engine.ResealWebhookSecrets), then drop the old one. It is safe for
// concurrent use.
//
// A nil *KeyRing seals nothing: Seal returns the secret as is, and Open
// returns plain values as they are and refuses sealed ones with
// ErrKeyMissing.
type KeyRing struct {
	current string // the id Seal uses
	aeads   map[string]cipher.AEAD
}

// NewKeyRing returns a key ring that seals with current and opens with
// current and every previous key. Key ids must be distinct.
func NewKeyRing(current Key, previous ...Key) (*KeyRing, error) {
	r := &KeyRing{aeads: make(map[string]cipher.AEAD, 1+len(previous))}
	for i, k := range append([]Key{current}, previous...) {
		if len(k.Key) != KeySize {
			return nil, fmt.Errorf("payoutkit: sealing key %d is %d bytes; want %d", i, len(k.Key), KeySize)
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

// Seal returns the stored form of a secret, sealed with the current key and
// bound to workspaceID. A nil ring returns secret as is.
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

// Open returns the secret of a stored value bound to workspaceID: a plain
// value as it is, a sealed one decrypted with the key it names. Failures
// are *Error matching ErrKeyMissing or ErrInvalid.
func (r *KeyRing) Open(workspaceID, stored string) (string, error) {
	if !IsSealed(stored) {
		return stored, nil
	}
	sv, err := Parse(stored)
	if err != nil {
		return "", &Error{WorkspaceID: workspaceID, Err: ErrInvalid}
	}
	var aead cipher.AEAD
	if r != nil {
		aead = r.aeads[sv.KeyID]
	}
	if aead == nil {
		return "", &Error{WorkspaceID: workspaceID, KeyID: sv.KeyID, Err: ErrKeyMissing}
	}
	if len(sv.Payload) < aead.NonceSize()+aead.Overhead() {
		return "", &Error{WorkspaceID: workspaceID, KeyID: sv.KeyID, Err: ErrInvalid}
	}
	nonce, ct := sv.Payload[:aead.NonceSize()], sv.Payload[aead.NonceSize():]
	plain, err := aead.Open(nil, nonce, ct, additionalData(sv.header(), workspaceID))
	if err != nil {
		return "", &Error{WorkspaceID: workspaceID, KeyID: sv.KeyID, Err: ErrInvalid}
	}
	return string(plain), nil
}

// IsCurrent reports whether stored is sealed with the ring's current key,
// so that a reseal can leave it alone.
func (r *KeyRing) IsCurrent(stored string) bool {
	if r == nil {
		return !IsSealed(stored)
	}
	sv, err := Parse(stored)
	return err == nil && sv.KeyID == r.current
}

// additionalData binds a sealed value to its header and its workspace.
func additionalData(header, workspaceID string) []byte {
	return []byte(header + workspaceID)
}

// IsSealed reports whether a stored secret is sealed (well formed or not)
// rather than plain.
func IsSealed(stored string) bool { return strings.HasPrefix(stored, sealedPrefix) }

// Sealed is a parsed sealed value.
type Sealed struct {
	// Version is the format, "v1".
	Version string
	// KeyID names the key that sealed it.
	KeyID string
	// Payload is the nonce followed by the ciphertext and tag.
	Payload []byte
}

func (s Sealed) header() string {
	return sealedPrefix + s.Version + ":" + s.KeyID + ":"
}

// errMalformed is what Parse returns for any malformed value; it matches
// ErrInvalid.
var errMalformed = fmt.Errorf("%w: malformed", ErrInvalid)

// Parse parses "sealed:v1:<key id>:<base64url payload>". It checks the
// form only, not that the payload opens; any malformed value matches
// ErrInvalid.
func Parse(stored string) (Sealed, error) {
	rest, ok := strings.CutPrefix(stored, sealedPrefix)
	if !ok {
		return Sealed{}, errMalformed
	}
	version, rest, ok := strings.Cut(rest, ":")
	if !ok || version != sealedVersion {
		return Sealed{}, errMalformed
	}
	keyID, payload, ok := strings.Cut(rest, ":")
	// The payload is checked against the alphabet first: the decoder
	// would skip line breaks.
	if !ok || !validKeyID(keyID) || !isURLBase64(payload) {
		return Sealed{}, errMalformed
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(payload)
	if err != nil {
		return Sealed{}, errMalformed
	}
	return Sealed{Version: version, KeyID: keyID, Payload: raw}, nil
}

func validKeyID(id string) bool {
	return len(id) <= maxKeyIDLen && isURLBase64(id)
}

// isURLBase64 reports whether s is non-empty and all [A-Za-z0-9_-].
func isURLBase64(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return s != ""
}
