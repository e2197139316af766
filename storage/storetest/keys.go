package storetest

import (
	"crypto/rand"
	"net/netip"
	"strings"
	"testing"

	"github.com/payoutkit/payoutkit"
)

func randomSuffix() string { return rand.Text()[:10] }

func testKeys(t *testing.T, open Open) {
	t.Run("AuthenticateForms", func(t *testing.T) {
		e := newEnv(t, open)
		nw := e.workspace()
		key := nw.APIKey.Key
		if !strings.HasPrefix(key, "sk_"+nw.APIKey.Prefix+"_") || len(key) != 44 {
			t.Fatalf("key %q does not have the form sk_<prefix>_<32>", key)
		}
		for _, h := range []string{"Bearer " + key, "bearer " + key, "BEARER " + key, key} {
			p, err := e.eng.Authenticate(e.ctx, h, netip.Addr{})
			if err != nil {
				t.Fatalf("Authenticate(%q): %v", h, err)
			}
			if p.WorkspaceID != nw.Workspace.ID || p.KeyPrefix != nw.APIKey.Prefix {
				t.Fatalf("Authenticate(%q) = %+v", h, p)
			}
		}
		bad := []string{
			"", "Bearer", "Bearer ", "Basic " + key, "Token " + key, key + "x", key[:43],
			"Bearer " + key[:len(key)-1] + "!", strings.ToUpper(key), "sk_" + strings.Repeat("A", 41),
			"Bearer " + key[:len(key)-1] + flip(key[len(key)-1]),
		}
		for _, h := range bad {
			_, err := e.eng.Authenticate(e.ctx, h, netip.Addr{})
			wantErr(t, err, payoutkit.ErrUnauthorized)
			if payoutkit.CodeOf(err) != payoutkit.CodeUnauthorized {
				t.Fatalf("code of %v = %d", err, payoutkit.CodeOf(err))
			}
		}
	})

	t.Run("StoredHashedOnly", func(t *testing.T) {
		e := newEnv(t, open)
		nw := e.workspace()
		k, err := e.store.APIKey(e.ctx, nw.APIKey.Prefix)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(k.Hash[:]), nw.APIKey.Key) || k.WorkspaceID != nw.Workspace.ID || !k.Active() {
			t.Fatalf("stored key %+v", k)
		}
	})

	t.Run("RevokeByPrefix", func(t *testing.T) {
		e := newEnv(t, open)
		nw := e.workspace()
		second := must[payoutkit.NewKey](t)(e.eng.CreateAPIKey(e.ctx, nw.Workspace.ID, payoutkit.CreateAPIKeyRequest{}, payoutkit.ActorCLI))
		n, err := e.eng.RevokeAPIKey(e.ctx, nw.Workspace.ID, "sk_"+nw.APIKey.Prefix, payoutkit.ActorCLI)
		if err != nil || n != 1 {
			t.Fatalf("RevokeAPIKey = %d, %v; want 1", n, err)
		}
		_, err = e.eng.Authenticate(e.ctx, "Bearer "+nw.APIKey.Key, netip.Addr{})
		wantErr(t, err, payoutkit.ErrUnauthorized)
		if _, err := e.eng.Authenticate(e.ctx, "Bearer "+second.Key, netip.Addr{}); err != nil {
			t.Fatalf("the other key stopped working: %v", err)
		}
		if n, _ := e.eng.RevokeAPIKey(e.ctx, nw.Workspace.ID, nw.APIKey.Prefix, payoutkit.ActorCLI); n != 0 {
			t.Fatalf("revoking twice revoked %d", n)
		}
		// Another workspace cannot revoke this one's key.
		other := e.workspace()
		if n, _ := e.eng.RevokeAPIKey(e.ctx, other.Workspace.ID, second.Prefix, payoutkit.ActorCLI); n != 0 {
			t.Fatalf("another workspace revoked %d keys", n)
		}
		keys := must[[]payoutkit.APIKey](t)(e.eng.APIKeys(e.ctx, nw.Workspace.ID))
		if len(keys) != 2 || keys[0].Prefix != second.Prefix || keys[1].Active() || !keys[0].Active() {
			t.Fatalf("keys after revoke = %+v", keys)
		}
		_, err = e.eng.RevokeAPIKey(e.ctx, nw.Workspace.ID, "short", payoutkit.ActorCLI)
		wantErr(t, err, payoutkit.ErrInvalidInput)
	})

	t.Run("ResetAll", func(t *testing.T) {
		e := newEnv(t, open)
		nw := e.workspace()
		second := must[payoutkit.NewKey](t)(e.eng.CreateAPIKey(e.ctx, nw.Workspace.ID, payoutkit.CreateAPIKeyRequest{}, payoutkit.ActorCLI))
		fresh := must[payoutkit.NewKey](t)(e.eng.ResetAPIKeys(e.ctx, nw.Workspace.ID, payoutkit.ActorCLI))
		for _, old := range []string{nw.APIKey.Key, second.Key} {
			_, err := e.eng.Authenticate(e.ctx, old, netip.Addr{})
			wantErr(t, err, payoutkit.ErrUnauthorized)
		}
		p, err := e.eng.Authenticate(e.ctx, "Bearer "+fresh.Key, netip.Addr{})
		if err != nil || p.WorkspaceID != nw.Workspace.ID {
			t.Fatalf("new key: %+v, %v", p, err)
		}
		keys := must[[]payoutkit.APIKey](t)(e.eng.APIKeys(e.ctx, nw.Workspace.ID))
		active := 0
		for _, k := range keys {
			if k.Active() {
				active++
			}
		}
		if len(keys) != 3 || active != 1 {
			t.Fatalf("after reset: %d keys, %d active; want 3, 1", len(keys), active)
		}
	})

	// GET /v1/balance reads the key and the balance in one query
	// (APIKeyBalance): the same answers as Authenticate then Balance, and a
	// revoked key fails on the very next call.
	t.Run("AuthenticateBalance", func(t *testing.T) {
		e := newEnv(t, open)
		nw, other := e.workspace(), e.workspace()
		e.fund(nw.Workspace.ID, "12.34")
		e.fund(other.Workspace.ID, "99.00")
		if _, _, err := e.payout(nw.Workspace.ID, "po-ab", "2.00"); err != nil {
			t.Fatal(err)
		}
		// The store's one-query read itself: the key as APIKey reads it,
		// with its own workspace's balance, and ErrNotFound for a prefix
		// no key has.
		key, kb, err := e.store.APIKeyBalance(e.ctx, nw.APIKey.Prefix)
		if err != nil || key.Prefix != nw.APIKey.Prefix || key.WorkspaceID != nw.Workspace.ID {
			t.Fatalf("APIKeyBalance = %+v, %v; want the key %s of %s", key, err, nw.APIKey.Prefix, nw.Workspace.ID)
		}
		if want := must[payoutkit.APIKey](t)(e.store.APIKey(e.ctx, nw.APIKey.Prefix)); key.Hash != want.Hash || key.Active() != want.Active() {
			t.Fatalf("APIKeyBalance's key %+v differs from APIKey's %+v", key, want)
		}
		if kb.Available.String() != "10.34" || kb.InProgress.String() != "2.00" {
			t.Fatalf("APIKeyBalance's balance %+v; want 10.34 available, 2.00 in progress", kb)
		}
		_, _, err = e.store.APIKeyBalance(e.ctx, strings.Repeat("Z", len(nw.APIKey.Prefix)))
		wantErr(t, err, payoutkit.ErrNotFound)
		p, b, err := e.eng.AuthenticateBalance(e.ctx, "Bearer "+nw.APIKey.Key, netip.Addr{})
		if err != nil || p.WorkspaceID != nw.Workspace.ID || p.KeyPrefix != nw.APIKey.Prefix {
			t.Fatalf("AuthenticateBalance = %+v, %v", p, err)
		}
		if want := e.balance(nw.Workspace.ID); b != want || b.Available.String() != "10.34" || b.InProgress.String() != "2.00" {
			t.Fatalf("balance %+v; want %+v (10.34 available, 2.00 in progress)", b, want)
		}
		for _, h := range []string{"", "Bearer " + nw.APIKey.Key[:len(nw.APIKey.Key)-1] + flip(nw.APIKey.Key[len(nw.APIKey.Key)-1]), "sk_" + strings.Repeat("A", 8) + "_" + strings.Repeat("b", 32)} {
			_, b, err := e.eng.AuthenticateBalance(e.ctx, h, netip.Addr{})
			wantErr(t, err, payoutkit.ErrUnauthorized)
			if b != (payoutkit.Balance{}) {
				t.Fatalf("a refused key read balance %+v", b)
			}
		}
		if _, err := e.eng.RevokeAPIKey(e.ctx, nw.Workspace.ID, nw.APIKey.Prefix, payoutkit.ActorCLI); err != nil {
			t.Fatal(err)
		}
		_, _, err = e.eng.AuthenticateBalance(e.ctx, "Bearer "+nw.APIKey.Key, netip.Addr{})
		wantErr(t, err, payoutkit.ErrUnauthorized)
	})

	t.Run("LastUsed", func(t *testing.T) {
		e := newEnv(t, open)
		nw := e.workspace()
		if _, err := e.eng.Authenticate(e.ctx, nw.APIKey.Key, netip.Addr{}); err != nil {
			t.Fatal(err)
		}
		k := must[payoutkit.APIKey](t)(e.store.APIKey(e.ctx, nw.APIKey.Prefix))
		if k.LastUsedAt.IsZero() {
			t.Fatal("last use not recorded")
		}
	})

	t.Run("PrefixTaken", func(t *testing.T) {
		e := newEnv(t, open)
		nw := e.workspace()
		k := must[payoutkit.APIKey](t)(e.store.APIKey(e.ctx, nw.APIKey.Prefix))
		log := payoutkit.SecurityLogEntry{WorkspaceID: nw.Workspace.ID, At: k.CreatedAt, Action: payoutkit.ActionKeyCreated, Actor: "cli"}
		_, err := e.store.InsertAPIKey(e.ctx, k, false, log)
		wantErr(t, err, payoutkit.ErrConflict)
		if n := len(must[payoutkit.Page[payoutkit.SecurityLogEntry]](t)(e.store.SecurityLog(e.ctx, nw.Workspace.ID, payoutkit.PageRequest{})).Items); n != 0 {
			t.Fatalf("a refused key insert left %d security log entries", n)
		}
		_, err = e.store.APIKey(e.ctx, "NOPE1234")
		wantErr(t, err, payoutkit.ErrNotFound)
	})
}

