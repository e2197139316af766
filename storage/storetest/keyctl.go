package storetest

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/payoutkit/payoutkit"
)

// testKeyControls: a key's scopes and address allowlist round-trip through
// the store (every read of a key), new keys have every scope and no
// allowlist unless told otherwise, and the engine enforces the allowlist
// after the key itself (section 10).
func testKeyControls(t *testing.T, open Open) {
	all := payoutkit.AllScopes()
	t.Run("Defaults", func(t *testing.T) {
		e := newEnv(t, open)
		nw := e.workspace()
		second := must[payoutkit.NewKey](t)(e.eng.CreateAPIKey(e.ctx, nw.Workspace.ID, payoutkit.CreateAPIKeyRequest{}, payoutkit.ActorCLI))
		if !slices.Equal(second.Scopes, all) || len(second.AllowIPs) != 0 {
			t.Fatalf("CreateAPIKey's key has scopes %v and allow_ips %v; want %v and none", second.Scopes, second.AllowIPs, all)
		}
		for _, k := range must[[]payoutkit.APIKey](t)(e.eng.APIKeys(e.ctx, nw.Workspace.ID)) {
			if !slices.Equal(k.Scopes, all) || len(k.AllowIPs) != 0 {
				t.Fatalf("key %s stored with scopes %v and allow_ips %v; want %v and none", k.Prefix, k.Scopes, k.AllowIPs, all)
			}
		}
		fresh := must[payoutkit.NewKey](t)(e.eng.ResetAPIKeys(e.ctx, nw.Workspace.ID, payoutkit.ActorCLI))
		k := must[payoutkit.APIKey](t)(e.store.APIKey(e.ctx, fresh.Prefix))
		if !slices.Equal(k.Scopes, all) || len(k.AllowIPs) != 0 {
			t.Fatalf("reset's key stored with scopes %v and allow_ips %v", k.Scopes, k.AllowIPs)
		}
		p := must[payoutkit.Principal](t)(e.eng.Authenticate(e.ctx, fresh.Key, netip.MustParseAddr("198.51.100.1")))
		if !slices.Equal(p.Scopes, all) || p.Require(payoutkit.ScopePayoutsWrite) != nil || p.Require(payoutkit.ScopeOrdersWrite) != nil {
			t.Fatalf("principal %+v of a default key", p)
		}
	})

	t.Run("RoundTrip", func(t *testing.T) {
		e := newEnv(t, open)
		nw := e.workspace()
		ws := nw.Workspace.ID
		cases := []struct {
			req        payoutkit.CreateAPIKeyRequest
			wantScopes []payoutkit.Scope
			wantIPs    []string
		}{
			{payoutkit.CreateAPIKeyRequest{Scopes: []payoutkit.Scope{}}, []payoutkit.Scope{}, []string{}},
			{payoutkit.CreateAPIKeyRequest{Scopes: []payoutkit.Scope{payoutkit.ScopePayoutsWrite, payoutkit.ScopePayoutsWrite}}, []payoutkit.Scope{payoutkit.ScopePayoutsWrite}, []string{}},
			{payoutkit.CreateAPIKeyRequest{
				Scopes:   []payoutkit.Scope{payoutkit.ScopeOrdersWrite},
				AllowIPs: []string{"10.1.2.3/8", " 203.0.113.7 ", "2001:db8::/32", "2001:db8::1", "10.0.0.0/8"},
			}, []payoutkit.Scope{payoutkit.ScopeOrdersWrite}, []string{"10.0.0.0/8", "203.0.113.7", "2001:db8::/32", "2001:db8::1"}},
		}
		for _, c := range cases {
			nk := must[payoutkit.NewKey](t)(e.eng.CreateAPIKey(e.ctx, ws, c.req, payoutkit.ActorCLI))
			check := func(how string, scopes []payoutkit.Scope, ips []netip.Prefix) {
				t.Helper()
				if !slices.Equal(scopes, c.wantScopes) || !slices.Equal(payoutkit.FormatAllowIPs(ips), c.wantIPs) {
					t.Fatalf("%s of %+v: scopes %v, allow_ips %v; want %v, %v", how, c.req, scopes, ips, c.wantScopes, c.wantIPs)
				}
			}
			check("NewKey", nk.Scopes, nk.AllowIPs)
			k := must[payoutkit.APIKey](t)(e.store.APIKey(e.ctx, nk.Prefix))
			check("APIKey", k.Scopes, k.AllowIPs)
			kb, _, err := e.store.APIKeyBalance(e.ctx, nk.Prefix)
			noErr(t, err)
			check("APIKeyBalance", kb.Scopes, kb.AllowIPs)
			i := slices.IndexFunc(must[[]payoutkit.APIKey](t)(e.eng.APIKeys(e.ctx, ws)), func(k payoutkit.APIKey) bool { return k.Prefix == nk.Prefix })
			if i < 0 {
				t.Fatalf("APIKeys lacks %s", nk.Prefix)
			}
			listed := must[[]payoutkit.APIKey](t)(e.eng.APIKeys(e.ctx, ws))[i]
			check("APIKeys", listed.Scopes, listed.AllowIPs)
			client := netip.MustParseAddr("203.0.113.7")
			p := must[payoutkit.Principal](t)(e.eng.Authenticate(e.ctx, "Bearer "+nk.Key, client))
			check("Authenticate", p.Scopes, p.AllowIPs)
			p, _ = must2(t)(e.eng.AuthenticateBalance(e.ctx, "Bearer "+nk.Key, client))
			check("AuthenticateBalance", p.Scopes, p.AllowIPs)
			for _, s := range payoutkit.AllScopes() {
				err := p.Require(s)
				if slices.Contains(c.wantScopes, s) {
					noErr(t, err)
					continue
				}
				wantErr(t, err, payoutkit.ErrForbidden)
				if payoutkit.CodeOf(err) != payoutkit.CodeForbidden || err.Error() != "this API key lacks the "+string(s)+" scope" {
					t.Fatalf("Require(%s) = %v (code %d)", s, err, payoutkit.CodeOf(err))
				}
			}
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		e := newEnv(t, open)
		nw := e.workspace()
		before := must[[]payoutkit.APIKey](t)(e.eng.APIKeys(e.ctx, nw.Workspace.ID))
		for _, c := range []struct {
			req   payoutkit.CreateAPIKeyRequest
			field string
		}{
			{payoutkit.CreateAPIKeyRequest{Scopes: []payoutkit.Scope{"payouts:read"}}, "scopes"},
			{payoutkit.CreateAPIKeyRequest{Scopes: []payoutkit.Scope{"read"}}, "scopes"},
			{payoutkit.CreateAPIKeyRequest{AllowIPs: []string{"10.0.0.0/33"}}, "allow_ips"},
			{payoutkit.CreateAPIKeyRequest{AllowIPs: []string{"example.com"}}, "allow_ips"},
			{payoutkit.CreateAPIKeyRequest{AllowIPs: []string{"fe80::1%eth0"}}, "allow_ips"},
			{payoutkit.CreateAPIKeyRequest{AllowIPs: []string{""}}, "allow_ips"},
		} {
			_, err := e.eng.CreateAPIKey(e.ctx, nw.Workspace.ID, c.req, payoutkit.ActorCLI)
			wantErr(t, err, payoutkit.ErrInvalidInput)
			pe, ok := errors.AsType[*payoutkit.Error](err)
			if !ok || len(pe.Fields) == 0 || pe.Fields[0].Field != c.field {
				t.Fatalf("CreateAPIKey(%+v) = %v; want a 40000 on %s", c.req, err, c.field)
			}
		}
		if after := must[[]payoutkit.APIKey](t)(e.eng.APIKeys(e.ctx, nw.Workspace.ID)); len(after) != len(before) {
			t.Fatalf("refused requests made keys: %d before, %d after", len(before), len(after))
		}
	})

	// The allowlist is judged after the key: a bad key is 40100 from any
	// address, a good one from outside its list 40300, without recording
	// a use.
	t.Run("AllowIPs", func(t *testing.T) {
		e := newEnv(t, open)
		nw := e.workspace()
		nk := must[payoutkit.NewKey](t)(e.eng.CreateAPIKey(e.ctx, nw.Workspace.ID, payoutkit.CreateAPIKeyRequest{
			Scopes: []payoutkit.Scope{}, AllowIPs: []string{"10.0.0.0/8", "2001:db8::/32"},
		}, payoutkit.ActorCLI))
		for _, a := range []string{"10.0.0.1", "10.255.255.255", "::ffff:10.9.8.7", "2001:db8::5"} {
			if _, err := e.eng.Authenticate(e.ctx, nk.Key, netip.MustParseAddr(a)); err != nil {
				t.Fatalf("from %s: %v", a, err)
			}
		}
		e2 := newEnv(t, open)
		nw2 := e2.workspace()
		nk2 := must[payoutkit.NewKey](t)(e2.eng.CreateAPIKey(e2.ctx, nw2.Workspace.ID, payoutkit.CreateAPIKeyRequest{AllowIPs: []string{"10.0.0.0/8"}}, payoutkit.ActorCLI))
		for _, a := range []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("11.0.0.1"), netip.MustParseAddr("::1"), {}} {
			_, err := e2.eng.Authenticate(e2.ctx, nk2.Key, a)
			wantErr(t, err, payoutkit.ErrForbidden)
			_, _, err = e2.eng.AuthenticateBalance(e2.ctx, nk2.Key, a)
			wantErr(t, err, payoutkit.ErrForbidden)
			_, err = e2.eng.Authenticate(e2.ctx, nk2.Key[:len(nk2.Key)-1]+flip(nk2.Key[len(nk2.Key)-1]), a)
			wantErr(t, err, payoutkit.ErrUnauthorized)
		}
		if k := must[payoutkit.APIKey](t)(e2.store.APIKey(e2.ctx, nk2.Prefix)); !k.LastUsedAt.IsZero() {
			t.Fatalf("a refused address recorded a use at %v", k.LastUsedAt)
		}
		if _, err := e2.eng.RevokeAPIKey(e2.ctx, nw2.Workspace.ID, nk2.Prefix, payoutkit.ActorCLI); err != nil {
			t.Fatal(err)
		}
		_, err := e2.eng.Authenticate(e2.ctx, nk2.Key, netip.MustParseAddr("127.0.0.1"))
		wantErr(t, err, payoutkit.ErrUnauthorized)
	})
}

func must2(t *testing.T) func(payoutkit.Principal, payoutkit.Balance, error) (payoutkit.Principal, payoutkit.Balance) {
	return func(p payoutkit.Principal, b payoutkit.Balance, err error) (payoutkit.Principal, payoutkit.Balance) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p, b
	}
}
