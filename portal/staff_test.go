package portal_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/portal"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// testClock is the engine's clock, moved by the test, so that each
// two-factor code falls in a step of its own.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// next moves the clock to the next 30-second step.
func (c *testClock) next() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(30 * time.Second)
}

// newClockedHarness is a harness whose engine runs on a clock the test
// moves.
func newClockedHarness(t *testing.T) (*harness, *testClock) {
	t.Helper()
	clock := &testClock{now: time.Now().UTC().Truncate(time.Second)}
	return serveHarness(t, memstore.New(), clock.Now, portal.Options{}), clock
}

// addStaff adds a user of the role to the workspace and returns the
// password.
func (h *harness) addStaff(ws, email string, role payoutkit.Role) string {
	h.t.Helper()
	ns, err := h.team.AddUser(h.ctx, ws, email, role, payoutkit.ActorCLI)
	if err != nil {
		h.t.Fatal(err)
	}
	return ns.Password
}

func totpCode(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	c, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	secretRe   = regexp.MustCompile(`data-testid="totp-secret">([A-Z2-7]+)<`)
	recoveryRe = regexp.MustCompile(`data-testid="recovery-code">([a-z0-9-]+)<`)
	passwordRe = regexp.MustCompile(`data-testid="new-password">([A-Za-z0-9]+)<`)
)

// enableTwoFactor turns two-factor sign-in on from the security page and
// returns the secret and the recovery codes.
func (b *browser) enableTwoFactor(csrf string, clock *testClock) (string, []string) {
	t := b.h.t
	t.Helper()
	page := b.get("/settings/security").wantStatus(t, http.StatusOK)
	m := secretRe.FindStringSubmatch(page.body)
	if m == nil {
		t.Fatalf("no totp-secret on the security page:\n%s", page.body)
	}
	qr := b.get("/settings/security/qr.png").wantStatus(t, http.StatusOK)
	if qr.Header.Get("Content-Type") != "image/png" || !strings.HasPrefix(qr.body, "\x89PNG") {
		t.Fatalf("the QR code is %q, %d bytes", qr.Header.Get("Content-Type"), len(qr.body))
	}
	resp := b.post("/settings/security/totp", url.Values{"csrf_token": {csrf}, "code": {totpCode(t, m[1], clock.Now())}}).wantStatus(t, http.StatusOK)
	var codes []string
	for _, c := range recoveryRe.FindAllStringSubmatch(resp.body, -1) {
		codes = append(codes, c[1])
	}
	if len(codes) != 10 {
		t.Fatalf("%d recovery codes shown; want 10\n%s", len(codes), resp.body)
	}
	clock.next()
	return m[1], codes
}

