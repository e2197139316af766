package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// EnvScreenshots names a directory (relative to the module's root, e.g.
// "docs") where the browser tests write the portal's screenshots that
// docs/PORTAL.md and the README show; unset, they write none.
const EnvScreenshots = "PAYOUTKIT_SCREENSHOTS"

// screenWidths are the window widths every portal page must fit: a small
// phone, a common phone, and a laptop.
var screenWidths = []int64{360, 390, 1280}

// portalFixture is a started server with a signed-in browser tab and money
// moved through the API, so that every portal page has rows to lay out.
type portalFixture struct {
	s   *server
	ctx context.Context
	key string
}

// longTxID is a txid as long as a real one, to check that it wraps.
var longTxID = "0x" + strings.Repeat("9f3ab7c1", 8)

func newPortalFixture(t *testing.T) *portalFixture {
	t.Helper()
	ctx := newBrowser(t)
	s := startServer(t, "-db", filepath.Join(t.TempDir(), "payoutkit.db"))
	first := decodeObject(t, s.stdout.String())
	key := first["api_key"].(string)
	for _, o := range []struct{ id, amount, payer, desc string }{
		{"ord-2026-0001", "2500.00", "cust-alice", "Top-up by card"},
		{"ord-2026-0002", "1200.00", "cust-bob", "Top-up by bank transfer"},
		{"ord-2026-0003", "80.00", "cust-carol", "Pending top-up"},
	} {
		mustAPI(t, s, key, "POST", "/v1/orders", fmt.Sprintf(`{"order_id":%q,"amount":%q,"payer_id":%q,"description":%q}`, o.id, o.amount, o.payer, o.desc))
		if o.id != "ord-2026-0003" {
			mustAPI(t, s, key, "POST", "/v1/sandbox/orders/pay", fmt.Sprintf(`{"order_id":%q}`, o.id))
		}
	}
	for _, p := range []struct{ id, amount, asset, network, address, payer string }{
		{"po-1001", "25.00", "USDT", "TRON", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "cust-alice"},
		{"po-1002", "120.00", "BTC", "BTC", "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", "cust-bob"},
		{"po-1003", "40.50", "USDT", "TRON", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "cust-bob"},
		{"po-1004", "310.00", "ETH", "ETH", "0x742d35Cc6634C0532925a3b844Bc454e4438f44e", "cust-alice"},
	} {
		mustAPI(t, s, key, "POST", "/v1/payouts", fmt.Sprintf(
			`{"payout_id":%q,"amount":%q,"asset":%q,"network":%q,"address":%q,"payer_id":%q}`,
			p.id, p.amount, p.asset, p.network, p.address, p.payer))
	}
	mustAPI(t, s, key, "POST", "/v1/sandbox/payouts/complete", `{"payout_id":"po-1001","txid":"`+longTxID+`"}`)
	mustAPI(t, s, key, "POST", "/v1/sandbox/payouts/complete", `{"payout_id":"po-1002","txid":"`+strings.Repeat("c0ffee42", 8)+`"}`)
	mustAPI(t, s, key, "POST", "/v1/sandbox/payouts/fail", `{"payout_id":"po-1003","reason":"address frozen by the network"}`)

	browse(t, ctx,
		chromedp.Navigate(s.url+"/login"),
		chromedp.WaitVisible(css(`form[action="/login"]`)),
	)
	for _, w := range screenWidths {
		checkFits(t, ctx, s.url+"/login", w)
	}
	browse(t, ctx,
		chromedp.Navigate(s.url+"/login"),
		chromedp.SendKeys(css(`input[name="email"]`), first["staff_email"].(string)),
		chromedp.SendKeys(css(`input[name="password"]`), first["staff_password"].(string)),
		chromedp.Click(css(`form[action="/login"] button[type="submit"]`)),
		chromedp.WaitVisible(css(`[data-testid="available"]`)),
	)
	return &portalFixture{s: s, ctx: ctx, key: key}
}

// fit is what checkFits measures: the document's width against the
// window's, and the elements that stick out past the window's edge.
type fit struct {
	ScrollWidth int      `json:"scrollWidth"`
	InnerWidth  int      `json:"innerWidth"`
	ClientWidth int      `json:"clientWidth"`
	Status      int      `json:"status"`
	Outside     []string `json:"outside"`
}

