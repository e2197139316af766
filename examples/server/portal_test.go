package main

import (
	"database/sql"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/payoutkit/payoutkit/portal"
)

// staffClient is a cookie-keeping HTTP client that does not follow redirects.
type staffClient struct {
	t      *testing.T
	client *http.Client
}

func newStaffClient(t *testing.T) *staffClient {
	jar, _ := cookiejar.New(nil)
	return &staffClient{t: t, client: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

func (c *staffClient) do(req *http.Request) (int, string) {
	c.t.Helper()
	resp, err := c.client.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (c *staffClient) get(u string) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return c.do(req)
}

func (c *staffClient) post(u string, form url.Values) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

// signIn signs in on the server at base and returns the session cookie and
// the session's CSRF token.
func (c *staffClient) signIn(base, email, password string) (*http.Cookie, string) {
	c.t.Helper()
	if st, body := c.post(base+"/login", url.Values{"email": {email}, "password": {password}}); st != http.StatusSeeOther {
		c.t.Fatalf("sign-in: %d\n%s", st, body)
	}
	u, _ := url.Parse(base)
	var session *http.Cookie
	for _, ck := range c.client.Jar.Cookies(u) {
		if ck.Name == portal.SessionCookie {
			session = ck
		}
	}
	st, body := c.get(base + "/")
	m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(body)
	if st != http.StatusOK || session == nil || m == nil {
		c.t.Fatalf("after sign-in: %d, cookie %v\n%s", st, session, body)
	}
	return session, m[1]
}

// withCookie requests u with only the given session cookie.
func withCookie(t *testing.T, method, u string, c *http.Cookie) int {
	t.Helper()
	req, _ := http.NewRequest(method, u, nil)
	req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	st, _ := newStaffClient(t).do(req)
	return st
}

// TestPortalAcrossInstances runs two servers on one SQLite file: a session
// made on one works on the other, and a sign-out or a staff removal on one
// (or by the CLI) ends it on both.
func TestPortalAcrossInstances(t *testing.T) {
	db := filepath.Join(t.TempDir(), "shared.db")
	a := startServer(t, "-db", db)
	b := startServer(t, "-db", db)
	first := decodeObject(t, a.stdout.String())
	email, password, ws := first["staff_email"].(string), first["staff_password"].(string), first["workspace_id"].(string)

	staff := newStaffClient(t)
	session, csrf := staff.signIn(a.url, email, password)
	if st := withCookie(t, http.MethodGet, b.url+"/withdrawals", session); st != http.StatusOK {
		t.Fatalf("the session on the second instance: %d", st)
	}
	// The session cookie is never an API key, on any /v1 endpoint.
	for _, path := range []string{"/v1/balance", "/v1/coins"} {
		req, _ := http.NewRequest(http.MethodGet, b.url+path, nil)
		req.AddCookie(&http.Cookie{Name: session.Name, Value: session.Value})
		st, body := staff.do(req)
		if st != http.StatusUnauthorized || !strings.Contains(body, `"code":40100`) {
			t.Fatalf("GET %s with the session cookie: %d %s", path, st, body)
		}
	}
	if st := withCookie(t, http.MethodPost, b.url+"/v1/payouts", session); st != http.StatusUnauthorized {
		t.Fatalf("POST /v1/payouts with the session cookie: %d", st)
	}

	if st, _ := staff.post(a.url+"/logout", url.Values{"csrf_token": {csrf}}); st != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", st)
	}
	if st := withCookie(t, http.MethodGet, b.url+"/withdrawals", session); st != http.StatusSeeOther {
		t.Fatalf("a signed-out cookie on the second instance: %d; want 303", st)
	}

	// staff add prints a login that works; staff remove ends its sessions.
	added := decodeObject(t, mustCommand(t, "staff", "add", "-db", db, "-workspace", ws, "-email", "ops@example.com"))
	wantKeys(t, added, "staff_email", "staff_password", "role")
	if added["role"] != "viewer" {
		t.Fatalf("staff add without -role made a %v; want viewer", added["role"])
	}
	ops := newStaffClient(t)
	opsSession, _ := ops.signIn(b.url, "ops@example.com", added["staff_password"].(string))
	if st := withCookie(t, http.MethodGet, a.url+"/", opsSession); st != http.StatusOK {
		t.Fatalf("the added staff user's session: %d", st)
	}
	removed := decodeObject(t, mustCommand(t, "staff", "remove", "-db", db, "-workspace", ws, "-email", "ops@example.com"))
	if removed["removed"] != float64(1) || len(removed) != 1 {
		t.Fatalf("staff remove printed %v", removed)
	}
	for _, s := range []*server{a, b} {
		if st := withCookie(t, http.MethodGet, s.url+"/", opsSession); st != http.StatusSeeOther {
			t.Fatalf("a removed staff user's session: %d; want 303", st)
		}
	}
	if st, _ := newStaffClient(t).post(a.url+"/login", url.Values{"email": {"ops@example.com"}, "password": {added["staff_password"].(string)}}); st != http.StatusUnauthorized {
		t.Fatalf("a removed staff user signs in: %d", st)
	}
	if _, err := command(t, "staff", "remove", "-db", db, "-workspace", ws, "-email", "ops@example.com"); err == nil {
		t.Fatal("removing twice succeeded: a login that is not there is a mistake, not a success")
	}
	if _, err := command(t, "staff", "add", "-db", db, "-workspace", ws, "-email", "not an e-mail"); err == nil {
		t.Fatal("staff add took an invalid e-mail")
	}
	if _, err := command(t, "staff", "add", "-db", db, "-workspace", ws); err == nil {
		t.Fatal("staff add without -email succeeded")
	}
	dev := decodeObject(t, mustCommand(t, "staff", "add", "-db", db, "-workspace", ws, "-email", "dev@example.com", "-role", "developer"))
	if dev["role"] != "developer" {
		t.Fatalf("staff add -role developer printed %v", dev)
	}
	if _, err := command(t, "staff", "add", "-db", db, "-workspace", ws, "-email", "boss@example.com", "-role", "owner"); err == nil {
		t.Fatal("staff add took the role owner")
	}
	// The last admin (workspace create's login) cannot be removed.
	if _, err := command(t, "staff", "remove", "-db", db, "-workspace", ws, "-email", email); err == nil {
		t.Fatal("staff remove removed the last admin")
	}
	reset := decodeObject(t, mustCommand(t, "staff", "reset-2fa", "-db", db, "-workspace", ws, "-email", "dev@example.com"))
	if reset["two_factor"] != false {
		t.Fatalf("staff reset-2fa printed %v", reset)
	}
	if _, err := command(t, "staff", "reset-2fa", "-db", db, "-workspace", ws, "-email", "nobody@example.com"); err == nil {
		t.Fatal("staff reset-2fa of an unknown user succeeded")
	}
}

// TestSignInThrottleAcrossInstances locks an e-mail with failures spread
// over two instances: the store counts them, not a process.
func TestSignInThrottleAcrossInstances(t *testing.T) {
	db := filepath.Join(t.TempDir(), "shared.db")
	a := startServer(t, "-db", db)
	b := startServer(t, "-db", db)
	first := decodeObject(t, a.stdout.String())
	email, password := first["staff_email"].(string), first["staff_password"].(string)
	c := newStaffClient(t)
	for i := range 5 {
		s := []*server{a, b}[i%2]
		if st, _ := c.post(s.url+"/login", url.Values{"email": {email}, "password": {"wrong"}}); st != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, st)
		}
	}
	for _, s := range []*server{a, b} {
		req, _ := http.NewRequest(http.MethodPost, s.url+"/login", strings.NewReader(url.Values{"email": {email}, "password": {password}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("sign-in after 5 failures: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
}

func TestPortalFlagOff(t *testing.T) {
	s, key := serverWithKey(t, "-portal=false")
	resp, err := http.Get(s.url + "/login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"code":40400`) {
		t.Fatalf("/login without the portal: %d %s", resp.StatusCode, body)
	}
	if st, env := call(t, "GET", s.url+"/v1/balance", key, ""); st != 200 || code(env) != 0 {
		t.Fatalf("the API without the portal: %d %v", st, env)
	}
}

// TestHealthProbes: /healthz and /readyz answer without a key; /readyz is
// 503 once the database does not answer.
func TestHealthProbes(t *testing.T) {
	db := filepath.Join(t.TempDir(), "probes.db")
	s := startServer(t, "-db", db)
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != `{"status":"ok"}` {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
	}
	if resp, err := http.Post(s.url+"/readyz", "text/plain", nil); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /readyz: %v %v", resp, err)
	}
	// A newer binary migrated the database: this one is not ready for it.
	raw, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(s.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("GET /readyz on a newer schema: %d; want 503", resp.StatusCode)
	}
	if resp, err := http.Get(s.url + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %v %v", resp, err)
	}
}
