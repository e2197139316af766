package portal_test

import (
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/payoutkit/payoutkit"
)

// The key form makes keys with the scopes ticked and the addresses given,
// which the engine then enforces; the table shows both; a refused form
// keeps what was typed and makes no key.
func TestKeyFormControls(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)

	form := b.get("/settings/developer").wantStatus(t, http.StatusOK)
	form.wantContains(t, `name="scope" value="orders:write" checked`, `name="scope" value="payouts:write" checked`, `name="allow_ips"`)

	page := b.post("/settings/developer/keys", url.Values{
		"csrf_token": {csrf}, "scope": {"", "payouts:write"}, "allow_ips": {"10.0.0.0/8, 192.0.2.7"},
	}).wantStatus(t, http.StatusOK)
	narrow := between(page.body, `data-testid="new-key">`, "<")
	p, err := h.engine.Authenticate(h.ctx, narrow, netip.MustParseAddr("10.1.2.3"))
	if err != nil || p.Require(payoutkit.ScopePayoutsWrite) != nil || p.Require(payoutkit.ScopeOrdersWrite) == nil {
		t.Fatalf("the payouts-only key from 10.1.2.3: %+v, %v", p, err)
	}
	if _, err := h.engine.Authenticate(h.ctx, narrow, netip.MustParseAddr("127.0.0.1")); !errors.Is(err, payoutkit.ErrForbidden) {
		t.Fatalf("the key from outside its list: %v", err)
	}

	page = b.post("/settings/developer/keys", url.Values{"csrf_token": {csrf}, "scope": {""}}).wantStatus(t, http.StatusOK)
	readOnly := between(page.body, `data-testid="new-key">`, "<")
	p, err = h.engine.Authenticate(h.ctx, readOnly, netip.MustParseAddr("203.0.113.1"))
	if err != nil || len(p.Scopes) != 0 {
		t.Fatalf("the read-only key: %+v, %v", p, err)
	}

	rows := keyCells(b.get("/settings/developer").wantStatus(t, http.StatusOK).body)
	if r := rows[nw.APIKey.Prefix]; r["key-scopes"] != "orders:write, payouts:write" || r["key-allow-ips"] != "any" {
		t.Errorf("the first key's row: %v", r)
	}
	if r := rows[strings.Split(narrow, "_")[1]]; r["key-scopes"] != "payouts:write" || r["key-allow-ips"] != "10.0.0.0/8, 192.0.2.7" {
		t.Errorf("the narrow key's row: %v", r)
	}
	if r := rows[strings.Split(readOnly, "_")[1]]; r["key-scopes"] != "read only" || r["key-allow-ips"] != "any" {
		t.Errorf("the read-only key's row: %v", r)
	}

	before, _ := h.engine.APIKeys(h.ctx, nw.Workspace.ID)
	bad := b.post("/settings/developer/keys", url.Values{
		"csrf_token": {csrf}, "scope": {"", "orders:write"}, "allow_ips": {"10.0.0.0/33"},
	}).wantStatus(t, http.StatusBadRequest)
	bad.wantContains(t, `value="10.0.0.0/33"`, `name="scope" value="orders:write" checked`, `class="field-error"`)
	if strings.Contains(bad.body, `name="scope" value="payouts:write" checked`) || strings.Contains(bad.body, `data-testid="new-key"`) {
		t.Fatal("the refused form lost its state or made a key")
	}
	b.post("/settings/developer/keys", url.Values{"csrf_token": {csrf}, "scope": {"", "payouts:read"}}).wantStatus(t, http.StatusBadRequest)
	if after, _ := h.engine.APIKeys(h.ctx, nw.Workspace.ID); len(after) != len(before) {
		t.Fatalf("refused forms made keys: %d, then %d", len(before), len(after))
	}
}