// measureFit measures the page in the tab; outside lists a few elements
// whose right edge passes the window's, to say what to fix.
const measureFit = `(() => {
	const d = document.documentElement, out = [];
	for (const el of document.body.querySelectorAll('*')) {
		if (el.getBoundingClientRect().right > window.innerWidth + 0.5) {
			let inScroller = false;
			for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
				const o = getComputedStyle(p).overflowX;
				if (o === 'auto' || o === 'scroll' || o === 'hidden') { inScroller = true; break; }
			}
			if (!inScroller && out.length < 8) out.push(el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).replace(/ /g, '.') : ''));
		}
	}
	const s = document.querySelector('[data-testid="error-page"]');
	return {scrollWidth: d.scrollWidth, innerWidth: window.innerWidth, clientWidth: d.clientWidth,
		status: s ? Number(s.dataset.status) : 200, outside: out};
})()`

// checkFits opens url in a window width pixels wide and fails the test if
// the page is wider than the window.
func checkFits(t *testing.T, ctx context.Context, url string, width int64) fit {
	t.Helper()
	browse(t, ctx, chromedp.EmulateViewport(width, 900), chromedp.Navigate(url), chromedp.WaitReady(css(`main`)))
	f := read(t, ctx, chromedp.Evaluate[fit](measureFit))
	if f.InnerWidth != int(width) || f.ScrollWidth > f.InnerWidth || f.ScrollWidth > f.ClientWidth || len(f.Outside) > 0 {
		t.Errorf("%s at %d px: document %d px wide, window %d px (client %d); sticking out: %v",
			url, width, f.ScrollWidth, f.InnerWidth, f.ClientWidth, f.Outside)
	}
	return f
}

// TestPortalFitsTheWindow visits every portal page at a phone's and a
// laptop's width and checks that none is wider than the window: the
// header wraps, tables scroll inside their cards.
func TestPortalFitsTheWindow(t *testing.T) {
	f := newPortalFixture(t)
	pages := map[string]int{
		"/":                                          200,
		"/payments":                                  200,
		"/withdrawals":                               200,
		"/withdrawals?status=completed":              200,
		"/withdrawals?q=cust-bob":                    200,
		"/withdrawals/po-1001":                       200,
		"/withdrawals/po-1003":                       200,
		"/withdrawals/po-1004":                       200,
		"/customers":                                 200,
		"/settings/developer":                        200,
		"/settings/password":                         200,
		"/settings/developer/keys/reset":             200,
		"/settings/security":                         200,
		"/settings/team":                             200,
		"/settings/addresses":                        200,
		"/settings/policy":                           200,
		"/withdrawals?approval=pending":              200,
		"/settings/security-log":                     200,
		"/withdrawals?from=2026-01-01&to=2026-12-31": 200,
		"/withdrawals/no-such-payout":                404,
		"/payments/no-such-order":                    404,
		"/withdrawals/" + strings.Repeat("x", 64):    404,
	}
	// A batch, with a payout_id and a payer_id as long as they may be.
	long := strings.Repeat("b", 128)
	mustAPI(t, f.s, f.key, "POST", "/v1/payouts/batch", `{"batch_id":"batch-fit","payouts":[`+
		`{"payout_id":"po-batch-1","amount":"10.00","asset":"USDT","network":"TRON","address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","payer_id":"`+long+`"},`+
		`{"payout_id":"`+long+`","amount":"99999.00","asset":"USDT","network":"TRON","address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","payer_id":"c"}]}`)
	pages["/withdrawals/batch"] = 200
	pages["/withdrawals/batch/batch-fit"] = 200
	pages["/withdrawals/po-batch-1"] = 200
	pages["/withdrawals/batch/no-such-batch"] = 404
	browse(t, f.ctx, chromedp.Navigate(f.s.url+"/settings/developer"), chromedp.WaitVisible(css(`tr[data-testid="key-row"]`)))
	prefix := read(t, f.ctx, chromedp.Evaluate[string](`document.querySelector('tr[data-testid="key-row"]').dataset.prefix`))
	pages["/settings/developer/keys/revoke?prefix="+prefix] = 200
	for _, w := range screenWidths {
		for path, status := range pages {
			got := checkFits(t, f.ctx, f.s.url+path, w)
			if got.Status != status {
				t.Errorf("%s: status %d; want %d", path, got.Status, status)
			}
			if w == 390 {
				// The header's navigation is there, wrapped, on every page.
				if n := read(t, f.ctx, chromedp.Evaluate[int](`document.querySelectorAll('nav.nav a').length`)); n != 5 {
					t.Errorf("%s at %d px: %d links in the navigation", path, w, n)
				}
			}
		}
	}
}