// TestRolesRefusePostsBeyondThem: each role's POSTs beyond its rights are
// 403 and change nothing; admin pages are 403 to the other roles.
func TestRolesRefusePostsBeyondThem(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Roles")
	ws := nw.Workspace.ID
	h.fund(ws, "o1", "500.00", "payer")
	_, err := h.engine.SetPayoutPolicy(h.ctx, ws, payoutkit.PolicyPatch{ApprovalOver: ptr(payoutkit.LimitOf(100_00))}, payoutkit.ActorCLI)
	if err != nil {
		t.Fatal(err)
	}
	held := h.payout(ws, "p_held", "200.00", "payer")
	viewer, dev := h.browser(), h.browser()
	vcsrf := viewer.signIn("viewer@example.com", h.addStaff(ws, "viewer@example.com", payoutkit.RoleViewer))
	dcsrf := dev.signIn("dev@example.com", h.addStaff(ws, "dev@example.com", payoutkit.RoleDeveloper))

	keysBefore, _ := h.engine.APIKeys(h.ctx, ws)
	for _, c := range []struct {
		b      *browser
		csrf   string
		path   string
		form   url.Values
		status int
	}{
		{viewer, vcsrf, "/settings/developer/keys", url.Values{}, http.StatusForbidden},
		{viewer, vcsrf, "/settings/developer/keys/reset", url.Values{}, http.StatusForbidden},
		{viewer, vcsrf, "/settings/developer/webhook", url.Values{"url": {"https://example.com/hook"}}, http.StatusForbidden},
		{viewer, vcsrf, "/settings/developer/webhook/rotate", url.Values{}, http.StatusForbidden},
		{viewer, vcsrf, "/settings/team", url.Values{"email": {"x@example.com"}, "role": {"admin"}}, http.StatusForbidden},
		{viewer, vcsrf, "/withdrawals/p_held/approve", url.Values{"totp": {"123456"}}, http.StatusForbidden},
		{dev, dcsrf, "/settings/team", url.Values{"email": {"x@example.com"}, "role": {"admin"}}, http.StatusForbidden},
		{dev, dcsrf, "/settings/team/role", url.Values{"email": {"dev@example.com"}, "role": {"admin"}, "totp": {"123456"}}, http.StatusForbidden},
		{dev, dcsrf, "/settings/team/remove", url.Values{"email": {nw.StaffEmail}}, http.StatusForbidden},
		{dev, dcsrf, "/settings/addresses", url.Values{"network": {"TRON"}, "address": {tronAddress}, "totp": {"123456"}}, http.StatusForbidden},
		{dev, dcsrf, "/settings/policy", url.Values{"max_payout": {"1.00"}, "totp": {"123456"}}, http.StatusForbidden},
		{dev, dcsrf, "/withdrawals/p_held/reject", url.Values{"totp": {"123456"}}, http.StatusForbidden},
	} {
		c.form.Set("csrf_token", c.csrf)
		resp := c.b.post(c.path, c.form).wantStatus(t, c.status)
		resp.wantContains(t, "Nothing was changed")
	}
	keysAfter, _ := h.engine.APIKeys(h.ctx, ws)
	users, _ := h.store.StaffUsers(h.ctx, ws)
	pol, _ := h.engine.PayoutPolicy(h.ctx, ws)
	book, _ := h.engine.Addresses(h.ctx, ws)
	p, _ := h.engine.Payout(h.ctx, ws, held.PayoutID)
	ws2, _ := h.engine.Workspace(h.ctx, ws)
	if len(keysAfter) != len(keysBefore) || len(users) != 3 || pol.MaxPayout.Set || len(book) != 0 ||
		p.Approval != payoutkit.ApprovalPending || ws2.WebhookURL != "" {
		t.Fatalf("a refused POST changed something: keys %d→%d, users %d, policy %+v, book %d, approval %s, webhook %q",
			len(keysBefore), len(keysAfter), len(users), pol, len(book), p.Approval, ws2.WebhookURL)
	}
	for _, u := range users {
		if u.Email == "dev@example.com" && u.Role != payoutkit.RoleDeveloper {
			t.Fatalf("the developer's role became %s", u.Role)
		}
	}

	// A developer may create a key.
	dev.post("/settings/developer/keys", url.Values{"csrf_token": {dcsrf}}).wantStatus(t, http.StatusOK).wantContains(t, `data-testid="new-key"`)

	// Admin pages are 403 to the other roles; the viewer sees no forms.
	for _, b := range []*browser{viewer, dev} {
		for _, path := range []string{"/settings/team", "/settings/addresses", "/settings/policy"} {
			b.get(path).wantStatus(t, http.StatusForbidden)
		}
	}
	for _, path := range []string{"/", "/withdrawals", "/withdrawals/p_held", "/settings/developer", "/settings/password"} {
		body := viewer.get(path).wantStatus(t, http.StatusOK).body
		if n := strings.Count(body, `method="post"`); path != "/settings/password" && n != 1 {
			t.Errorf("the viewer's %s offers %d forms; want only the sign-out form", path, n)
		}
	}
	if body := dev.get("/withdrawals/p_held").body; strings.Contains(body, "approve-form") {
		t.Error("the developer is offered the approve form")
	}
}

func ptr[T any](v T) *T { return &v }

// escaped is s as html/template writes it into a page.
func escaped(s string) string { return strings.ReplaceAll(html.EscapeString(s), "+", "&#43;") }

