package portal_test

import (
	"html"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit"
)

// mainNav marks a page that has the layout's navigation.
const mainNav = `<nav class="nav" aria-label="Main">`

// TestConfirmationPages holds that revoking a key or resetting every key
// takes a second, explicit step: the GET pages only say what will happen,
// and their forms post to the existing endpoints.
func TestConfirmationPages(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	ws, prefix := nw.Workspace.ID, nw.APIKey.Prefix
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)

	dev := b.get("/settings/developer").wantStatus(t, http.StatusOK)
	for _, oneClick := range []string{`action="/settings/developer/keys/revoke"`, `action="/settings/developer/keys/reset"`} {
		if strings.Contains(dev.body, oneClick) {
			t.Errorf("the Developer page posts to %s in one click", oneClick)
		}
	}
	dev.wantContains(t, `href="/settings/developer/keys/revoke?prefix=`+prefix+`"`, `href="/settings/developer/keys/reset"`)

	b.get("/settings/developer/keys/revoke?prefix="+prefix).wantStatus(t, http.StatusOK).wantContains(t,
		mainNav, `data-testid="confirm-prefix">sk_`+prefix+`_…<`,
		`<form method="post" action="/settings/developer/keys/revoke">`,
		`name="csrf_token" value="`+csrf+`"`, `name="prefix" value="`+prefix+`"`,
		`data-testid="confirm-cancel"`)
	b.get("/settings/developer/keys/revoke?prefix=sk_"+prefix).wantStatus(t, http.StatusOK)
	b.get("/settings/developer/keys/reset").wantStatus(t, http.StatusOK).wantContains(t,
		mainNav, `data-testid="confirm-prefix">sk_`+prefix+`_…<`,
		`<form method="post" action="/settings/developer/keys/reset">`, `name="csrf_token" value="`+csrf+`"`,
		"shown once")
	if _, err := h.engine.Authenticate(h.ctx, "Bearer "+nw.APIKey.Key, netip.Addr{}); err != nil {
		t.Fatalf("a confirmation page revoked the key: %v", err)
	}

	for _, bad := range []string{"", "nope", "ABCDEFGH", "%00"} {
		b.get("/settings/developer/keys/revoke?prefix="+bad).wantStatus(t, http.StatusNotFound).wantContains(t, mainNav, "No active key has that prefix")
	}
	other := h.workspace("Other")
	b.get("/settings/developer/keys/revoke?prefix="+other.APIKey.Prefix).wantStatus(t, http.StatusNotFound)

	// Confirmed: the page's form posts what the endpoint needs.
	b.post("/settings/developer/keys/revoke", url.Values{"csrf_token": {csrf}, "prefix": {prefix}}).wantStatus(t, http.StatusSeeOther)
	b.get("/settings/developer/keys/revoke?prefix="+prefix).wantStatus(t, http.StatusNotFound) // revoked: nothing to confirm
	keys, err := h.engine.APIKeys(h.ctx, ws)
	if err != nil || len(keys) != 1 || keys[0].Active() {
		t.Fatalf("keys after the confirmed revoke: %v, %v", keys, err)
	}
	b.get("/settings/developer/keys/reset").wantStatus(t, http.StatusOK).wantContains(t, "The workspace has no active key now.")

	// Without a session, the pages lead to the sign-in form, as every page.
	for _, path := range []string{"/settings/developer/keys/reset", "/settings/developer/keys/revoke?prefix=" + prefix} {
		resp := h.browser().get(path).wantStatus(t, http.StatusSeeOther)
		if want := "/login?next=" + url.QueryEscape(path); resp.Header.Get("Location") != want {
			t.Errorf("GET %s without a session: Location %q; want %q", path, resp.Header.Get("Location"), want)
		}
	}
}

// TestNewPagesHeaders holds the confirmation and error pages to the headers
// and the no-inline rule of every portal page.
func TestNewPagesHeaders(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)
	inline := regexp.MustCompile(`(?i)<script|<style|\sstyle=|\son[a-z]+=`)
	for _, path := range []string{"/settings/developer/keys/revoke?prefix=" + nw.APIKey.Prefix, "/settings/developer/keys/reset", "/withdrawals/nope", "/payments/nope"} {
		r := b.get(path)
		csp := r.Header.Get("Content-Security-Policy")
		if csp == "" || strings.Contains(csp, "unsafe-inline") || r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", path, r.Header)
		}
		if m := inline.FindString(r.body); m != "" {
			t.Errorf("%s: inline %q in the page", path, m)
		}
	}
}

// TestKeysTableColumns holds that each column of the keys table holds what
// its header says: a status badge, the creation, last use and revocation
// times (a dash while active).
func TestKeysTableColumns(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)
	created := b.post("/settings/developer/keys", url.Values{"csrf_token": {csrf}}).wantStatus(t, http.StatusOK)
	fresh := between(created.body, `data-testid="new-key">`, "<")
	if _, err := h.engine.Authenticate(h.ctx, "Bearer "+fresh, netip.Addr{}); err != nil {
		t.Fatal(err)
	}
	b.post("/settings/developer/keys/revoke", url.Values{"csrf_token": {csrf}, "prefix": {nw.APIKey.Prefix}}).wantStatus(t, http.StatusSeeOther)

	page := b.get("/settings/developer").wantStatus(t, http.StatusOK)
	page.wantContains(t, `<th scope="col">Status</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Revoked</th>`)
	rows := keyCells(page.body)
	old, now := rows[nw.APIKey.Prefix], rows[strings.Split(fresh, "_")[1]]
	if old["key-status"] != "revoked" || !isTime(old["key-revoked"]) || !isTime(old["key-created"]) || old["key-last-used"] != "never" {
		t.Errorf("the revoked key's row: %v", old)
	}
	if now["key-status"] != "active" || now["key-revoked"] != "—" || !isTime(now["key-created"]) || !isTime(now["key-last-used"]) {
		t.Errorf("the active key's row: %v", now)
	}
}