// TestPortalWithdrawalPageInBrowser reads a completed payout's page as
// staff see it: labelled amounts with their units, the whole txid.
func TestPortalWithdrawalPageInBrowser(t *testing.T) {
	f := newPortalFixture(t)
	browse(t, f.ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(f.s.url+"/withdrawals/po-1001"), chromedp.WaitVisible(css(`[data-field="txid"]`)))
	got := read(t, f.ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll('dl.fields dt')].map(dt =>
		[dt.textContent.trim(), dt.nextElementSibling.textContent.replace(/\s+/g, ' ').trim()]))`))
	info := mustAPI(t, f.s, f.key, "POST", "/v1/payouts/info", `{"payout_id":"po-1001"}`)
	want := map[string]string{
		"Payout ID":      "po-1001",
		"Status":         "completed",
		"Amount":         info["amount"].(string) + " USD",
		"Asset":          "USDT",
		"Network":        "TRON",
		"Address":        info["address"].(string),
		"Payer":          "cust-alice",
		"Amount sent":    info["asset_amount"].(string) + " USDT",
		"Network fee":    info["network_fee"].(string) + " USDT",
		"Transaction":    longTxID,
		"Failure reason": "—",
	}
	for label, v := range want {
		if got[label] != v {
			t.Errorf("%s: %q; want %q", label, got[label], v)
		}
	}
	if got["Amount"] != "25.00 USD" || got["Amount sent"] != "25 USDT" || got["Network fee"] != "1 USDT" {
		t.Errorf("amounts %q, %q, %q; want 25.00 USD, 25 USDT, 1 USDT", got["Amount"], got["Amount sent"], got["Network fee"])
	}
	for _, label := range []string{"Created", "Last updated"} {
		if !strings.HasSuffix(got[label], " UTC") || len(got[label]) != len("2006-01-02 15:04:05 UTC") {
			t.Errorf("%s: %q; want the portal's one time format", label, got[label])
		}
	}
	// The txid is whole, in a monospace face, and wraps inside its card.
	browse(t, f.ctx, chromedp.EmulateViewport(390, 900), chromedp.Navigate(f.s.url+"/withdrawals/po-1001"), chromedp.WaitVisible(css(`[data-field="txid"]`)))
	tx := read(t, f.ctx, chromedp.Evaluate[map[string]any](`(() => { const c = document.querySelector('[data-field="txid"]'), r = c.getBoundingClientRect();
		return {text: c.textContent, font: getComputedStyle(c).fontFamily, right: r.right}; })()`))
	if tx["text"] != longTxID || !strings.Contains(fmt.Sprint(tx["font"]), "monospace") || tx["right"].(float64) > 390 {
		t.Errorf("txid at 390 px: %v", tx)
	}
}

// TestPortalConfirmationInBrowser clicks through revoking a key and
// resetting every key: each asks on its own page first, Cancel changes
// nothing, and confirming does what the endpoint does.
func TestPortalConfirmationInBrowser(t *testing.T) {
	f := newPortalFixture(t)
	ctx := f.ctx
	browse(t, ctx, chromedp.EmulateViewport(390, 900), chromedp.Navigate(f.s.url+"/settings/developer"),
		chromedp.Click(css(`form[action="/settings/developer/keys"] button`)), chromedp.WaitVisible(css(`[data-testid="new-key"]`)))
	second := textOf(t, ctx, `[data-testid="new-key"]`)
	prefix := strings.Split(second, "_")[1]
	revoke := `tr[data-prefix="` + prefix + `"] a[href^="/settings/developer/keys/revoke"]`

	// Revoke, then Cancel: the key still works.
	browse(t, ctx, chromedp.Click(css(revoke)), chromedp.WaitVisible(css(`[data-testid="confirm"]`)))
	if got := textOf(t, ctx, `[data-testid="confirm-prefix"]`); got != "sk_"+prefix+"_…" {
		t.Fatalf("the confirmation names %q; want sk_%s_…", got, prefix)
	}
	browse(t, ctx, chromedp.Click(css(`[data-testid="confirm-cancel"]`)), chromedp.WaitVisible(css(revoke)))
	if c, _ := apiData(t, f.s, second, "GET", "/v1/balance", ""); c != 0 {
		t.Fatalf("Cancel revoked the key: code %d", c)
	}

	// Revoke, then confirm: the key stops working, the other does not.
	browse(t, ctx, chromedp.Click(css(revoke)), chromedp.WaitVisible(css(`[data-testid="confirm-submit"]`)),
		chromedp.Click(css(`[data-testid="confirm-submit"]`)), chromedp.WaitVisible(css(`p.notice`)))
	if got := textOf(t, ctx, `p.notice`); !strings.HasPrefix(got, "The key was revoked.") {
		t.Fatalf("after confirming: %q", got)
	}
	if got := textOf(t, ctx, `tr[data-prefix="`+prefix+`"] [data-testid="key-status"]`); got != "revoked" {
		t.Errorf("the revoked key's status cell says %q", got)
	}
	if c, _ := apiData(t, f.s, second, "GET", "/v1/balance", ""); c != 40100 {
		t.Fatalf("the confirmed revoke: code %d; want 40100", c)
	}
	if c, _ := apiData(t, f.s, f.key, "GET", "/v1/balance", ""); c != 0 {
		t.Fatalf("revoking one key revoked another: code %d", c)
	}

	// Reset, then Cancel: nothing changes; then confirm: one new key.
	browse(t, ctx, chromedp.Click(css(`[data-testid="reset-keys"]`)), chromedp.WaitVisible(css(`[data-testid="confirm"]`)))
	if got := read(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="confirm-prefix"]')].map(e => e.textContent)`)); len(got) != 1 || got[0] != "sk_"+strings.Split(f.key, "_")[1]+"_…" {
		t.Errorf("the reset page lists %v; want the one active key", got)
	}
	browse(t, ctx, chromedp.Click(css(`[data-testid="confirm-cancel"]`)), chromedp.WaitVisible(css(`[data-testid="reset-keys"]`)))
	if c, _ := apiData(t, f.s, f.key, "GET", "/v1/balance", ""); c != 0 {
		t.Fatalf("Cancel reset the keys: code %d", c)
	}
	browse(t, ctx, chromedp.Click(css(`[data-testid="reset-keys"]`)), chromedp.WaitVisible(css(`[data-testid="confirm-submit"]`)),
		chromedp.Click(css(`[data-testid="confirm-submit"]`)), chromedp.WaitVisible(css(`[data-testid="new-key"]`)))
	fresh := textOf(t, ctx, `[data-testid="new-key"]`)
	if c, _ := apiData(t, f.s, f.key, "GET", "/v1/balance", ""); c != 40100 {
		t.Fatalf("the old key after the confirmed reset: code %d; want 40100", c)
	}
	if c, _ := apiData(t, f.s, fresh, "GET", "/v1/balance", ""); c != 0 {
		t.Fatalf("the key from the confirmed reset: code %d", c)
	}
}

