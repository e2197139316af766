package portal_test

import (
	"crypto/sha256"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/portal"
	"github.com/payoutkit/payoutkit/staff"
)

func TestNoSessionRedirectsToSignIn(t *testing.T) {
	h := newHarness(t)
	b := h.browser()
	for _, path := range []string{"/", "/payments", "/withdrawals?status=failed&q=x", "/withdrawals/po-1", "/customers", "/settings/developer", "/settings/password"} {
		resp := b.get(path).wantStatus(t, http.StatusSeeOther)
		if want := "/login?next=" + url.QueryEscape(path); resp.Header.Get("Location") != want {
			t.Errorf("GET %s: Location %q; want %q", path, resp.Header.Get("Location"), want)
		}
	}
	// A POST without a session changes nothing and goes to the sign-in page.
	resp := b.post("/settings/developer/keys", url.Values{}).wantStatus(t, http.StatusSeeOther)
	if resp.Header.Get("Location") != "/login" {
		t.Errorf("POST without a session: Location %q", resp.Header.Get("Location"))
	}
	// An API key is not a session.
	nw := h.workspace("Acme")
	req, _ := http.NewRequestWithContext(h.ctx, http.MethodGet, h.srv.URL+"/", nil)
	req.Header.Set("Authorization", "Bearer "+nw.APIKey.Key)
	b.do(req).wantStatus(t, http.StatusSeeOther)
	// A made-up cookie is not one either.
	req, _ = http.NewRequestWithContext(h.ctx, http.MethodGet, h.srv.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: portal.SessionCookie, Value: "forged"})
	b.do(req).wantStatus(t, http.StatusSeeOther)
}

func TestSignInRedirectsOnlyToLocalPaths(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	for next, want := range map[string]string{
		"/withdrawals?status=failed": "/withdrawals?status=failed",
		"/customers":                 "/customers",
		"":                           "/",
		"//evil.example/":            "/",
		"https://evil.example/":      "/",
		"/\\evil.example":            "/",
		"\\\\evil.example":           "/",
		"javascript:alert(1)":        "/",
		"/%0d%0aSet-Cookie:x=y":      "/%0d%0aSet-Cookie:x=y", // escaped: a plain local path
		"/\r\nX: y":                  "/",
		"evil.example":               "/",
		"///evil.example":            "/",
	} {
		b := h.browser()
		resp := b.post("/login", url.Values{"email": {nw.StaffEmail}, "password": {nw.StaffPassword}, "next": {next}})
		resp.wantStatus(t, http.StatusSeeOther)
		if got := resp.Header.Get("Location"); got != want {
			t.Errorf("next=%q: Location %q; want %q", next, got, want)
		}
	}
	// The form carries a local next along, and drops another.
	b := h.browser()
	b.get("/login?next=%2Fcustomers").wantContains(t, `name="next" value="/customers"`)
	if page := b.get("/login?next=https%3A%2F%2Fevil.example"); strings.Contains(page.body, "evil.example") {
		t.Fatalf("the sign-in page carries an off-site next:\n%s", page.body)
	}
}

func TestSignInFailures(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	b := h.browser()
	wrong := b.post("/login", url.Values{"email": {nw.StaffEmail}, "password": {"not the password"}}).
		wantStatus(t, http.StatusUnauthorized).wantContains(t, "Invalid e-mail or password")
	unknown := b.post("/login", url.Values{"email": {"nobody@example.com"}, "password": {"not the password"}}).
		wantStatus(t, http.StatusUnauthorized).wantContains(t, "Invalid e-mail or password")
	if stripValues(wrong.body) != stripValues(unknown.body) {
		t.Fatalf("the pages for a wrong password and an unknown e-mail differ:\n%s\n---\n%s", wrong.body, unknown.body)
	}
	if b.sessionCookie() != nil {
		t.Fatal("a failed sign-in set a session cookie")
	}
	// Empty and oversized fields are a 400 with the message at the field.
	b.post("/login", url.Values{"email": {""}, "password": {"x"}}).
		wantStatus(t, http.StatusBadRequest).wantContains(t, "This field is required.")
	b.post("/login", url.Values{"email": {strings.Repeat("a", 300) + "@example.com"}, "password": {"x"}}).
		wantStatus(t, http.StatusBadRequest).wantContains(t, "at most 254 characters")
}

