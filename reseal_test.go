package payoutkit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/seal"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

func newRing(t testing.TB, current seal.Key, previous ...seal.Key) *seal.KeyRing {
	t.Helper()
	r, err := seal.NewKeyRing(current, previous...)
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
	var se *seal.Error
	if !errors.As(err, &se) {
		t.Fatalf("err %v is not a *seal.Error", err)
	}
}

// The engine stores sealed secrets and hands out plain ones: at creation,
// on read, and at rotation.
func TestEngineSealsWebhookSecrets(t *testing.T) {
	k1 := seal.NewKey()
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
	wantSealErr(t, err, seal.ErrInvalid)

	// An engine without the key reports it, and still lets the secret be
	// rotated (the way out when a key is lost).
	bare, _ := payoutkit.New(store, &payoutkit.Config{PasswordCost: 4})
	_, err = bare.Workspace(ctx, nw.Workspace.ID)
	wantSealErr(t, err, seal.ErrKeyMissing)
	_, err = bare.SetWebhookURL(ctx, nw.Workspace.ID, "https://hooks.example/y", payoutkit.ActorCLI)
	wantSealErr(t, err, seal.ErrKeyMissing)
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
	k1, k2 := seal.NewKey(), seal.NewKey()
	store := memstore.New()
	engine := func(keys *seal.KeyRing) *payoutkit.Engine {
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
	k3 := seal.NewKey()
	lost, _ := engine(newRing(t, k3)).CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Lost key"})
	rep, err = engine(newRing(t, seal.NewKey(), k2)).ResealWebhookSecrets(ctx)
	if !errors.Is(err, seal.ErrKeyMissing) || rep.Resealed != 3 || len(rep.Failed) != 1 || rep.Failed[0].WorkspaceID != lost.Workspace.ID {
		t.Fatalf("reseal with a lost key: %+v, %v", rep, err)
	}
}