// TestStepUpCodes: a sensitive action needs a fresh code of an admin with
// two-factor sign-in on; a missing, wrong or reused code is 403 and
// changes nothing.
func TestStepUpCodes(t *testing.T) {
	h, clock := newClockedHarness(t)
	nw := h.workspace("Step-up")
	ws := nw.Workspace.ID
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)
	policy := func(totp string) *response {
		return b.post("/settings/policy", url.Values{"csrf_token": {csrf}, "max_payout": {"50.00"}, "totp": {totp}})
	}
	// Without two-factor sign-in, no code can be fresh.
	policy("123456").wantStatus(t, http.StatusForbidden).wantContains(t, "two-factor")

	secret, _ := b.enableTwoFactor(csrf, clock)
	policy("").wantStatus(t, http.StatusForbidden).wantContains(t, "fresh two-factor code")
	wrong := totpCode(t, secret, clock.Now().Add(-10*time.Minute))
	policy(wrong).wantStatus(t, http.StatusForbidden)
	if pol, _ := h.engine.PayoutPolicy(h.ctx, ws); pol.MaxPayout.Set {
		t.Fatal("a refused policy change was applied")
	}
	code := totpCode(t, secret, clock.Now())
	policy(code).wantStatus(t, http.StatusSeeOther)
	if pol, _ := h.engine.PayoutPolicy(h.ctx, ws); !pol.MaxPayout.Set || pol.MaxPayout.Amount != 50_00 {
		t.Fatalf("policy = %+v after a change with a right code", pol)
	}
	// The same code again is refused, for any action.
	resp := b.post("/settings/addresses", url.Values{"csrf_token": {csrf}, "network": {"TRON"}, "address": {tronAddress}, "totp": {code}})
	resp.wantStatus(t, http.StatusForbidden).wantContains(t, "already used")
	if book, _ := h.engine.Addresses(h.ctx, ws); len(book) != 0 {
		t.Fatal("an address was added with a reused code")
	}
	clock.next()
	b.post("/settings/addresses", url.Values{"csrf_token": {csrf}, "network": {"TRON"}, "address": {tronAddress}, "label": {"cold"},
		"totp": {totpCode(t, secret, clock.Now())}}).wantStatus(t, http.StatusSeeOther)
	b.get("/settings/addresses").wantStatus(t, http.StatusOK).wantContains(t, `data-testid="address-row"`, tronAddress, "cold")
	// An invalid address is refused before the code is used up.
	clock.next()
	c := totpCode(t, secret, clock.Now())
	b.post("/settings/addresses", url.Values{"csrf_token": {csrf}, "network": {"TRON"}, "address": {"nope"}, "totp": {c}}).
		wantStatus(t, http.StatusBadRequest)
	b.post("/settings/addresses/remove", url.Values{"csrf_token": {csrf}, "network": {"TRON"}, "address": {tronAddress}}).
		wantStatus(t, http.StatusSeeOther)
	if book, _ := h.engine.Addresses(h.ctx, ws); len(book) != 0 {
		t.Fatal("the address was not removed")
	}
	// Wrong step-up codes count toward the sign-in limit (two so far):
	// three more lock the e-mail, and then even a right code is refused.
	for range 3 {
		policy("000000").wantStatus(t, http.StatusForbidden)
	}
	clock.next()
	b.post("/settings/policy", url.Values{"csrf_token": {csrf}, "max_payout": {"60.00"}, "totp": {totpCode(t, secret, clock.Now())}}).
		wantStatus(t, http.StatusForbidden).wantContains(t, "too many wrong codes")
	if pol, _ := h.engine.PayoutPolicy(h.ctx, ws); pol.MaxPayout.Amount != 50_00 {
		t.Fatal("a change passed while the e-mail was locked")
	}
	// The security log holds each change with its actor, never a code.
	page, _ := h.engine.SecurityLog(h.ctx, ws, payoutkit.PageRequest{Limit: 100})
	actions := map[string]string{}
	for _, e := range page.Items {
		actions[e.Action] = e.Actor
		for _, v := range e.Details {
			if v == code || v == secret {
				t.Fatalf("the security log holds a code or secret: %+v", e)
			}
		}
	}
	for _, a := range []string{"policy.changed", "address.added", "address.removed", "twofactor.enabled", "signin.succeeded"} {
		if actions[a] != nw.StaffEmail {
			t.Errorf("security log: %s by %q; want by %s (log %v)", a, actions[a], nw.StaffEmail, actions)
		}
	}
}

