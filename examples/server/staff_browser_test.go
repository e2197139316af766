package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// codes hands out two-factor codes of one secret, each of a later 30-second
// step than the last, as the server accepts them: a step at most one ahead
// of the current one, never one it accepted before. When the next step is
// two ahead, it waits for the clock to reach the step before it.
type codes struct {
	t      *testing.T
	secret string
	last   int64
}

func (c *codes) next() string {
	c.t.Helper()
	now := time.Now().Unix() / 30
	step := max(c.last+1, now)
	if step > now+1 {
		time.Sleep(time.Until(time.Unix((step-1)*30, 0)) + 200*time.Millisecond)
	}
	c.last = step
	code, err := totp.GenerateCodeCustom(c.secret, time.Unix(step*30, 0), totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		c.t.Fatal(err)
	}
	return code
}

// postForms counts the page's POST forms.
func postForms(t *testing.T, ctx context.Context) int {
	t.Helper()
	return read(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('form[method="post"]').length`))
}

// TestStaffSecurityInBrowser drives section 11 in Chromium: turning on
// two-factor sign-in from the QR page and signing in with a code, the team
// page, approving a held payout with a step-up code (which the sandbox then
// completes), and a viewer who is offered no form to change anything.
func TestStaffSecurityInBrowser(t *testing.T) {
	ctx := newBrowser(t)
	db := filepath.Join(t.TempDir(), "payoutkit.db")
	s := startServer(t, "-db", db)
	first := decodeObject(t, s.stdout.String())
	key, email, password, ws := first["api_key"].(string), first["staff_email"].(string), first["staff_password"].(string), first["workspace_id"].(string)
	mustCommand(t, "workspace", "policy", "-db", db, "-workspace", ws, "-approval-over", "100")
	mustAPI(t, s, key, "POST", "/v1/orders", `{"order_id":"ord-1","amount":"500.00","payer_id":"alice"}`)
	mustAPI(t, s, key, "POST", "/v1/sandbox/orders/pay", `{"order_id":"ord-1"}`)
	held := mustAPI(t, s, key, "POST", "/v1/payouts",
		`{"payout_id":"po-big","amount":"250.00","asset":"USDT","network":"TRON","address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","payer_id":"alice"}`)
	if held["approval"] != "pending" {
		t.Fatalf("the payout above approval_over is %v", held["approval"])
	}
	viewer := decodeObject(t, mustCommand(t, "staff", "add", "-db", db, "-workspace", ws, "-email", "viewer@example.com"))

	signIn := func(t *testing.T, email, password string) {
		t.Helper()
		browse(t, ctx,
			chromedp.Navigate(s.url+"/login"),
			chromedp.WaitVisible(css(`form[action="/login"]`)),
			chromedp.SendKeys(css(`input[name="email"]`), email),
			chromedp.SendKeys(css(`input[name="password"]`), password),
			chromedp.Click(css(`form[action="/login"] button[type="submit"]`)),
		)
	}
	signOut := func(t *testing.T) {
		t.Helper()
		browse(t, ctx, chromedp.Click(css(`form[action="/logout"] button`)), chromedp.WaitVisible(css(`form[action="/login"]`)))
	}

	signIn(t, email, password)
	browse(t, ctx, chromedp.WaitVisible(css(`[data-testid="available"]`)))
	var c *codes

	t.Run("TurnOnTwoFactorAndSignInWithACode", func(t *testing.T) {
		browse(t, ctx,
			chromedp.Navigate(s.url+"/settings/security"),
			chromedp.WaitVisible(css(`[data-testid="totp-secret"]`)),
			chromedp.WaitVisible(css(`img[data-testid="totp-qr"]`)),
		)
		// The QR code is an image from the portal itself, shown under its
		// CSP.
		if w := read(t, ctx, chromedp.Evaluate[int](`document.querySelector('img[data-testid="totp-qr"]').naturalWidth`)); w < 100 {
			t.Fatalf("the QR image has width %d: not loaded", w)
		}
		c = &codes{t: t, secret: textOf(t, ctx, `[data-testid="totp-secret"]`)}
		browse(t, ctx,
			chromedp.SendKeys(css(`form[action="/settings/security/totp"] input[name="code"]`), c.next()),
			chromedp.Click(css(`form[action="/settings/security/totp"] button`)),
			chromedp.WaitVisible(css(`[data-testid="recovery-code"]`)),
		)
		if n := read(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="recovery-code"]').length`)); n != 10 {
			t.Fatalf("%d recovery codes shown; want 10", n)
		}
		signOut(t)
		signIn(t, email, password)
		browse(t, ctx, chromedp.WaitVisible(css(`form[action="/login/2fa"]`)))
		if loc := read(t, ctx, chromedp.Location()); !strings.HasSuffix(loc, "/login/2fa") {
			t.Fatalf("after the password: at %s", loc)
		}
		browse(t, ctx,
			chromedp.SendKeys(css(`input[name="code"]`), c.next()),
			chromedp.Click(css(`form[action="/login/2fa"] button`)),
			chromedp.WaitVisible(css(`[data-testid="available"]`)),
		)
	})
	if c == nil {
		t.FailNow()
	}

	t.Run("TeamPage", func(t *testing.T) {
		browse(t, ctx,
			chromedp.Navigate(s.url+"/settings/team"),
			chromedp.WaitVisible(css(`tr[data-testid="staff-row"][data-email="viewer@example.com"]`)),
		)
		rows := read(t, ctx, chromedp.Evaluate[[][3]string](`[...document.querySelectorAll('tr[data-testid="staff-row"]')].map(r =>
			[r.dataset.email, r.querySelector('[data-testid="staff-role"]').textContent, r.querySelector('[data-testid="staff-2fa"]').textContent])`))
		want := map[string][2]string{email: {"admin", "on"}, "viewer@example.com": {"viewer", "off"}}
		if len(rows) != 2 {
			t.Fatalf("rows %v", rows)
		}
		for _, r := range rows {
			if w := want[r[0]]; r[1] != w[0] || r[2] != w[1] {
				t.Errorf("row %v; want %v", r, w)
			}
		}
		browse(t, ctx,
			chromedp.SendKeys(css(`form[action="/settings/team"] input[name="email"]`), "dev@example.com"),
			chromedp.SetValue(css(`form[action="/settings/team"] select[name="role"]`), "developer"),
			chromedp.Click(css(`form[action="/settings/team"] button`)),
			chromedp.WaitVisible(css(`[data-testid="new-password"]`)),
			chromedp.WaitVisible(css(`tr[data-testid="staff-row"][data-email="dev@example.com"]`)),
		)
		if pw := textOf(t, ctx, `[data-testid="new-password"]`); len(pw) < 12 {
			t.Fatalf("new password %q", pw)
		}
	})

	t.Run("ApproveAHeldPayoutWithAStepUpCode", func(t *testing.T) {
		browse(t, ctx,
			chromedp.Navigate(s.url+"/withdrawals?approval=pending"),
			chromedp.WaitVisible(css(`tr[data-testid="payout-row"][data-payout-id="po-big"]`)),
			chromedp.Click(css(`tr[data-payout-id="po-big"] a`)),
			chromedp.WaitVisible(css(`form[data-testid="approve-form"]`)),
		)
		// The sandbox does not settle a held payout.
		if c, _ := apiData(t, s, key, "POST", "/v1/sandbox/payouts/complete", `{"payout_id":"po-big"}`); c != 40900 {
			t.Fatalf("completing a held payout: code %d; want 40900", c)
		}
		browse(t, ctx,
			chromedp.SendKeys(css(`form[data-testid="approve-form"] input[name="totp"]`), c.next()),
			chromedp.Click(css(`form[data-testid="approve-form"] button`)),
			chromedp.WaitVisible(css(`[data-testid="decided-by"]`)),
		)
		if by := textOf(t, ctx, `[data-testid="decided-by"]`); by != email {
			t.Fatalf("approved by %q; want %s", by, email)
		}
		mustAPI(t, s, key, "POST", "/v1/sandbox/payouts/complete", `{"payout_id":"po-big","txid":"0xbeef"}`)
		browse(t, ctx, chromedp.Reload(), chromedp.WaitVisible(css(`[data-field="status"]`)))
		if st := textOf(t, ctx, `[data-field="status"]`); st != "completed" {
			t.Fatalf("after approval and the sandbox's completion: %q", st)
		}
		if _, info := apiData(t, s, key, "POST", "/v1/payouts/info", `{"payout_id":"po-big"}`); info["status"] != "completed" || info["approval"] != "approved" {
			t.Fatalf("payout %v", info)
		}
	})

	t.Run("ViewerSeesNoForms", func(t *testing.T) {
		signOut(t)
		signIn(t, "viewer@example.com", viewer["staff_password"].(string))
		browse(t, ctx, chromedp.WaitVisible(css(`[data-testid="available"]`)))
		for _, path := range []string{"/", "/withdrawals", "/withdrawals/po-big", "/payments", "/customers", "/settings/developer"} {
			browse(t, ctx, chromedp.Navigate(s.url+path), chromedp.WaitVisible(css(`form[action="/logout"]`)))
			if n := postForms(t, ctx); n != 1 {
				t.Errorf("%s offers the viewer %d POST forms; want only the sign-out form", path, n)
			}
		}
		for _, path := range []string{"/settings/team", "/settings/addresses", "/settings/policy"} {
			browse(t, ctx, chromedp.Navigate(s.url+path), chromedp.WaitVisible(css(`main`)))
			if h := textOf(t, ctx, `main h1`); !strings.Contains(h, "Not allowed") {
				t.Errorf("%s shows the viewer %q; want the 403 page", path, h)
			}
		}
		if n := read(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('a[href="/settings/team"]').length`)); n != 0 {
			t.Error("the viewer is offered a link to the team page")
		}
	})
}
