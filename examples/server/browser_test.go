package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium returns the path of a Chromium to drive: $PAYOUTKIT_TEST_CHROMIUM,
// or chromium from PATH. Without one the test is skipped, except in CI
// (CI=true), where .ci/run installs Debian's chromium.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PAYOUTKIT_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH; CI must run the browser tests")
	}
	t.Skip("no chromium on PATH: install Debian's chromium package to run the browser tests")
	return ""
}

// newBrowser starts a headless Chromium for the test and returns a tab's
// context.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, // CI runs as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	// The first Do starts the browser for the life of ctx: no timeout on it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// apiData calls the /v1 API with key and returns the envelope's code and data.
func apiData(t *testing.T, s *server, key, method, path, body string) (int, map[string]any) {
	t.Helper()
	_, env := call(t, method, s.url+path, key, body)
	data, _ := env["data"].(map[string]any)
	return code(env), data
}

func mustAPI(t *testing.T, s *server, key, method, path, body string) map[string]any {
	t.Helper()
	c, data := apiData(t, s, key, method, path, body)
	if c != 0 {
		t.Fatalf("%s %s %s: code %d", method, path, body, c)
	}
	return data
}

// TestPortalInBrowser signs in to the portal of a started server in a real
// headless Chromium and clicks through it as staff would, checking each page
// against the /v1 API.
func TestPortalInBrowser(t *testing.T) {
	ctx := newBrowser(t)
	db := filepath.Join(t.TempDir(), "payoutkit.db")
	s := startServer(t, "-db", db)
	first := decodeObject(t, s.stdout.String())
	key, email, password := first["api_key"].(string), first["staff_email"].(string), first["staff_password"].(string)

	// Money through the API: two paid orders, four payouts, one completed
	// and one failed.
	for _, o := range []struct{ id, amount, payer string }{{"ord-1", "300.00", "alice"}, {"ord-2", "200.00", "bob"}} {
		mustAPI(t, s, key, "POST", "/v1/orders", fmt.Sprintf(`{"order_id":%q,"amount":%q,"payer_id":%q}`, o.id, o.amount, o.payer))
		mustAPI(t, s, key, "POST", "/v1/sandbox/orders/pay", fmt.Sprintf(`{"order_id":%q}`, o.id))
	}
	for _, p := range []struct{ id, amount, payer string }{
		{"po-1", "25.00", "alice"}, {"po-2", "40.50", "bob"}, {"po-3", "10.00", "alice"}, {"po-4", "7.25", "carol"},
	} {
		mustAPI(t, s, key, "POST", "/v1/payouts", fmt.Sprintf(
			`{"payout_id":%q,"amount":%q,"asset":"USDT","network":"TRON","address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","payer_id":%q}`,
			p.id, p.amount, p.payer))
	}
	mustAPI(t, s, key, "POST", "/v1/sandbox/payouts/complete", `{"payout_id":"po-1","txid":"0xfeed"}`)
	mustAPI(t, s, key, "POST", "/v1/sandbox/payouts/fail", `{"payout_id":"po-2","reason":"address frozen"}`)

	// A page without a session leads to the sign-in form, and back after it.
	browse(t, ctx,
		chromedp.Navigate(s.url+"/withdrawals"),
		chromedp.WaitVisible(css(`form[action="/login"]`)),
	)
	location := read(t, ctx, chromedp.Location())
	if !strings.HasSuffix(location, "/login?next=%2Fwithdrawals") {
		t.Fatalf("without a session: at %s", location)
	}
	browse(t, ctx,
		chromedp.SendKeys(css(`input[name="email"]`), email),
		chromedp.SendKeys(css(`input[name="password"]`), "not the password"),
		chromedp.Click(css(`form[action="/login"] button[type="submit"]`)),
		chromedp.WaitVisible(css(`p.alert`)),
	)
	if text := textOf(t, ctx, `p.alert`); text != "Invalid e-mail or password" {
		t.Fatalf("failed sign-in says %q", text)
	}
	browse(t, ctx,
		chromedp.SetValue(css(`input[name="password"]`), password),
		chromedp.Click(css(`form[action="/login"] button[type="submit"]`)),
		chromedp.WaitVisible(css(`tr[data-testid="payout-row"]`)),
	)
	location = read(t, ctx, chromedp.Location())
	if !strings.HasSuffix(location, "/withdrawals") {
		t.Fatalf("after sign-in: at %s", location)
	}

	t.Run("WithdrawalsAfterSettling", func(t *testing.T) {
		want := map[string]string{"po-4": "submitted", "po-3": "submitted", "po-2": "failed", "po-1": "completed"}
		rows := payoutRows(t, ctx)
		if got := strings.Join(rows.ids, ","); got != "po-4,po-3,po-2,po-1" {
			t.Fatalf("rows %s; want newest first", got)
		}
		for id, status := range want {
			if rows.status[id] != status {
				t.Errorf("%s shows %q; want %q", id, rows.status[id], status)
			}
			if _, info := apiData(t, s, key, "POST", "/v1/payouts/info", fmt.Sprintf(`{"payout_id":%q}`, id)); info["status"] != status {
				t.Errorf("%s: /v1 says %v", id, info["status"])
			}
		}
	})

	t.Run("StatusFilter", func(t *testing.T) {
		browse(t, ctx, chromedp.Click(css(`nav.tabs a[href="/withdrawals?status=failed"]`)), chromedp.WaitVisible(css(`a[aria-current="page"][href="/withdrawals?status=failed"]`)))
		if rows := payoutRows(t, ctx); len(rows.ids) != 1 || rows.status["po-2"] != "failed" {
			t.Fatalf("failed tab: %v", rows.status)
		}
		browse(t, ctx, chromedp.Click(css(`nav.tabs a[href="/withdrawals?status=submitted"]`)), chromedp.WaitVisible(css(`a[aria-current="page"][href="/withdrawals?status=submitted"]`)))
		if rows := payoutRows(t, ctx); strings.Join(rows.ids, ",") != "po-4,po-3" {
			t.Fatalf("submitted tab: %v", rows.ids)
		}
		browse(t, ctx, chromedp.Navigate(s.url+"/withdrawals"),
			chromedp.SendKeys(css(`input[name="q"]`), "alice"), chromedp.Submit(css(`input[name="q"]`)),
			chromedp.WaitVisible(css(`input[name="q"][value="alice"]`))) // the answer's form, not the typed one
		if rows := payoutRows(t, ctx); strings.Join(rows.ids, ",") != "po-3,po-1" {
			t.Fatalf("search for alice: %v", rows.ids)
		}
	})

	t.Run("DashboardEqualsBalance", func(t *testing.T) {
		browse(t, ctx, chromedp.Click(css(`nav.nav a[href="/"]`)), chromedp.WaitVisible(css(`[data-testid="available"]`)))
		bal := mustAPI(t, s, key, "GET", "/v1/balance", "")
		if got := textOf(t, ctx, `[data-testid="available"]`); got != bal["available"] {
			t.Errorf("Available card %q; /v1/balance %v", got, bal["available"])
		}
		if got := textOf(t, ctx, `[data-testid="in-progress"]`); got != bal["in_progress"] {
			t.Errorf("In progress card %q; /v1/balance %v", got, bal["in_progress"])
		}
		// 500.00 paid in, 82.75 paid out of which 40.50 failed and 25.00 completed.
		if bal["available"] != "457.75" || bal["in_progress"] != "17.25" {
			t.Errorf("balance %v; want 457.75 available, 17.25 in progress", bal)
		}
	})

	t.Run("CustomersSums", func(t *testing.T) {
		browse(t, ctx, chromedp.Click(css(`nav.nav a[href="/customers"]`)), chromedp.WaitVisible(css(`tr[data-testid="customer-row"]`)))
		got := read(t, ctx, chromedp.Evaluate[map[string][3]string](`Object.fromEntries([...document.querySelectorAll('tr[data-testid="customer-row"]')].map(r =>
			[r.dataset.payerId, ['paid-in','paid-out','in-progress'].map(c => r.querySelector('[data-testid="'+c+'"]').textContent)]))`))
		want := map[string][3]string{
			"alice": {"300.00", "25.00", "10.00"},
			"bob":   {"200.00", "0.00", "0.00"},
			"carol": {"0.00", "0.00", "7.25"},
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("customers %v; want %v", got, want)
		}
	})

	t.Run("KeyCreatedAndRevoked", func(t *testing.T) {
		browse(t, ctx, chromedp.Click(css(`nav.nav a[href="/settings/developer"]`)), chromedp.WaitVisible(css(`tr[data-testid="key-row"]`)),
			chromedp.Click(css(`form[action="/settings/developer/keys"] button`)), chromedp.WaitVisible(css(`[data-testid="new-key"]`)))
		newKey := textOf(t, ctx, `[data-testid="new-key"]`)
		if c, _ := apiData(t, s, key, "GET", "/v1/balance", ""); c != 0 {
			t.Fatalf("the first key stopped working: %d", c)
		}
		if c, _ := apiData(t, s, newKey, "GET", "/v1/balance", ""); c != 0 {
			t.Fatalf("the key created in the portal: code %d", c)
		}
		prefix := strings.Split(newKey, "_")[1]
		// Revoke asks first: the row's link leads to a page whose form
		// posts to the endpoint, which answers with the Developer page.
		revoke := `tr[data-prefix="` + prefix + `"] a[href^="/settings/developer/keys/revoke"]`
		confirm := `form[action="/settings/developer/keys/revoke"] button`
		browse(t, ctx, chromedp.Click(css(revoke)), chromedp.WaitVisible(css(confirm)),
			chromedp.Click(css(confirm)), chromedp.WaitVisible(css(`tr[data-prefix="`+prefix+`"]`)), chromedp.WaitNotPresent(css(revoke)))
		if c, _ := apiData(t, s, newKey, "GET", "/v1/balance", ""); c != 40100 {
			t.Fatalf("the key revoked in the portal: code %d; want 40100", c)
		}
		if c, _ := apiData(t, s, key, "GET", "/v1/balance", ""); c != 0 {
			t.Fatalf("revoking one prefix revoked another key: %d", c)
		}
	})

	t.Run("ResetAll", func(t *testing.T) {
		browse(t, ctx, chromedp.Click(css(`a[href="/settings/developer/keys/reset"]`)), chromedp.WaitVisible(css(`form[action="/settings/developer/keys/reset"] button`)),
			chromedp.Click(css(`form[action="/settings/developer/keys/reset"] button`)), chromedp.WaitVisible(css(`[data-testid="new-key"]`)))
		fresh := textOf(t, ctx, `[data-testid="new-key"]`)
		if c, _ := apiData(t, s, key, "GET", "/v1/balance", ""); c != 40100 {
			t.Fatalf("the first key after reset: code %d; want 40100", c)
		}
		if c, _ := apiData(t, s, fresh, "GET", "/v1/balance", ""); c != 0 {
			t.Fatalf("the key from reset: code %d", c)
		}
		key = fresh
	})

	t.Run("RotateSecret", func(t *testing.T) {
		browse(t, ctx, chromedp.Click(css(`form[action="/settings/developer/webhook/rotate"] button`)), chromedp.WaitVisible(css(`[data-testid="new-secret"]`)))
		secret := textOf(t, ctx, `[data-testid="new-secret"]`)
		if !strings.HasPrefix(secret, "whsec_") || len(secret) < 6+43 || secret == first["webhook_secret"] {
			t.Fatalf("new secret %q", secret)
		}
	})

	t.Run("SignOut", func(t *testing.T) {
		browse(t, ctx, chromedp.Click(css(`form[action="/logout"] button`)), chromedp.WaitVisible(css(`form[action="/login"]`)))
		browse(t, ctx, chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(css(`form[action="/login"]`)))
		location := read(t, ctx, chromedp.Location())
		if !strings.HasSuffix(location, "/login?next=%2F") {
			t.Fatalf("after sign-out, / is at %s", location)
		}
	})
}

// stepTimeout bounds one browse or read, so that a missing element fails
// the test instead of hanging it.
const stepTimeout = 30 * time.Second

// browse runs steps in the tab, failing the test on the first error.
func browse(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// read runs one action that returns a value.
func read[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	return v
}

func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return read(t, ctx, chromedp.TextContent(css(sel)))
}

func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// payoutRows reads the withdrawals table in page order.
type payoutTable struct {
	ids    []string
	status map[string]string // payout_id → the status cell's text
}

func payoutRows(t *testing.T, ctx context.Context) payoutTable {
	t.Helper()
	rows := read(t, ctx, chromedp.Evaluate[[][2]string](`[...document.querySelectorAll('tr[data-testid="payout-row"]')].map(r =>
		[r.dataset.payoutId, r.querySelector('[data-testid="status"]').textContent])`))
	out := payoutTable{status: make(map[string]string)}
	for _, r := range rows {
		out.ids = append(out.ids, r[0])
		out.status[r[0]] = r[1]
	}
	return out
}
