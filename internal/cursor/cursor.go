// Package cursor seals a store's list positions into the engine's opaque
// list cursors and opens them again.
//
// A list cursor is base64url (unpadded) of a version byte, the store's
// position and the first 16 bytes of an HMAC-SHA256, keyed with the
// engine's cursor key, of the scope (the listing, the workspace and the
// filter) and the position. A cursor is therefore valid only for the
// listing, workspace and filter it was issued for, and any change to it is
// refused.
package cursor

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"time"
)

const (
	version = 1
	macSize = 16
	// maxLen bounds the cursors opened: the positions of the stores are a
	// few dozen bytes.
	maxLen = 256
)

// DefaultKey keys cursors when the engine's Config.CursorKey is unset. It
// is the same for every engine, so that the instances of a deployment
// accept each other's cursors.
var DefaultKey = sha256.Sum256([]byte("payoutkit list cursor key v1"))

// Scope encodes what a cursor is bound to, each part length-prefixed.
func Scope(kind, workspaceID, status, payerID string, from, to time.Time) []byte {
	b := []byte("payoutkit list cursor v1")
	for _, s := range []string{kind, workspaceID, status, payerID, timeKey(from), timeKey(to)} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

func timeKey(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMicro(), 10)
}

func mac(key, scope, pos []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(scope)
	m.Write(pos)
	return m.Sum(nil)[:macSize]
}

// Seal turns a store position into a cursor for scope, keyed with key; ""
// stays "".
func Seal(key, scope []byte, pos string) string {
	if pos == "" {
		return ""
	}
	b := append([]byte{version}, pos...)
	b = append(b, mac(key, scope, []byte(pos))...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Open returns the store position of a cursor sealed for scope with key;
// "" opens to "" (the first page). Anything else is refused: ok is false.
func Open(key, scope []byte, cursor string) (pos string, ok bool) {
	if cursor == "" {
		return "", true
	}
	if len(cursor) > maxLen {
		return "", false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(cursor)
	// The decoder skips line breaks: only the canonical spelling is accepted.
	if err != nil || len(b) < 2+macSize || b[0] != version || base64.RawURLEncoding.EncodeToString(b) != cursor {
		return "", false
	}
	p, m := b[1:len(b)-macSize], b[len(b)-macSize:]
	if !hmac.Equal(m, mac(key, scope, p)) || bytes.ContainsRune(p, 0) {
		return "", false
	}
	return string(p), true
}
