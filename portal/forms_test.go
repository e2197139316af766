package portal_test

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/payoutkit/payoutkit"
)

// TestBadFormInput posts bad values to every form: each answers the page
// again with status 400 and the message next to its field, and changes
// nothing.
func TestBadFormInput(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	ws := nw.Workspace.ID
	if _, err := h.engine.SetWebhookURL(h.ctx, ws, "https://hooks.example/ok", payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)
	long := strings.Repeat("a", 3000)
	cases := []struct {
		path    string
		form    url.Values
		message string
	}{
		{"/settings/developer/webhook", url.Values{"url": {""}}, "This field is required."},
		{"/settings/developer/webhook", url.Values{"url": {"ftp://hooks.example/x"}}, "Enter an absolute http:// or https:// URL."},
		{"/settings/developer/webhook", url.Values{"url": {"not a url"}}, "Enter an absolute http:// or https:// URL."},
		{"/settings/developer/webhook", url.Values{"url": {"https://hooks.example/\x01"}}, "control characters"},
		{"/settings/developer/webhook", url.Values{"url": {"https://hooks.example/" + long}}, "at most 2048 characters"},
		{"/settings/developer/keys/revoke", url.Values{"prefix": {""}}, "This field is required."},
		{"/settings/developer/keys/revoke", url.Values{"prefix": {"abc"}}, "A key prefix is 8 letters and digits."},
		{"/settings/developer/keys/revoke", url.Values{"prefix": {"abcd\x00fgh"}}, "control characters"},
		{"/settings/developer/keys/revoke", url.Values{"prefix": {long}}, "at most 8 characters"},
		{"/settings/developer/events/resend", url.Values{"event_id": {""}}, "This field is required."},
		{"/settings/developer/events/resend", url.Values{"event_id": {long}}, "at most 64 characters"},
		{"/settings/password", url.Values{"current_password": {""}, "new_password": {"a long new password"}, "confirm_password": {"a long new password"}}, "This field is required."},
		{"/settings/password", url.Values{"current_password": {nw.StaffPassword}, "new_password": {"short"}, "confirm_password": {"short"}}, "This field must be at least 12 characters."},
		{"/settings/password", url.Values{"current_password": {nw.StaffPassword}, "new_password": {long}, "confirm_password": {long}}, "at most 72 characters"},
		{"/settings/password", url.Values{"current_password": {nw.StaffPassword}, "new_password": {"a long new password"}, "confirm_password": {"another one"}}, "The two new passwords differ."},
		{"/settings/password", url.Values{"current_password": {"not it at all"}, "new_password": {"a long new password"}, "confirm_password": {"a long new password"}}, "is not your current password"},
	}
	keysBefore, _ := h.engine.APIKeys(h.ctx, ws)
	for _, tc := range cases {
		tc.form.Set("csrf_token", csrf)
		resp := b.post(tc.path, tc.form)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST %s %q: status %d; want 400", tc.path, tc.form, resp.StatusCode)
			continue
		}
		if !strings.Contains(resp.body, `<p class="field-error" role="alert">`) || !strings.Contains(resp.body, tc.message) {
			t.Errorf("POST %s %q: no field message %q:\n%s", tc.path, tc.form, tc.message, resp.body)
		}
	}
	w, _ := h.engine.Workspace(h.ctx, ws)
	keysAfter, _ := h.engine.APIKeys(h.ctx, ws)
	if w.WebhookURL != "https://hooks.example/ok" || len(keysAfter) != len(keysBefore) || !keysAfter[0].Active() {
		t.Fatalf("bad input changed something: webhook %q, keys %v", w.WebhookURL, keysAfter)
	}
	csrf = b.signIn(nw.StaffEmail, nw.StaffPassword) // the password is unchanged
	b.post("/settings/developer/events/resend", url.Values{"csrf_token": {csrf}, "event_id": {"evt_unknown"}}).wantStatus(t, http.StatusNotFound)
}

// TestDeveloperSettings drives the Developer section as the CLI's twin: keys
// made and revoked here work (or stop working) on the engine at once.
func TestDeveloperSettings(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	ws := nw.Workspace.ID
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)

	page := b.post("/settings/developer/keys", url.Values{"csrf_token": {csrf}}).wantStatus(t, http.StatusOK)
	key := between(page.body, `data-testid="new-key">`, "<")
	p, err := h.engine.Authenticate(h.ctx, "Bearer "+key, netip.Addr{})
	if err != nil || p.WorkspaceID != ws {
		t.Fatalf("the new key %q does not authenticate: %v", key, err)
	}
	if again := b.get("/settings/developer"); strings.Contains(again.body, key) || strings.Contains(again.body, "new-key") {
		t.Fatal("the key is shown twice")
	}
	b.get("/settings/developer").wantContains(t, `data-testid="key-row" data-prefix="`+p.KeyPrefix+`"`)

	resp := b.post("/settings/developer/keys/revoke", url.Values{"csrf_token": {csrf}, "prefix": {p.KeyPrefix}}).wantStatus(t, http.StatusSeeOther)
	if _, err := h.engine.Authenticate(h.ctx, "Bearer "+key, netip.Addr{}); err == nil {
		t.Fatal("a revoked key still authenticates")
	}
	b.get(resp.Header.Get("Location")).wantContains(t, "The key was revoked.")
	b.post("/settings/developer/keys/revoke", url.Values{"csrf_token": {csrf}, "prefix": {p.KeyPrefix}}).wantStatus(t, http.StatusSeeOther)

	page = b.post("/settings/developer/keys/reset", url.Values{"csrf_token": {csrf}}).wantStatus(t, http.StatusOK)
	fresh := between(page.body, `data-testid="new-key">`, "<")
	if _, err := h.engine.Authenticate(h.ctx, nw.APIKey.Key, netip.Addr{}); err == nil {
		t.Fatal("reset left the first key active")
	}
	if _, err := h.engine.Authenticate(h.ctx, fresh, netip.Addr{}); err != nil {
		t.Fatalf("the key from reset does not work: %v", err)
	}

	b.post("/settings/developer/webhook", url.Values{"csrf_token": {csrf}, "url": {"https://hooks.example/in"}}).wantStatus(t, http.StatusSeeOther)
	if w, _ := h.engine.Workspace(h.ctx, ws); w.WebhookURL != "https://hooks.example/in" {
		t.Fatalf("webhook URL = %q", w.WebhookURL)
	}
	page = b.post("/settings/developer/webhook/rotate", url.Values{"csrf_token": {csrf}}).wantStatus(t, http.StatusOK)
	secret := between(page.body, `data-testid="new-secret">`, "<")
	if w, _ := h.engine.Workspace(h.ctx, ws); w.WebhookSecret != secret || secret == nw.Workspace.WebhookSecret {
		t.Fatalf("shown secret %q; stored %q", secret, w.WebhookSecret)
	}
	if strings.Contains(b.get("/settings/developer").body, secret) {
		t.Fatal("the secret is shown twice")
	}
}

// between returns the text after start up to end.
func between(s, start, end string) string {
	_, rest, ok := strings.Cut(s, start)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, end)
	return v
}