var keyRow = regexp.MustCompile(`(?s)<tr data-testid="key-row" data-prefix="([^"]+)">(.*?)</tr>`)
var testidCell = regexp.MustCompile(`(?s)data-testid="(key-[a-z-]+)">(.*?)</(?:td|span)>`)
var tags = regexp.MustCompile(`<[^>]+>`)

// keyCells reads the keys table: prefix → data-testid → the cell's text.
func keyCells(body string) map[string]map[string]string {
	out := make(map[string]map[string]string)
	for _, m := range keyRow.FindAllStringSubmatch(body, -1) {
		cells := make(map[string]string)
		for _, c := range testidCell.FindAllStringSubmatch(m[2], -1) {
			cells[c[1]] = html.UnescapeString(strings.TrimSpace(tags.ReplaceAllString(c[2], "")))
		}
		out[m[1]] = cells
	}
	return out
}

var portalTime = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$`)

func isTime(s string) bool { return portalTime.MatchString(s) }

// TestOneTimeFormat holds that every page prints times one way, with the
// RFC 3339 form only in time elements' datetime attributes.
func TestOneTimeFormat(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	ws := nw.Workspace.ID
	h.fund(ws, "ord-1", "100.00", "alice")
	h.payout(ws, "po-1", "10.00", "alice")
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)
	timeElement := regexp.MustCompile(`<time datetime="(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)">([^<]*)</time>`)
	rfc3339 := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d`)
	for _, path := range []string{"/", "/payments", "/withdrawals", "/withdrawals/po-1", "/customers", "/settings/developer"} {
		body := b.get(path).wantStatus(t, http.StatusOK).body
		found := timeElement.FindAllStringSubmatch(body, -1)
		if len(found) == 0 {
			t.Errorf("%s prints no time", path)
		}
		for _, m := range found {
			if !isTime(m[2]) || strings.Replace(strings.Replace(m[1], "T", " ", 1), "Z", " UTC", 1) != m[2] {
				t.Errorf("%s prints %q for %s", path, m[2], m[1])
			}
		}
		if left := rfc3339.FindString(timeElement.ReplaceAllString(body, "")); left != "" {
			t.Errorf("%s prints a time as %q outside the one format", path, left)
		}
	}
}

// TestWithdrawalPage holds that the payout's page names its fields for
// people and gives every amount its unit.
func TestWithdrawalPage(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	ws := nw.Workspace.ID
	h.fund(ws, "ord-1", "100.00", "alice")
	h.payout(ws, "po-1", "25.00", "alice")
	txid := "0x" + strings.Repeat("ab", 40)
	if _, err := h.engine.CompletePayout(h.ctx, ws, "po-1", payoutkit.Completion{TxID: txid,
		AssetAmount: decimal.NewNullDecimal(decimal.RequireFromString("25")), NetworkFee: decimal.NewNullDecimal(decimal.RequireFromString("1"))}); err != nil {
		t.Fatal(err)
	}
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)
	page := b.get("/withdrawals/po-1").wantStatus(t, http.StatusOK)
	page.wantContains(t,
		`<dt>Amount</dt><dd class="amount-line"><span class="figure" data-field="amount">25.00</span> <span class="unit" data-field="currency">USD</span></dd>`,
		`<dt>Amount sent</dt>`, `data-field="asset_amount">25</span> <span class="unit">USDT</span>`,
		`<dt>Network fee</dt>`, `data-field="network_fee">1</span> <span class="unit">USDT</span>`,
		`<dt>Transaction</dt><dd><code class="wrap" data-field="txid">`+txid+`</code>`,
		`<dt>Address</dt>`, `<dt>Created</dt>`, `<dt>Last updated</dt>`)
	for _, raw := range []string{"<dt>payout_id", "<dt>asset_amount", "<dt>network_fee", "<dt>created_at", "<dt>txid"} {
		if strings.Contains(page.body, raw) {
			t.Errorf("the withdrawal page labels a field %q", raw)
		}
	}
}

// TestErrorPagesInLayout holds that the portal's 404 and 403 pages keep the
// navigation for a signed-in user, and send anyone else to sign in.
func TestErrorPagesInLayout(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)
	b.get("/withdrawals/nope").wantStatus(t, http.StatusNotFound).wantContains(t, mainNav,
		`data-testid="error-page" data-status="404"`, "Page not found", "No withdrawal has the payout ID “nope”", `action="/logout"`)
	b.get("/payments/ord-unknown").wantStatus(t, http.StatusNotFound).wantContains(t, mainNav, "Page not found")
	b.get("/no-such-page").wantStatus(t, http.StatusNotFound).wantContains(t, mainNav)
	b.post("/settings/developer/keys", url.Values{"csrf_token": {"forged"}}).wantStatus(t, http.StatusForbidden).wantContains(t,
		mainNav, `data-testid="error-page" data-status="403"`, "Not allowed")

	anon := h.browser().get("/no-such-page").wantStatus(t, http.StatusNotFound).wantContains(t, `data-status="404"`, `href="/login"`)
	if strings.Contains(anon.body, mainNav) || strings.Contains(anon.body, "csrf_token") {
		t.Error("the 404 page without a session has the navigation")
	}
}

// TestWorkspaceIDOnSettings holds that Settings shows the workspace ID that
// every CLI command needs.
func TestWorkspaceIDOnSettings(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)
	b.get("/settings/developer").wantStatus(t, http.StatusOK).wantContains(t, `data-testid="workspace-id">`+nw.Workspace.ID+`<`)
}
