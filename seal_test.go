package payoutkit_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

func newSealKey(t testing.TB) payoutkit.SealKey {
	t.Helper()
	k, err := payoutkit.ParseSealKey(base64.StdEncoding.EncodeToString(randomBytes(32)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func newRing(t testing.TB, current payoutkit.SealKey, previous ...payoutkit.SealKey) *payoutkit.KeyRing {
	t.Helper()
	r, err := payoutkit.NewKeyRing(current, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wantSealErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v; want %v", err, target)
	}
	var se *payoutkit.SealError
	if !errors.As(err, &se) {
		t.Fatalf("err %v is not a *SealError", err)
	}
}

func TestKeyRingRoundTrip(t *testing.T) {
	k := newSealKey(t)
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
	var none *payoutkit.KeyRing
	if got, _ := none.Seal("ws_a", secret); got != secret {
		t.Fatalf("nil ring sealed to %q", got)
	}
	_, err = none.Open("ws_a", sealed)
	wantSealErr(t, err, payoutkit.ErrSealKeyMissing)
}

func TestKeyRingRefusesWhatDoesNotOpen(t *testing.T) {
	k1, k2 := newSealKey(t), newSealKey(t)
	ring := newRing(t, k1)
	sealed, _ := ring.Seal("ws_a", "whsec_secret")

	t.Run("WrongWorkspace", func(t *testing.T) {
		_, err := ring.Open("ws_b", sealed)
		wantSealErr(t, err, payoutkit.ErrSealedSecretInvalid)
	})
	t.Run("Tampered", func(t *testing.T) {
		sv, err := payoutkit.ParseSealedSecret(sealed)
		if err != nil {
			t.Fatal(err)
		}
		for i := range sv.Payload {
			p := bytes.Clone(sv.Payload)
			p[i] ^= 0x01
			v := "sealed:v1:" + sv.KeyID + ":" + base64.RawURLEncoding.EncodeToString(p)
			if _, err := ring.Open("ws_a", v); !errors.Is(err, payoutkit.ErrSealedSecretInvalid) {
				t.Fatalf("byte %d flipped: err = %v", i, err)
			}
		}
		// Truncated, or relabelled with another key id of the ring.
		_, err = ring.Open("ws_a", sealed[:len(sealed)-4])
		wantSealErr(t, err, payoutkit.ErrSealedSecretInvalid)
		both := newRing(t, k2, k1)
		relabelled := strings.Replace(sealed, ":"+k1.ID+":", ":"+k2.ID+":", 1)
		_, err = both.Open("ws_a", relabelled)
		wantSealErr(t, err, payoutkit.ErrSealedSecretInvalid)
	})
	t.Run("MissingKey", func(t *testing.T) {
		_, err := newRing(t, k2).Open("ws_a", sealed)
		wantSealErr(t, err, payoutkit.ErrSealKeyMissing)
		if se := err.(*payoutkit.SealError); se.KeyID != k1.ID || se.WorkspaceID != "ws_a" || strings.Contains(err.Error(), "whsec_") {
			t.Fatalf("error %+v", se)
		}
	})
	t.Run("SameIDOtherKey", func(t *testing.T) {
		_, err := newRing(t, payoutkit.SealKey{ID: k1.ID, Key: k2.Key}).Open("ws_a", sealed)
		wantSealErr(t, err, payoutkit.ErrSealedSecretInvalid)
	})
	t.Run("Malformed", func(t *testing.T) {
		for _, v := range []string{"sealed:", "sealed:v2:" + k1.ID + ":AAAA", "sealed:v1::AAAA", "sealed:v1:" + k1.ID + ":", "sealed:v1:" + k1.ID + ":!!!", "sealed:v1:" + k1.ID + ":AAAA"} {
			_, err := ring.Open("ws_a", v)
			wantSealErr(t, err, payoutkit.ErrSealedSecretInvalid)
		}
	})
}

func TestNewKeyRingChecksKeys(t *testing.T) {
	k := newSealKey(t)
	for name, keys := range map[string][]payoutkit.SealKey{
		"short key":    {{Key: make([]byte, 16)}},
		"bad id":       {{ID: "a:b", Key: k.Key}},
		"duplicate id": {k, k},
	} {
		if _, err := payoutkit.NewKeyRing(keys[0], keys[1:]...); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, s := range []string{"", "not base64", base64.StdEncoding.EncodeToString(make([]byte, 31))} {
		if _, err := payoutkit.ParseSealKey(s); err == nil {
			t.Errorf("ParseSealKey(%q) accepted", s)
		}
	}
	// Both alphabets, padded or not, give the same key and id.
	raw := randomBytes(32)
	a, err1 := payoutkit.ParseSealKey(base64.StdEncoding.EncodeToString(raw))
	b, err2 := payoutkit.ParseSealKey(base64.RawURLEncoding.EncodeToString(raw))
	if err1 != nil || err2 != nil || a.ID != b.ID || !bytes.Equal(a.Key, raw) || a.ID != payoutkit.KeyID(raw) {
		t.Fatalf("ParseSealKey: %v %v %v %v", a.ID, b.ID, err1, err2)
	}
}

// The engine stores sealed secrets and hands out plain ones: at creation,
// on read, and at rotation.
func TestEngineSealsWebhookSecrets(t *testing.T) {
	k1 := newSealKey(t)
	store := memstore.New()
	eng, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: 4, SecretKeys: newRing(t, k1)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	plain := nw.Workspace.WebhookSecret
	raw, _ := store.Workspace(ctx, nw.Workspace.ID)
	if !strings.HasPrefix(plain, "whsec_") || !strings.HasPrefix(raw.WebhookSecret, "sealed:v1:"+k1.ID+":") {
		t.Fatalf("returned %q, stored %q", plain, raw.WebhookSecret)
	}
	got, err := eng.Workspace(ctx, nw.Workspace.ID)
	if err != nil || got.WebhookSecret != plain {
		t.Fatalf("Workspace: %q, %v", got.WebhookSecret, err)
	}
	set, err := eng.SetWebhookURL(ctx, nw.Workspace.ID, "https://hooks.example/x", payoutkit.ActorCLI)
	if err != nil || set.WebhookSecret != plain {
		t.Fatalf("SetWebhookURL: %q, %v", set.WebhookSecret, err)
	}
	if after, _ := store.Workspace(ctx, nw.Workspace.ID); after.WebhookSecret != raw.WebhookSecret {
		t.Fatal("SetWebhookURL rewrote the sealed secret")
	}
	rot, err := eng.RotateWebhookSecret(ctx, nw.Workspace.ID, payoutkit.ActorCLI)
	if err != nil || rot.WebhookSecret == plain || !strings.HasPrefix(rot.WebhookSecret, "whsec_") {
		t.Fatalf("Rotate: %q, %v", rot.WebhookSecret, err)
	}
	raw, _ = store.Workspace(ctx, nw.Workspace.ID)
	if !strings.HasPrefix(raw.WebhookSecret, "sealed:") || strings.Contains(raw.WebhookSecret, rot.WebhookSecret) {
		t.Fatalf("rotated secret stored as %q", raw.WebhookSecret)
	}

	// A sealed secret copied to another workspace's row does not open.
	other, _ := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Other"})
	if err := store.SetWebhook(ctx, other.Workspace.ID, "", raw.WebhookSecret, payoutkit.SecurityLogEntry{WorkspaceID: other.Workspace.ID, At: time.Now(), Action: payoutkit.ActionWebhookSecretRotated, Actor: "cli"}); err != nil {
		t.Fatal(err)
	}
	_, err = eng.Workspace(ctx, other.Workspace.ID)
	wantSealErr(t, err, payoutkit.ErrSealedSecretInvalid)

	// An engine without the key reports it, and still lets the secret be
	// rotated (the way out when a key is lost).
	bare, _ := payoutkit.New(store, &payoutkit.Config{PasswordCost: 4})
	_, err = bare.Workspace(ctx, nw.Workspace.ID)
	wantSealErr(t, err, payoutkit.ErrSealKeyMissing)
	_, err = bare.SetWebhookURL(ctx, nw.Workspace.ID, "https://hooks.example/y", payoutkit.ActorCLI)
	wantSealErr(t, err, payoutkit.ErrSealKeyMissing)
	if _, err := bare.RotateWebhookSecret(ctx, nw.Workspace.ID, payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	if _, err := bare.Workspace(ctx, nw.Workspace.ID); err != nil {
		t.Fatal(err)
	}
	// Other operations never need the secret.
	if _, err := bare.CreateAPIKey(ctx, other.Workspace.ID, payoutkit.CreateAPIKeyRequest{}, payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
}

// Rotation: a plain secret (sealing turned on later) and one sealed with
// the old key are both resealed with the new key; then the old key can go.
func TestResealWebhookSecrets(t *testing.T) {
	ctx := t.Context()
	k1, k2 := newSealKey(t), newSealKey(t)
	store := memstore.New()
	engine := func(keys *payoutkit.KeyRing) *payoutkit.Engine {
		e, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: 4, SecretKeys: keys})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	plainWS, _ := engine(nil).CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Before sealing"})
	oldWS, _ := engine(newRing(t, k1)).CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Old key"})
	if _, err := engine(nil).ResealWebhookSecrets(ctx); !errors.Is(err, payoutkit.ErrNoSecretKeys) {
		t.Fatalf("reseal without keys: %v", err)
	}

	rotating := engine(newRing(t, k2, k1))
	newWS, _ := rotating.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "New key"})
	rep, err := rotating.ResealWebhookSecrets(ctx)
	if err != nil || rep.Workspaces != 3 || rep.Resealed != 2 || rep.Current != 1 || len(rep.Failed) != 0 {
		t.Fatalf("reseal: %+v, %v", rep, err)
	}
	rep, err = rotating.ResealWebhookSecrets(ctx)
	if err != nil || rep.Resealed != 0 || rep.Current != 3 {
		t.Fatalf("second reseal: %+v, %v", rep, err)
	}
	after := engine(newRing(t, k2)) // the old key dropped
	for _, nw := range []payoutkit.NewWorkspace{plainWS, oldWS, newWS} {
		raw, _ := store.Workspace(ctx, nw.Workspace.ID)
		if !strings.HasPrefix(raw.WebhookSecret, "sealed:v1:"+k2.ID+":") {
			t.Fatalf("%s stored as %q", nw.Workspace.Name, raw.WebhookSecret)
		}
		ws, err := after.Workspace(ctx, nw.Workspace.ID)
		if err != nil || ws.WebhookSecret != nw.Workspace.WebhookSecret {
			t.Fatalf("%s after reseal: %q, %v", nw.Workspace.Name, ws.WebhookSecret, err)
		}
	}

	// A secret whose key is gone is reported, and the others are resealed.
	k3 := newSealKey(t)
	lost, _ := engine(newRing(t, k3)).CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Lost key"})
	rep, err = engine(newRing(t, newSealKey(t), k2)).ResealWebhookSecrets(ctx)
	if !errors.Is(err, payoutkit.ErrSealKeyMissing) || rep.Resealed != 3 || len(rep.Failed) != 1 || rep.Failed[0].WorkspaceID != lost.Workspace.ID {
		t.Fatalf("reseal with a lost key: %+v, %v", rep, err)
	}
}

// FuzzParseSealedSecret: the parser never panics, accepts only the
// documented form, and what it accepts prints back to the same string.
func FuzzParseSealedSecret(f *testing.F) {
	k := payoutkit.SealKey{ID: "k1", Key: make([]byte, 32)}
	ring, _ := payoutkit.NewKeyRing(k)
	sealed, _ := ring.Seal("ws_a", "whsec_x")
	for _, s := range []string{sealed, "", "sealed:", "sealed:v1:k1:", "sealed:v1:k1:AAAA", "sealed:v1::AAAA", "sealed:v1:k1:AA==",
		"sealed:v1:k1:a:b", "sealed:v9:k1:AAAA", "whsec_abc", "sealed:v1:" + strings.Repeat("k", 40) + ":AAAA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sv, err := payoutkit.ParseSealedSecret(s)
		if err != nil {
			if !errors.Is(err, payoutkit.ErrSealedSecretInvalid) {
				t.Fatalf("error %v does not match ErrSealedSecretInvalid", err)
			}
			if _, oerr := ring.Open("ws_a", s); payoutkit.IsSealedSecret(s) && !errors.Is(oerr, payoutkit.ErrSealedSecretInvalid) {
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
