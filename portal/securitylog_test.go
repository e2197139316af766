package portal_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/staff"
)

// logRow is one tr[data-testid=log-row] of the security log page.
type logRow struct {
	action string
	// cells are the row's cells as text, tags left out.
	cells []string
}

var (
	logRowRE = regexp.MustCompile(`(?s)<tr data-testid="log-row" data-action="([^"]*)">(.*?)</tr>`)
	cellRE   = regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`)
	tagRE    = regexp.MustCompile(`<[^>]*>`)
)

func logRows(body string) []logRow {
	var rows []logRow
	for _, m := range logRowRE.FindAllStringSubmatch(body, -1) {
		r := logRow{action: m[1]}
		for _, c := range cellRE.FindAllStringSubmatch(m[2], -1) {
			r.cells = append(r.cells, html.UnescapeString(strings.TrimSpace(tagRE.ReplaceAllString(c[1], ""))))
		}
		rows = append(rows, r)
	}
	return rows
}

// TestSecurityLogPage makes each key and webhook change from the portal and
// from the engine's other callers (the CLI's actor), and reads them back on
// /settings/security-log: newest first, with the actor and the client
// address, and never the key or the secret shown once.
func TestSecurityLogPage(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	ws := nw.Workspace.ID
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)

	created := b.post("/settings/developer/keys", url.Values{"csrf_token": {csrf}, "scope": {"", "payouts:write"}, "allow_ips": {"10.0.0.0/8"}}).wantStatus(t, http.StatusOK)
	newKey := between(created.body, `data-testid="new-key">`, "<")
	prefix := strings.Split(newKey, "_")[1]
	b.post("/settings/developer/keys/revoke", url.Values{"csrf_token": {csrf}, "prefix": {prefix}}).wantStatus(t, http.StatusSeeOther)
	// A prefix that revokes nothing changes nothing and logs nothing.
	b.post("/settings/developer/keys/revoke", url.Values{"csrf_token": {csrf}, "prefix": {prefix}}).wantStatus(t, http.StatusSeeOther)
	reset := b.post("/settings/developer/keys/reset", url.Values{"csrf_token": {csrf}}).wantStatus(t, http.StatusOK)
	resetKey := between(reset.body, `data-testid="new-key">`, "<")
	b.post("/settings/developer/webhook", url.Values{"csrf_token": {csrf}, "url": {"https://hook:pa55word@hooks.example/in"}}).wantStatus(t, http.StatusSeeOther)
	// A refused URL changes nothing and logs nothing.
	b.post("/settings/developer/webhook", url.Values{"csrf_token": {csrf}, "url": {"ftp://hooks.example/"}}).wantStatus(t, http.StatusBadRequest)
	rotated := b.post("/settings/developer/webhook/rotate", url.Values{"csrf_token": {csrf}}).wantStatus(t, http.StatusOK)
	secret := between(rotated.body, `data-testid="new-secret">`, "<")
	if newKey == "" || resetKey == "" || secret == "" {
		t.Fatalf("key %q, reset key %q, secret %q: a page did not show them", newKey, resetKey, secret)
	}
	// The same calls from the CLI (or any program over the engine).
	cliKey, err := h.engine.CreateAPIKey(h.ctx, ws, payoutkit.CreateAPIKeyRequest{}, payoutkit.ActorCLI)
	if err != nil {
		t.Fatal(err)
	}
	cliWS, err := h.engine.RotateWebhookSecret(h.ctx, ws, payoutkit.ActorCLI)
	if err != nil {
		t.Fatal(err)
	}

	page := b.get("/settings/security-log").wantStatus(t, http.StatusOK)
	page.wantContains(t, `href="/settings/security-log" aria-current="page"`)
	for _, s := range []string{newKey, resetKey, secret, cliKey.Key, cliWS.WebhookSecret, "pa55word", nw.StaffPassword, nw.APIKey.Key} {
		if strings.Contains(page.body, s) {
			t.Fatalf("the security log shows the secret %q:\n%s", s, page.body)
		}
	}
	member, cli := nw.StaffEmail, "cli"
	want := []struct {
		action, actor, addr string
		details             []string
	}{
		{payoutkit.ActionWebhookSecretRotated, cli, "—", nil},
		{payoutkit.ActionKeyCreated, cli, "—", []string{cliKey.Prefix}},
		{payoutkit.ActionWebhookSecretRotated, member, "127.0.0.1", nil},
		{payoutkit.ActionWebhookURLSet, member, "127.0.0.1", []string{"https://hook:xxxxx@hooks.example/in"}},
		{payoutkit.ActionKeysReset, member, "127.0.0.1", []string{strings.Split(resetKey, "_")[1], "revoked: 1"}},
		{payoutkit.ActionKeyRevoked, member, "127.0.0.1", []string{prefix}},
		{payoutkit.ActionKeyCreated, member, "127.0.0.1", []string{prefix, "payouts:write", "10.0.0.0/8"}},
		{staff.ActionSignInSucceeded, member, "127.0.0.1", nil},
	}
	rows := logRows(page.body)
	if len(rows) != len(want) {
		t.Fatalf("%d log rows; want %d:\n%s", len(rows), len(want), page.body)
	}
	for i, w := range want {
		r := rows[i]
		if r.action != w.action || len(r.cells) != 5 || r.cells[1] != w.action || r.cells[2] != w.actor || r.cells[3] != w.addr ||
			!strings.HasSuffix(r.cells[0], " UTC") {
			t.Fatalf("row %d: %s %q; want %s by %s from %s", i, r.action, r.cells, w.action, w.actor, w.addr)
		}
		for _, d := range w.details {
			if !strings.Contains(r.cells[4], d) {
				t.Fatalf("row %d (%s): details %q lack %q", i, r.action, r.cells[4], d)
			}
		}
	}
}

// TestSecurityLogPages pages through a long log: 50 rows a page, newest
// first, every entry once, and a bad cursor is a 400.
func TestSecurityLogPages(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	for i := range 60 {
		if _, err := h.engine.SetWebhookURL(h.ctx, nw.Workspace.ID, "https://hooks.example/"+strconv.Itoa(i), payoutkit.ActorCLI); err != nil {
			t.Fatal(err)
		}
	}
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)
	first := b.get("/settings/security-log").wantStatus(t, http.StatusOK)
	next := html.UnescapeString(between(first.body, `<a rel="next" href="`, `"`))
	if next == "" {
		t.Fatal("no next page")
	}
	second := b.get(next).wantStatus(t, http.StatusOK)
	if strings.Contains(second.body, `rel="next"`) {
		t.Fatal("a next page after the last")
	}
	// The 60 changes, then the sign-in that reads them, newest first.
	var actions, urls []string
	for _, body := range []string{first.body, second.body} {
		for _, r := range logRows(body) {
			actions, urls = append(actions, r.action), append(urls, r.cells[4])
		}
	}
	if len(urls) != 61 || actions[0] != "signin.succeeded" || !strings.Contains(urls[1], "/59") || !strings.Contains(urls[50], "/10") || !strings.Contains(urls[60], "/0") {
		t.Fatalf("%d rows over two pages, %s %q first and %q last; want the sign-in, then 60 URLs newest first", len(urls), actions[0], urls[0], urls[len(urls)-1])
	}
	b.get("/settings/security-log?cursor=nope").wantStatus(t, http.StatusBadRequest)
}