// TestTwoFactorSignIn: the password alone leads to /login/2fa, a code
// signs in once, wrong codes count toward the throttle.
func TestTwoFactorSignIn(t *testing.T) {
	h, clock := newClockedHarness(t)
	nw := h.workspace("2FA")
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)
	secret, recovery := b.enableTwoFactor(csrf, clock)
	b.get("/settings/security").wantStatus(t, http.StatusOK).wantContains(t, `data-state="on"`)
	b.post("/logout", url.Values{"csrf_token": {csrf}}).wantStatus(t, http.StatusSeeOther)

	c := h.browser()
	resp := c.post("/login", url.Values{"email": {nw.StaffEmail}, "password": {nw.StaffPassword}, "next": {"/customers"}}).wantStatus(t, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != "/login/2fa" {
		t.Fatalf("POST /login → %q; want /login/2fa", loc)
	}
	if c.sessionCookie() != nil {
		t.Fatal("the password alone set a session cookie")
	}
	c.get("/").wantStatus(t, http.StatusSeeOther)
	c.get("/login/2fa").wantStatus(t, http.StatusOK).wantContains(t, `action="/login/2fa"`, `name="code"`)
	code := totpCode(t, secret, clock.Now())
	resp = c.post("/login/2fa", url.Values{"code": {code}}).wantStatus(t, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != "/customers" {
		t.Fatalf("after the code → %q; want /customers", loc)
	}
	c.get("/").wantStatus(t, http.StatusOK)

	// The same code again is refused.
	d := h.browser()
	d.post("/login", url.Values{"email": {nw.StaffEmail}, "password": {nw.StaffPassword}}).wantStatus(t, http.StatusSeeOther)
	d.post("/login/2fa", url.Values{"code": {code}}).wantStatus(t, http.StatusUnauthorized).wantContains(t, "Invalid code")
	// A recovery code works once.
	d.post("/login/2fa", url.Values{"code": {recovery[0]}}).wantStatus(t, http.StatusSeeOther)
	e := h.browser()
	e.post("/login", url.Values{"email": {nw.StaffEmail}, "password": {nw.StaffPassword}}).wantStatus(t, http.StatusSeeOther)
	e.post("/login/2fa", url.Values{"code": {recovery[0]}}).wantStatus(t, http.StatusUnauthorized)
	// Wrong codes count toward the sign-in throttle: with the refusal
	// above, four more lock the e-mail, even for a right code.
	for range 4 {
		e.post("/login/2fa", url.Values{"code": {"000000"}}).wantStatus(t, http.StatusUnauthorized)
	}
	clock.next()
	locked := e.post("/login/2fa", url.Values{"code": {totpCode(t, secret, clock.Now())}}).wantStatus(t, http.StatusTooManyRequests)
	if locked.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After on a locked sign-in")
	}
	h.browser().post("/login", url.Values{"email": {nw.StaffEmail}, "password": {nw.StaffPassword}}).wantStatus(t, http.StatusTooManyRequests)
	// The pending state is no session: its cookie opens no page.
	f := h.browser()
	f.get("/login/2fa").wantStatus(t, http.StatusSeeOther)

	page, _ := h.engine.SecurityLog(h.ctx, nw.Workspace.ID, payoutkit.PageRequest{Limit: 100})
	seen := map[string]int{}
	for _, it := range page.Items {
		seen[it.Action]++
		if it.ClientAddr == "" && strings.HasPrefix(it.Action, "signin.") {
			t.Errorf("a sign-in entry without the client address: %+v", it)
		}
	}
	if seen["signin.succeeded"] < 3 || seen["signin.failed"] < 5 || seen["signin.throttled"] < 1 {
		t.Fatalf("security log sign-ins: %v", seen)
	}
}