// TestPortalScreenshots writes the portal's screenshots (docs/PORTAL.md) at a
// phone's and a laptop's width when $PAYOUTKIT_SCREENSHOTS names a
// directory: PAYOUTKIT_SCREENSHOTS=docs go test -run TestPortalScreenshots ./examples/server
func TestPortalScreenshots(t *testing.T) {
	dir := os.Getenv(EnvScreenshots)
	if dir == "" {
		t.Skip("set " + EnvScreenshots + "=docs to write the portal's screenshots")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", "..", dir) // the module's root
	}
	f := newPortalFixture(t)
	shots := []struct {
		name, path, wait string
		full             bool
	}{
		{"portal-dashboard", "/", `[data-testid="available"]`, false},
		{"portal-withdrawals", "/withdrawals", `tr[data-testid="payout-row"]`, false},
		{"portal-withdrawal", "/withdrawals/po-1001", `[data-field="txid"]`, true},
	}
	for _, s := range shots {
		for _, w := range []int64{390, 1280} {
			if s.name == "portal-withdrawals" && w != 1280 {
				continue
			}
			name := fmt.Sprintf("%s-%d.png", s.name, w)
			if s.name == "portal-withdrawals" {
				name = s.name + ".png"
			}
			browse(t, f.ctx, chromedp.EmulateViewport(w, 800), chromedp.Navigate(f.s.url+s.path), chromedp.WaitVisible(css(s.wait)))
			var png []byte
			if s.full || w < 1280 {
				png = read(t, f.ctx, chromedp.FullScreenshot(100))
			} else {
				png = read(t, f.ctx, chromedp.CaptureScreenshot())
			}
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s (%d bytes)", path, len(png))
		}
	}
}