func flip(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

func testWorkspaces(t *testing.T, open Open) {
	t.Run("InvalidRequests", func(t *testing.T) {
		e := newEnv(t, open)
		for _, req := range []payoutkit.CreateWorkspaceRequest{
			{},
			{Name: "x", WebhookURL: "ftp://example.com"},
			{Name: "x", WebhookURL: "not a url"},
			{Name: "x", StaffEmail: "not-an-email"},
			{Name: "x", StaffPassword: "short"},
		} {
			_, err := e.eng.CreateWorkspace(e.ctx, req)
			wantErr(t, err, payoutkit.ErrInvalidInput)
		}
	})

	t.Run("Webhook", func(t *testing.T) {
		e := newEnv(t, open)
		nw := e.workspace()
		ws, err := e.eng.SetWebhookURL(e.ctx, nw.Workspace.ID, "http://127.0.0.1:9/hook", payoutkit.ActorCLI)
		if err != nil {
			t.Fatal(err)
		}
		rotated := must[payoutkit.Workspace](t)(e.eng.RotateWebhookSecret(e.ctx, ws.ID, payoutkit.ActorCLI))
		got := must[payoutkit.Workspace](t)(e.eng.Workspace(e.ctx, ws.ID))
		if got.WebhookURL != "http://127.0.0.1:9/hook" || got.WebhookSecret != rotated.WebhookSecret || got.WebhookSecret == nw.Workspace.WebhookSecret {
			t.Fatalf("after rotate: %+v", got)
		}
		_, err = e.eng.SetWebhookURL(e.ctx, ws.ID, "javascript:alert(1)", payoutkit.ActorCLI)
		wantErr(t, err, payoutkit.ErrInvalidInput)
		_, err = e.eng.SetWebhookURL(e.ctx, "ws_missing", "https://example.com", payoutkit.ActorCLI)
		wantErr(t, err, payoutkit.ErrNotFound)
	})

	t.Run("SwapWebhookSecret", func(t *testing.T) {
		e := newEnv(t, open)
		nw := e.workspace()
		id, old := nw.Workspace.ID, nw.Workspace.WebhookSecret
		noErr(t, e.store.SwapWebhookSecret(e.ctx, id, old, "sealed:v1:k:AAAA"))
		got := must[payoutkit.Workspace](t)(e.store.Workspace(e.ctx, id))
		if got.WebhookSecret != "sealed:v1:k:AAAA" || got.WebhookURL != nw.Workspace.WebhookURL || got.Name != "Acme" {
			t.Fatalf("after swap: %+v", got)
		}
		// The old value no longer matches: a concurrent rotation wins.
		wantErr(t, e.store.SwapWebhookSecret(e.ctx, id, old, "sealed:v1:k:BBBB"), payoutkit.ErrConflict)
		if got := must[payoutkit.Workspace](t)(e.store.Workspace(e.ctx, id)); got.WebhookSecret != "sealed:v1:k:AAAA" {
			t.Fatalf("a stale swap changed the secret to %q", got.WebhookSecret)
		}
		wantErr(t, e.store.SwapWebhookSecret(e.ctx, "ws_missing", "", "x"), payoutkit.ErrNotFound)
	})
}