// TestTeamPage: an admin adds a user (the password shown once), changes a
// role with a step-up code and removes a user, whose sessions end; the last
// admin can be neither demoted nor removed.
func TestTeamPage(t *testing.T) {
	h, clock := newClockedHarness(t)
	nw := h.workspace("Team")
	ws := nw.Workspace.ID
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)
	secret, _ := b.enableTwoFactor(csrf, clock)

	resp := b.post("/settings/team", url.Values{"csrf_token": {csrf}, "email": {"ops@example.com"}, "role": {"developer"}}).wantStatus(t, http.StatusOK)
	m := passwordRe.FindStringSubmatch(resp.body)
	if m == nil {
		t.Fatalf("no new-password:\n%s", resp.body)
	}
	page := b.get("/settings/team").wantStatus(t, http.StatusOK)
	page.wantContains(t, `data-testid="staff-row" data-email="ops@example.com"`, `data-email="`+escaped(nw.StaffEmail)+`"`)
	if strings.Contains(page.body, m[1]) {
		t.Fatal("the team page shows the password again")
	}
	ops := h.browser()
	ops.signIn("ops@example.com", m[1])

	// The last admin stays.
	b.post("/settings/team/role", url.Values{"csrf_token": {csrf}, "email": {nw.StaffEmail}, "role": {"viewer"}, "totp": {totpCode(t, secret, clock.Now())}}).
		wantStatus(t, http.StatusConflict).wantContains(t, "last admin")
	b.post("/settings/team/remove", url.Values{"csrf_token": {csrf}, "email": {nw.StaffEmail}}).wantStatus(t, http.StatusConflict)
	// A role change needs its code.
	b.post("/settings/team/role", url.Values{"csrf_token": {csrf}, "email": {"ops@example.com"}, "role": {"admin"}}).wantStatus(t, http.StatusForbidden)
	clock.next()
	b.post("/settings/team/role", url.Values{"csrf_token": {csrf}, "email": {"ops@example.com"}, "role": {"admin"}, "totp": {totpCode(t, secret, clock.Now())}}).
		wantStatus(t, http.StatusSeeOther)
	if u, _ := h.store.StaffUser(h.ctx, "ops@example.com"); u.Role != payoutkit.RoleAdmin {
		t.Fatalf("role = %s; want admin", u.Role)
	}
	ops.get("/settings/team").wantStatus(t, http.StatusOK)
	b.post("/settings/team/remove", url.Values{"csrf_token": {csrf}, "email": {"ops@example.com"}}).wantStatus(t, http.StatusSeeOther)
	ops.get("/").wantStatus(t, http.StatusSeeOther)
	users, _ := h.store.StaffUsers(h.ctx, ws)
	if len(users) != 1 {
		t.Fatalf("%d users after the removal", len(users))
	}
	// Each change is in the security log by the admin, from the client's
	// address, without the new user's password.
	page2, _ := h.engine.SecurityLog(h.ctx, ws, payoutkit.PageRequest{Limit: 100})
	found := map[string]payoutkit.SecurityLogEntry{}
	for _, e := range page2.Items {
		if _, seen := found[e.Action]; !seen {
			found[e.Action] = e
		}
		for _, v := range e.Details {
			if v == m[1] {
				t.Fatalf("the security log holds a password: %+v", e)
			}
		}
	}
	for _, a := range []string{"staff.added", "staff.role_changed", "staff.removed"} {
		e, ok := found[a]
		if !ok || e.Actor != nw.StaffEmail || e.ClientAddr != "127.0.0.1" || e.Details["email"] != "ops@example.com" {
			t.Errorf("security log %s: %+v (found %v)", a, e, ok)
		}
	}
	if found["staff.role_changed"].Details["role"] != "admin" {
		t.Errorf("role change logged as %v", found["staff.role_changed"].Details)
	}
}

