package seal_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/payoutkit/payoutkit/seal"
)

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func newRing(t testing.TB, current seal.Key, previous ...seal.Key) *seal.KeyRing {
	t.Helper()
	r, err := seal.NewKeyRing(current, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v; want %v", err, target)
	}
	var se *seal.Error
	if !errors.As(err, &se) {
		t.Fatalf("err %v is not a *seal.Error", err)
	}
}

func TestKeyRingRoundTrip(t *testing.T) {
	k := seal.NewKey()
	ring := newRing(t, k)
	const secret = "whsec_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
	sealed, err := ring.Seal("ws_a", secret)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sealed, "sealed:v1:"+k.ID+":") || strings.Contains(sealed, secret) || strings.Contains(sealed, "whsec_") {
		t.Fatalf("sealed value %q", sealed)
	}
	again, _ := ring.Seal("ws_a", secret)
	if again == sealed {
		t.Fatal("two seals of one secret are equal: the nonce is not random")
	}
	for _, v := range []string{sealed, again} {
		got, err := ring.Open("ws_a", v)
		if err != nil || got != secret {
			t.Fatalf("Open = %q, %v", got, err)
		}
	}
	if !ring.IsCurrent(sealed) || ring.IsCurrent(secret) {
		t.Fatal("IsCurrent")
	}
	// Plain values written before sealing was turned on read as they are.
	if got, err := ring.Open("ws_a", secret); err != nil || got != secret {
		t.Fatalf("Open(plain) = %q, %v", got, err)
	}
	// A nil ring stores plain and refuses sealed values.
	var none *seal.KeyRing
	if got, _ := none.Seal("ws_a", secret); got != secret {
		t.Fatalf("nil ring sealed to %q", got)
	}
	_, err = none.Open("ws_a", sealed)
	wantErr(t, err, seal.ErrKeyMissing)
}

func TestKeyRingRefusesWhatDoesNotOpen(t *testing.T) {
	k1, k2 := seal.NewKey(), seal.NewKey()
	ring := newRing(t, k1)
	sealed, _ := ring.Seal("ws_a", "whsec_secret")

	t.Run("WrongWorkspace", func(t *testing.T) {
		_, err := ring.Open("ws_b", sealed)
		wantErr(t, err, seal.ErrInvalid)
	})
	t.Run("Tampered", func(t *testing.T) {
		sv, err := seal.Parse(sealed)
		if err != nil {
			t.Fatal(err)
		}
		for i := range sv.Payload {
			p := bytes.Clone(sv.Payload)
			p[i] ^= 0x01
			v := "sealed:v1:" + sv.KeyID + ":" + base64.RawURLEncoding.EncodeToString(p)
			if _, err := ring.Open("ws_a", v); !errors.Is(err, seal.ErrInvalid) {
				t.Fatalf("byte %d flipped: err = %v", i, err)
			}
		}
		// Truncated, or relabelled with another key id of the ring.
		_, err = ring.Open("ws_a", sealed[:len(sealed)-4])
		wantErr(t, err, seal.ErrInvalid)
		both := newRing(t, k2, k1)
		relabelled := strings.Replace(sealed, ":"+k1.ID+":", ":"+k2.ID+":", 1)
		_, err = both.Open("ws_a", relabelled)
		wantErr(t, err, seal.ErrInvalid)
	})
	t.Run("MissingKey", func(t *testing.T) {
		_, err := newRing(t, k2).Open("ws_a", sealed)
		wantErr(t, err, seal.ErrKeyMissing)
		if se := err.(*seal.Error); se.KeyID != k1.ID || se.WorkspaceID != "ws_a" || strings.Contains(err.Error(), "whsec_") {
			t.Fatalf("error %+v", se)
		}
	})
	t.Run("SameIDOtherKey", func(t *testing.T) {
		_, err := newRing(t, seal.Key{ID: k1.ID, Key: k2.Key}).Open("ws_a", sealed)
		wantErr(t, err, seal.ErrInvalid)
	})
	t.Run("Malformed", func(t *testing.T) {
		for _, v := range []string{"sealed:", "sealed:v2:" + k1.ID + ":AAAA", "sealed:v1::AAAA", "sealed:v1:" + k1.ID + ":", "sealed:v1:" + k1.ID + ":!!!", "sealed:v1:" + k1.ID + ":AAAA"} {
			_, err := ring.Open("ws_a", v)
			wantErr(t, err, seal.ErrInvalid)
		}
	})
}

func TestNewKeyRingChecksKeys(t *testing.T) {
	k := seal.NewKey()
	for name, keys := range map[string][]seal.Key{
		"short key":    {{Key: make([]byte, 16)}},
		"bad id":       {{ID: "a:b", Key: k.Key}},
		"duplicate id": {k, k},
	} {
		if _, err := seal.NewKeyRing(keys[0], keys[1:]...); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, s := range []string{"", "not base64", base64.StdEncoding.EncodeToString(make([]byte, 31))} {
		if _, err := seal.ParseKey(s); err == nil {
			t.Errorf("ParseKey(%q) accepted", s)
		}
	}
	// Both alphabets, padded or not, give the same key and id.
	raw := randomBytes(32)
	a, err1 := seal.ParseKey(base64.StdEncoding.EncodeToString(raw))
	b, err2 := seal.ParseKey(base64.RawURLEncoding.EncodeToString(raw))
	if err1 != nil || err2 != nil || a.ID != b.ID || !bytes.Equal(a.Key, raw) || a.ID != seal.KeyID(raw) {
		t.Fatalf("ParseKey: %v %v %v %v", a.ID, b.ID, err1, err2)
	}
}

// FuzzParse: the parser never panics, accepts only the
// documented form, and what it accepts prints back to the same string.
func FuzzParse(f *testing.F) {
	k := seal.Key{ID: "k1", Key: make([]byte, 32)}
	ring, _ := seal.NewKeyRing(k)
	sealed, _ := ring.Seal("ws_a", "whsec_x")
	for _, s := range []string{sealed, "", "sealed:", "sealed:v1:k1:", "sealed:v1:k1:AAAA", "sealed:v1::AAAA", "sealed:v1:k1:AA==",
		"sealed:v1:k1:a:b", "sealed:v9:k1:AAAA", "whsec_abc", "sealed:v1:" + strings.Repeat("k", 40) + ":AAAA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sv, err := seal.Parse(s)
		if err != nil {
			if !errors.Is(err, seal.ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			if _, oerr := ring.Open("ws_a", s); seal.IsSealed(s) && !errors.Is(oerr, seal.ErrInvalid) {
				t.Fatalf("Open(%q) = %v", s, oerr)
			}
			return
		}
		if back := "sealed:" + sv.Version + ":" + sv.KeyID + ":" + base64.RawURLEncoding.EncodeToString(sv.Payload); back != s {
			t.Fatalf("parsed %q, prints %q", s, back)
		}
		if sv.Version != "v1" || sv.KeyID == "" || len(sv.KeyID) > 32 || strings.ContainsAny(sv.KeyID, ":") || len(sv.Payload) == 0 {
			t.Fatalf("accepted %q as %+v", s, sv)
		}
		// Opening a well-formed value never panics and only succeeds for a
		// genuine seal (from this or another fuzzing process).
		got, err := ring.Open("ws_a", s)
		if err == nil && got != "whsec_x" {
			t.Fatalf("Open(%q) = %q", s, got)
		}
	})
}
