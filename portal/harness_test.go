package portal_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/portal"
	"github.com/payoutkit/payoutkit/staff"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// stores is a store of both the engine's state and the staff's identity,
// as every store of this repository is.
type stores interface {
	payoutkit.Store
	staff.Store
}

// harness is a portal on a real listener over an engine, a team and their
// store.
type harness struct {
	t      *testing.T
	ctx    context.Context
	store  stores
	engine *payoutkit.Engine
	team   *staff.Team
	srv    *httptest.Server
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessOn(t, memstore.New())
}

// newHarnessOn serves a portal over store, which it does not close.
func newHarnessOn(t *testing.T, store stores) *harness {
	return newHarnessWith(t, store, portal.Options{})
}

// newHarnessWith is newHarnessOn with the portal's options (its Logger
// discards).
func newHarnessWith(t *testing.T, store stores, opts portal.Options) *harness {
	return serveHarness(t, store, nil, opts)
}

// serveHarness serves a portal over an engine and a team on store, both on
// the clock now (nil: time.Now).
func serveHarness(t *testing.T, store stores, now func() time.Time, opts portal.Options) *harness {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	engine, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Logger: log, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	team, err := staff.New(store, &staff.Config{PasswordCost: bcrypt.MinCost, Logger: log, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = log
	srv := httptest.NewServer(portal.New(engine, team, opts))
	t.Cleanup(srv.Close)
	return &harness{t: t, ctx: t.Context(), store: store, engine: engine, team: team, srv: srv}
}

// workspace creates a workspace and returns it with its secrets.
func (h *harness) workspace(name string) payoutkit.NewWorkspace {
	h.t.Helper()
	nw, err := h.engine.CreateWorkspace(h.ctx, payoutkit.CreateWorkspaceRequest{Name: name})
	if err != nil {
		h.t.Fatal(err)
	}
	return nw
}

// fund credits amount to the workspace through a paid order of payer.
func (h *harness) fund(ws, orderID, amount, payer string) {
	h.t.Helper()
	if _, _, err := h.engine.CreateOrder(h.ctx, ws, payoutkit.CreateOrderRequest{OrderID: orderID, Amount: amount, PayerID: payer}); err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.engine.MarkOrderPaid(h.ctx, ws, orderID); err != nil {
		h.t.Fatal(err)
	}
}

const tronAddress = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"

func (h *harness) payout(ws, id, amount, payer string) payoutkit.Payout {
	h.t.Helper()
	p, _, err := h.engine.CreatePayout(h.ctx, ws, payoutkit.CreatePayoutRequest{
		PayoutID: id, Amount: amount, Asset: "USDT", Network: "TRON", Address: tronAddress, PayerID: payer,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// browser is an HTTP client that keeps cookies and does not follow
// redirects, so that tests see every 303.
type browser struct {
	h      *harness
	client *http.Client
	jar    http.CookieJar
}

func (h *harness) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{h: h, jar: jar, client: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// response is a read answer.
type response struct {
	*http.Response
	body string
}

func (b *browser) do(req *http.Request) *response {
	b.h.t.Helper()
	resp, err := b.client.Do(req)
	if err != nil {
		b.h.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.h.t.Fatal(err)
	}
	return &response{Response: resp, body: string(body)}
}

func (b *browser) get(path string) *response {
	b.h.t.Helper()
	req, err := http.NewRequestWithContext(b.h.ctx, http.MethodGet, b.h.srv.URL+path, nil)
	if err != nil {
		b.h.t.Fatal(err)
	}
	return b.do(req)
}

func (b *browser) post(path string, form url.Values) *response {
	b.h.t.Helper()
	req, err := http.NewRequestWithContext(b.h.ctx, http.MethodPost, b.h.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// signIn signs in and returns the session's CSRF token, read off a page.
func (b *browser) signIn(email, password string) string {
	b.h.t.Helper()
	resp := b.post("/login", url.Values{"email": {email}, "password": {password}})
	if resp.StatusCode != http.StatusSeeOther {
		b.h.t.Fatalf("sign-in: status %d; want 303\n%s", resp.StatusCode, resp.body)
	}
	return b.csrf()
}

// csrf reads the session's CSRF token off the dashboard's sign-out form.
func (b *browser) csrf() string {
	b.h.t.Helper()
	page := b.get("/")
	if page.StatusCode != http.StatusOK {
		b.h.t.Fatalf("dashboard: status %d", page.StatusCode)
	}
	token := csrfOf(page.body)
	if token == "" {
		b.h.t.Fatalf("no csrf_token on the dashboard:\n%s", page.body)
	}
	return token
}

var csrfInput = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

func csrfOf(body string) string {
	m := csrfInput.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

func (b *browser) sessionCookie() *http.Cookie {
	u, _ := url.Parse(b.h.srv.URL)
	for _, c := range b.jar.Cookies(u) {
		if c.Name == portal.SessionCookie {
			return c
		}
	}
	return nil
}

// wantStatus fails unless the answer has the status.
func (r *response) wantStatus(t *testing.T, status int) *response {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("%s %s: status %d; want %d\n%s", r.Request.Method, r.Request.URL.Path, r.StatusCode, status, r.body)
	}
	return r
}

func (r *response) wantContains(t *testing.T, parts ...string) *response {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(r.body, p) {
			t.Fatalf("%s %s: the page lacks %q:\n%s", r.Request.Method, r.Request.URL.Path, p, r.body)
		}
	}
	return r
}