// TestRequireTwoFactor: a workspace that requires it sends a user without
// it to the security page first.
func TestRequireTwoFactor(t *testing.T) {
	h, clock := newClockedHarness(t)
	nw := h.workspace("Required")
	ws := nw.Workspace.ID
	if err := h.team.SetRequireTwoFactor(h.ctx, ws, true, payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	b := h.browser()
	b.post("/login", url.Values{"email": {nw.StaffEmail}, "password": {nw.StaffPassword}}).wantStatus(t, http.StatusSeeOther)
	resp := b.get("/withdrawals").wantStatus(t, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != "/settings/security" {
		t.Fatalf("→ %q; want /settings/security", loc)
	}
	page := b.get("/settings/security").wantStatus(t, http.StatusOK).wantContains(t, `data-testid="twofactor-required"`)
	b.enableTwoFactor(csrfOf(page.body), clock)
	b.get("/withdrawals").wantStatus(t, http.StatusOK)
}

// TestApprovalsPages: the Needs approval tab lists a held payout; an
// admin approves it with a code and its page says who and when.
func TestApprovalsPages(t *testing.T) {
	h, clock := newClockedHarness(t)
	nw := h.workspace("Approvals")
	ws := nw.Workspace.ID
	h.fund(ws, "o1", "1000.00", "payer")
	if _, err := h.engine.SetPayoutPolicy(h.ctx, ws, payoutkit.PolicyPatch{ApprovalOver: ptr(payoutkit.LimitOf(100_00))}, payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	h.payout(ws, "p_small", "50.00", "payer")
	h.payout(ws, "p_big", "300.00", "payer")
	h.payout(ws, "p_bad", "400.00", "payer")
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)
	secret, _ := b.enableTwoFactor(csrf, clock)

	list := b.get("/withdrawals?approval=pending").wantStatus(t, http.StatusOK)
	list.wantContains(t, `data-payout-id="p_big"`, `data-payout-id="p_bad"`, `aria-current="page">Needs approval`)
	if strings.Contains(list.body, `data-payout-id="p_small"`) {
		t.Fatal("the Needs approval tab lists a payout that is not held")
	}
	b.get("/withdrawals/p_big").wantStatus(t, http.StatusOK).wantContains(t, `data-testid="approve-form"`, `data-testid="reject-form"`)
	// Without a code: 403, still held.
	b.post("/withdrawals/p_big/approve", url.Values{"csrf_token": {csrf}}).wantStatus(t, http.StatusForbidden)
	if p, _ := h.engine.Payout(h.ctx, ws, "p_big"); p.Approval != payoutkit.ApprovalPending {
		t.Fatalf("approval = %s after a refused approval", p.Approval)
	}
	b.post("/withdrawals/p_big/approve", url.Values{"csrf_token": {csrf}, "totp": {totpCode(t, secret, clock.Now())}}).wantStatus(t, http.StatusSeeOther)
	page := b.get("/withdrawals/p_big").wantStatus(t, http.StatusOK)
	page.wantContains(t, `data-approval="approved"`, `data-testid="decided-by">`+escaped(nw.StaffEmail))
	if strings.Contains(page.body, "approve-form") {
		t.Fatal("an approved payout still offers the approve form")
	}
	clock.next()
	b.post("/withdrawals/p_bad/reject", url.Values{"csrf_token": {csrf}, "reason": {"unknown payee"}, "totp": {totpCode(t, secret, clock.Now())}}).
		wantStatus(t, http.StatusSeeOther)
	p, _ := h.engine.Payout(h.ctx, ws, "p_bad")
	if p.Status != payoutkit.PayoutFailed || p.FailureReason != "rejected: unknown payee" {
		t.Fatalf("rejected payout = %s %q", p.Status, p.FailureReason)
	}
	b.get("/withdrawals/p_bad").wantStatus(t, http.StatusOK).wantContains(t, `data-approval="rejected"`, "Rejected by")
	b.get("/withdrawals?approval=pending").wantStatus(t, http.StatusOK).wantContains(t, `data-testid="no-held"`)
}