// stripValues removes the inputs' values (the echoed e-mail, the
// per-answer form token) from a page.
func stripValues(page string) string {
	return regexp.MustCompile(`value="[^"]*"`).ReplaceAllString(page, "")
}

func TestSignInThrottle(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	b := h.browser()
	for i := range 5 {
		b.post("/login", url.Values{"email": {nw.StaffEmail}, "password": {"wrong " + strconv.Itoa(i)}}).wantStatus(t, http.StatusUnauthorized)
	}
	// Locked, even with the right password, e-mail in any case.
	for _, email := range []string{nw.StaffEmail, strings.ToUpper(nw.StaffEmail)} {
		resp := b.post("/login", url.Values{"email": {email}, "password": {nw.StaffPassword}}).
			wantStatus(t, http.StatusTooManyRequests).wantContains(t, "Too many failed sign-ins")
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || secs < 14*60 || secs > 15*60 {
			t.Fatalf("Retry-After = %q; want about 900 seconds", resp.Header.Get("Retry-After"))
		}
	}
	if b.sessionCookie() != nil {
		t.Fatal("a locked sign-in set a session cookie")
	}
	// Another staff user signs in as usual.
	other := h.workspace("Other")
	h.browser().signIn(other.StaffEmail, other.StaffPassword)
}

func TestSessionCookie(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	b := h.browser()
	resp := b.post("/login", url.Values{"email": {nw.StaffEmail}, "password": {nw.StaffPassword}}).wantStatus(t, http.StatusSeeOther)
	var c *http.Cookie
	for _, rc := range resp.Cookies() {
		if rc.Name == portal.SessionCookie {
			c = rc
		}
	}
	if c == nil {
		t.Fatalf("no %s cookie in %q", portal.SessionCookie, resp.Header.Values("Set-Cookie"))
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure {
		t.Errorf("cookie = %+v; want HttpOnly, SameSite=Lax, Path=/, not Secure over plain HTTP", c)
	}
	if len(c.Value) < 22 { // 128 bits in base64
		t.Errorf("cookie value %q is too short", c.Value)
	}
	if c.MaxAge <= 0 || time.Duration(c.MaxAge)*time.Second > staff.DefaultSessionMaxAge {
		t.Errorf("cookie Max-Age = %d", c.MaxAge)
	}
	// The store knows the session by the value's SHA-256.
	s, err := h.store.StaffSession(h.ctx, sha256.Sum256([]byte(c.Value)))
	if err != nil || s.StaffEmail != nw.StaffEmail {
		t.Errorf("session by the cookie's hash = %+v, %v", s, err)
	}
}

func TestSessionCookieOverTLS(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	srv := httptest.NewTLSServer(portal.New(h.engine, h.team, portal.Options{Logger: discard}))
	t.Cleanup(srv.Close)
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.PostForm(srv.URL+"/login", url.Values{"email": {nw.StaffEmail}, "password": {nw.StaffPassword}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == portal.SessionCookie && !c.Secure {
			t.Fatalf("cookie over TLS = %+v; want Secure", c)
		}
	}
}

func TestSignOut(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)
	stolen := b.sessionCookie()

	b.post("/logout", url.Values{}).wantStatus(t, http.StatusForbidden) // no token: still signed in
	b.get("/").wantStatus(t, http.StatusOK)
	resp := b.post("/logout", url.Values{"csrf_token": {csrf}}).wantStatus(t, http.StatusSeeOther)
	if resp.Header.Get("Location") != "/login" {
		t.Fatalf("sign-out: Location %q", resp.Header.Get("Location"))
	}
	b.get("/").wantStatus(t, http.StatusSeeOther)
	// A copy of the cookie is dead too: the session ended in the store.
	req, _ := http.NewRequestWithContext(h.ctx, http.MethodGet, h.srv.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: stolen.Name, Value: stolen.Value})
	h.browser().do(req).wantStatus(t, http.StatusSeeOther)
}

func TestCSRF(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	mallory := h.workspace("Mallory")
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)
	other := h.browser()
	otherToken := other.signIn(mallory.StaffEmail, mallory.StaffPassword)
	// A second session of the same user has its own token too.
	sameUser := h.browser()
	sameUserToken := sameUser.signIn(nw.StaffEmail, nw.StaffPassword)

	keysBefore, _ := h.engine.APIKeys(h.ctx, nw.Workspace.ID)
	wsBefore, _ := h.engine.Workspace(h.ctx, nw.Workspace.ID)
	posts := map[string]url.Values{
		"/settings/developer/keys":           {},
		"/settings/developer/keys/revoke":    {"prefix": {nw.APIKey.Prefix}},
		"/settings/developer/keys/reset":     {},
		"/settings/developer/webhook":        {"url": {"https://example.com/hook"}},
		"/settings/developer/webhook/rotate": {},
		"/settings/password":                 {"current_password": {nw.StaffPassword}, "new_password": {"a brand new password"}, "confirm_password": {"a brand new password"}},
		"/logout":                            {},
	}
	for path, form := range posts {
		for name, token := range map[string]string{"none": "", "another workspace's": otherToken, "another session's": sameUserToken, "garbage": "x"} {
			f := url.Values{}
			for k, v := range form {
				f[k] = v
			}
			if token != "" {
				f.Set("csrf_token", token)
			}
			if resp := b.post(path, f); resp.StatusCode != http.StatusForbidden {
				t.Errorf("POST %s with %s token: status %d; want 403", path, name, resp.StatusCode)
			}
		}
	}
	keysAfter, _ := h.engine.APIKeys(h.ctx, nw.Workspace.ID)
	wsAfter, _ := h.engine.Workspace(h.ctx, nw.Workspace.ID)
	if len(keysAfter) != len(keysBefore) || !keysAfter[0].Active() || wsAfter != wsBefore {
		t.Fatalf("a forged POST changed something: keys %v → %v, workspace %+v → %+v", keysBefore, keysAfter, wsBefore, wsAfter)
	}
	b.get("/").wantStatus(t, http.StatusOK) // still signed in, same password
	h.browser().signIn(nw.StaffEmail, nw.StaffPassword)

	// A browser's cross-site POST is refused before the token is even read.
	req, _ := http.NewRequestWithContext(h.ctx, http.MethodPost, h.srv.URL+"/settings/developer/keys", strings.NewReader("csrf_token="+url.QueryEscape(sameUserToken)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	sameUser.do(req).wantStatus(t, http.StatusForbidden)
	// A browser's sign-in must come from the form it loaded.
	req, _ = http.NewRequestWithContext(h.ctx, http.MethodPost, h.srv.URL+"/login",
		strings.NewReader(url.Values{"email": {nw.StaffEmail}, "password": {nw.StaffPassword}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	h.browser().do(req).wantStatus(t, http.StatusForbidden)
}

func TestSecurityHeaders(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)
	anon := h.browser()
	answers := []*response{
		anon.get("/"), anon.get("/login"), anon.get("/no-such-page"), anon.get("/assets/portal.css"), anon.get("/assets/"),
		anon.post("/login", url.Values{"email": {"x@example.com"}, "password": {"y"}}),
		b.get("/"), b.get("/payments"), b.get("/withdrawals"), b.get("/withdrawals/nope"), b.get("/customers"),
		b.get("/settings/developer"), b.get("/settings/password"),
		b.post("/settings/developer/keys", url.Values{}),
		b.post("/settings/developer/keys", url.Values{"csrf_token": {csrf}}),
	}
	for _, r := range answers {
		where := r.Request.Method + " " + r.Request.URL.Path
		csp := r.Header.Get("Content-Security-Policy")
		if csp == "" || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy %q", where, csp)
		}
		for name, want := range map[string]string{
			"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "Cache-Control": "no-store",
		} {
			if got := r.Header.Get(name); got != want {
				t.Errorf("%s: %s = %q; want %q", where, name, got, want)
			}
		}
		// Nothing inline that the policy would block: no script or style
		// element, no style or on* attribute.
		if inline := regexp.MustCompile(`(?i)<script|<style|\sstyle=|\son[a-z]+=`).FindString(r.body); inline != "" {
			t.Errorf("%s: inline %q in the page", where, inline)
		}
	}
	if css := anon.get("/assets/portal.css"); css.StatusCode != http.StatusOK || !strings.HasPrefix(css.Header.Get("Content-Type"), "text/css") {
		t.Fatalf("stylesheet: %d %s", css.StatusCode, css.Header.Get("Content-Type"))
	}
	anon.get("/assets/").wantStatus(t, http.StatusNotFound) // no listing
}

func TestPages(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	ws := nw.Workspace.ID
	h.fund(ws, "ord-1", "100.00", "alice")
	h.payout(ws, "po-1", "10.00", "alice")
	h.payout(ws, "po-2", "20.00", "bob")
	h.payout(ws, "po-3", "5.50", "bob")
	if _, err := h.engine.CompletePayout(h.ctx, ws, "po-1", payoutkit.Completion{TxID: "0xabc",
		AssetAmount: decimal.NewNullDecimal(decimal.RequireFromString("9.990000")), NetworkFee: decimal.NewNullDecimal(decimal.New(1, -6))}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.engine.FailPayout(h.ctx, ws, "po-2", "address frozen"); err != nil {
		t.Fatal(err)
	}
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)

	bal, _ := h.engine.Balance(h.ctx, ws)
	b.get("/").wantStatus(t, http.StatusOK).wantContains(t,
		`<span data-testid="available">`+bal.Available.String()+`</span>`,
		`<span data-testid="in-progress">`+bal.InProgress.String()+`</span>`,
		"<title>Dashboard · payoutkit</title>", `data-payout-id="po-3"`)

	b.get("/payments").wantStatus(t, http.StatusOK).wantContains(t, `data-testid="order-row" data-order-id="ord-1"`, "100.00", "alice")

	all := b.get("/withdrawals").wantStatus(t, http.StatusOK)
	if got := rowIDs(all.body); strings.Join(got, ",") != "po-3,po-2,po-1" {
		t.Fatalf("withdrawals = %v; want newest first", got)
	}
	for status, want := range map[string]string{"submitted": "po-3", "completed": "po-1", "failed": "po-2"} {
		page := b.get("/withdrawals?status="+status).wantStatus(t, http.StatusOK)
		if got := rowIDs(page.body); strings.Join(got, ",") != want {
			t.Errorf("status=%s: %v; want %s", status, got, want)
		}
		page.wantContains(t, `<span class="badge badge-`+status+`" data-testid="status">`+status+`</span>`)
	}
	for q, want := range map[string]string{"bob": "po-3,po-2", "po-1": "po-1", "po-2": "po-2", "carol": ""} {
		if got := rowIDs(b.get("/withdrawals?q=" + q).body); strings.Join(got, ",") != want {
			t.Errorf("q=%s: %v; want %s", q, got, want)
		}
	}
	if got := rowIDs(b.get("/withdrawals?q=bob&status=failed").body); strings.Join(got, ",") != "po-2" {
		t.Errorf("q=bob&status=failed: %v", got)
	}
	b.get("/withdrawals?status=bogus").wantStatus(t, http.StatusBadRequest).wantContains(t, "Choose submitted, completed or failed.")
	b.get("/withdrawals?q=%01").wantStatus(t, http.StatusBadRequest).wantContains(t, "control characters")
	b.get("/withdrawals?cursor=zz").wantStatus(t, http.StatusBadRequest)

	b.get("/withdrawals/po-2").wantStatus(t, http.StatusOK).wantContains(t,
		"<title>Withdrawal po-2 · payoutkit</title>", "address frozen", tronAddress, "payout.submitted", "payout.failed", "20.00")
	b.get("/withdrawals/po-1").wantContains(t, "0xabc", `data-field="txid">0xabc`,
		`data-field="asset_amount">9.99<`, `data-field="network_fee">0.000001<`)
	b.get("/withdrawals/po-2").wantContains(t, `data-field="asset_amount">—<`, `data-field="network_fee">—<`)
	b.get("/withdrawals/nope").wantStatus(t, http.StatusNotFound)
	b.get("/withdrawals/..%2f..%2fetc").wantStatus(t, http.StatusNotFound)

	cust := b.get("/customers").wantStatus(t, http.StatusOK).body
	for _, want := range []string{
		`data-payer-id="alice">` + `[\s\S]*?data-testid="paid-in">100.00<[\s\S]*?data-testid="paid-out">10.00<[\s\S]*?data-testid="in-progress">0.00<`,
		`data-payer-id="bob">` + `[\s\S]*?data-testid="paid-in">0.00<[\s\S]*?data-testid="paid-out">0.00<[\s\S]*?data-testid="in-progress">5.50<`,
	} {
		if !regexp.MustCompile(want).MatchString(cust) {
			t.Errorf("customers page does not match %s:\n%s", want, cust)
		}
	}
}

var discard = slog.New(slog.DiscardHandler)

var payoutRow = regexp.MustCompile(`data-testid="payout-row" data-payout-id="([^"]+)"`)

func rowIDs(page string) []string {
	var ids []string
	for _, m := range payoutRow.FindAllStringSubmatch(page, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func TestWorkspacesAreIsolated(t *testing.T) {
	h := newHarness(t)
	acme, other := h.workspace("Acme"), h.workspace("Other")
	h.fund(other.Workspace.ID, "o-secret", "50.00", "their-customer")
	h.payout(other.Workspace.ID, "their-payout", "10.00", "their-customer")
	b := h.browser()
	b.signIn(acme.StaffEmail, acme.StaffPassword)
	b.get("/withdrawals/their-payout").wantStatus(t, http.StatusNotFound)
	if rows := rowIDs(b.get("/withdrawals?q=their-payout").body); len(rows) != 0 {
		t.Errorf("searching another workspace's payout finds %v", rows)
	}
	for _, path := range []string{"/", "/withdrawals", "/withdrawals?q=their-customer", "/payments", "/customers", "/settings/developer"} {
		page := b.get(path).wantStatus(t, http.StatusOK)
		for _, secret := range []string{"their-payout", "o-secret", other.APIKey.Prefix} {
			if strings.Contains(page.body, secret) {
				t.Errorf("%s shows %q of another workspace", path, secret)
			}
		}
	}
}

func TestPagination(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	ws := nw.Workspace.ID
	h.fund(ws, "ord", "1000.00", "")
	var want []string
	for i := range 120 {
		id := "po-" + strconv.Itoa(i)
		h.payout(ws, id, "1.00", "payer-"+strconv.Itoa(i%60))
		want = append([]string{id}, want...)
	}
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)
	var got []string
	next := "/withdrawals?status=submitted"
	pages := 0
	for next != "" {
		page := b.get(next).wantStatus(t, http.StatusOK)
		got = append(got, rowIDs(page.body)...)
		pages++
		m := regexp.MustCompile(`<a rel="next" href="([^"]+)"`).FindStringSubmatch(page.body)
		next = ""
		if m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
			if !strings.Contains(next, "status=submitted") {
				t.Fatalf("the next page drops the filter: %s", next)
			}
		}
	}
	if pages != 3 || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%d pages, rows %v; want 3 pages of newest first", pages, got)
	}
	customers := b.get("/customers").body
	if n := strings.Count(customers, `data-testid="customer-row"`); n != 50 || !strings.Contains(customers, `rel="next"`) {
		t.Fatalf("customers page 1 has %d rows", n)
	}
}

func TestUserTextIsEscaped(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	ws := nw.Workspace.ID
	evil := `<script>alert("x")</script>`
	if _, _, err := h.engine.CreateOrder(h.ctx, ws, payoutkit.CreateOrderRequest{
		OrderID: "ord-x", Amount: "50.00", PayerID: evil, Description: `"><img src=x onerror=alert(1)>` + evil,
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.engine.MarkOrderPaid(h.ctx, ws, "ord-x"); err != nil {
		t.Fatal(err)
	}
	h.payout(ws, "po-x", "10.00", evil)
	if _, err := h.engine.FailPayout(h.ctx, ws, "po-x", evil); err != nil {
		t.Fatal(err)
	}
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)
	for _, path := range []string{"/", "/payments", "/withdrawals", "/withdrawals/po-x", "/customers", "/withdrawals?q=" + url.QueryEscape(evil)} {
		page := b.get(path).wantStatus(t, http.StatusOK)
		if strings.Contains(page.body, "<script") || strings.Contains(page.body, "<img src=x") {
			t.Errorf("%s renders user text unescaped:\n%s", path, page.body)
		}
		if !strings.Contains(page.body, "&lt;script&gt;") {
			t.Errorf("%s does not show the escaped payer_id", path)
		}
	}
}
