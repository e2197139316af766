package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBatchPayoutsInBrowser drives the portal's batch payouts (contract,
// section 12) in Chromium as an admin would: from the withdrawals page to
// the batch page, a CSV file chosen in the file input, the preview's rows
// and total, the confirm, the result's rows and codes (checked against
// /v1/payouts/batch/info), the batches list and a payout's link to its
// batch; then the files that must be refused, each with a clear message
// and nothing created, and a viewer refused the page.
func TestBatchPayoutsInBrowser(t *testing.T) {
	ctx := newBrowser(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "payoutkit.db")
	s := startServer(t, "-db", db)
	first := decodeObject(t, s.stdout.String())
	key, email, password, ws := first["api_key"].(string), first["staff_email"].(string), first["staff_password"].(string), first["workspace_id"].(string)
	mustAPI(t, s, key, "POST", "/v1/orders", `{"order_id":"ord-1","amount":"100.00","payer_id":"alice"}`)
	mustAPI(t, s, key, "POST", "/v1/sandbox/orders/pay", `{"order_id":"ord-1"}`)
	viewer := decodeObject(t, mustCommand(t, "staff", "add", "-db", db, "-workspace", ws, "-email", "viewer@example.com"))

	available := func(t *testing.T) string {
		t.Helper()
		return mustAPI(t, s, key, "GET", "/v1/balance", "")["available"].(string)
	}
	unknown := func(t *testing.T, payoutIDs ...string) {
		t.Helper()
		for _, id := range payoutIDs {
			if c, _ := apiData(t, s, key, "POST", "/v1/payouts/info", fmt.Sprintf(`{"payout_id":%q}`, id)); c != 40400 {
				t.Fatalf("payout %s exists (code %d); want none", id, c)
			}
		}
	}
	signIn := func(t *testing.T, email, password string) {
		t.Helper()
		browse(t, ctx,
			chromedp.Navigate(s.url+"/login"),
			chromedp.WaitVisible(css(`form[action="/login"]`)),
			chromedp.SendKeys(css(`input[name="email"]`), email),
			chromedp.SendKeys(css(`input[name="password"]`), password),
			chromedp.Click(css(`form[action="/login"] button[type="submit"]`)),
			chromedp.WaitVisible(css(`form[action="/logout"]`)),
		)
	}
	// submit clicks a form's button and waits for the next page's sel: the
	// page is marked first, so that the old page's elements never match.
	submit := func(t *testing.T, button, sel string) {
		t.Helper()
		browse(t, ctx,
			chromedp.Evaluate[chromedp.Void](`document.body.dataset.old = "1"`),
			chromedp.Click(css(button)),
			chromedp.WaitReady(css(`body:not([data-old])`)),
			chromedp.WaitVisible(css(`body:not([data-old]) `+sel)),
		)
	}
	// upload chooses a file in the upload form and sends it, waiting for
	// the preview or the message.
	upload := func(t *testing.T, name, content string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		browse(t, ctx, chromedp.SetUploadFiles(css(`form[data-testid="upload-batch"] input[name="file"]`), []string{path}))
		submit(t, `form[data-testid="upload-batch"] button[type="submit"]`, `[data-testid="batch-preview"], [data-testid="batch-error"]`)
	}
	count := func(t *testing.T, sel string) int {
		t.Helper()
		return read(t, ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
	}
	// fitsPhone checks that the page in the tab fits a small phone's
	// window, as TestPortalFitsTheWindow checks the pages a GET shows.
	fitsPhone := func(t *testing.T) {
		t.Helper()
		browse(t, ctx, chromedp.EmulateViewport(360, 900))
		f := read(t, ctx, chromedp.Evaluate[fit](measureFit))
		browse(t, ctx, chromedp.EmulateViewport(1280, 900))
		if f.ScrollWidth > f.InnerWidth || len(f.Outside) > 0 {
			t.Errorf("at 360 px: document %d px wide; sticking out: %v", f.ScrollWidth, f.Outside)
		}
	}
	line := func(id, amount, payer string) string {
		return id + ",\"" + amount + "\",USDT,TRON,TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t," + payer
	}
	const header = "payout_id,amount,asset,network,address,payer_id"

	signIn(t, email, password)
	browse(t, ctx,
		chromedp.Navigate(s.url+"/withdrawals"),
		chromedp.WaitVisible(css(`a[data-testid="batch-link"]`)),
		chromedp.Click(css(`a[data-testid="batch-link"]`)),
		chromedp.WaitVisible(css(`form[data-testid="upload-batch"] input[type="file"][name="file"]`)),
	)

	var batchID string
	t.Run("UploadPreviewConfirm", func(t *testing.T) {
		// A spreadsheet's export: a byte order mark, CRLF line ends,
		// quoted fields with commas. po-b3 is more than the balance left.
		file := "\uFEFF" + strings.Join([]string{header,
			line("po-b1", "10.00", `"Smith, John"`), line("po-b2", "20.50", "bob"), line("po-b3", "90.00", "carol"),
		}, "\r\n") + "\r\n"
		upload(t, "payouts.csv", file)
		if n := count(t, `tr[data-testid="preview-row"]`); n != 3 {
			t.Fatalf("%d preview rows; want 3", n)
		}
		if got := textOf(t, ctx, `[data-testid="batch-total"]`); got != "120.50" {
			t.Fatalf("batch-total %q; want 120.50", got)
		}
		errs := read(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('tr[data-testid="preview-row"] [data-testid="row-error"]')].map(c => c.textContent.trim())`))
		if strings.Join(errs, ",") != "OK,OK,OK" {
			t.Fatalf("the rows' checks %q; want OK", errs)
		}
		if !strings.Contains(textOf(t, ctx, `tr[data-testid="preview-row"][data-payout-id="po-b1"]`), "Smith, John") {
			t.Fatal("the quoted payer_id is not shown whole")
		}
		if n := count(t, `tr[data-testid="batch-row"]`); n != 0 {
			t.Fatalf("the preview shows %d batch rows", n)
		}
		if n := count(t, `form[data-testid="confirm-batch"] input:not([type="hidden"]), form[data-testid="confirm-batch"] select, form[data-testid="confirm-batch"] textarea`); n != 0 {
			t.Fatalf("the confirm form has %d fields that are not hidden", n)
		}
		unknown(t, "po-b1", "po-b2", "po-b3")
		fitsPhone(t)
		if got := available(t); got != "100.00" {
			t.Fatalf("available %s before the confirm; want 100.00", got)
		}

		submit(t, `form[data-testid="confirm-batch"] button[type="submit"]`, `[data-testid="batch-id"]`)
		batchID = textOf(t, ctx, `[data-testid="batch-id"]`)
		rows := read(t, ctx, chromedp.Evaluate[[][2]string](`[...document.querySelectorAll('tr[data-testid="batch-row"]')].map(r =>
			[r.dataset.payoutId, r.querySelector('[data-testid="result"]').textContent.trim()])`))
		if got := fmt.Sprint(rows); got != "[[po-b1 0] [po-b2 0] [po-b3 40000]]" {
			t.Fatalf("batch rows %s", got)
		}
		info := mustAPI(t, s, key, "POST", "/v1/payouts/batch/info", fmt.Sprintf(`{"batch_id":%q}`, batchID))
		if info["accepted"] != 2.0 || info["refused"] != 1.0 || info["accepted_amount"] != "30.50" {
			t.Fatalf("batch/info: %v", info)
		}
		for i, r := range info["results"].([]any) {
			res := r.(map[string]any)
			if res["payout_id"] != rows[i][0] || fmt.Sprint(res["code"]) != rows[i][1] {
				t.Fatalf("batch/info result %d is %v; the page shows %v", i, res, rows[i])
			}
		}
		if got := textOf(t, ctx, `[data-testid="batch-accepted-amount"]`); got != "30.50" {
			t.Fatalf("accepted amount %q", got)
		}
		if got := available(t); got != "69.50" {
			t.Fatalf("available %s; want 69.50", got)
		}
	})

	t.Run("BatchesListAndPayoutLink", func(t *testing.T) {
		browse(t, ctx,
			chromedp.Navigate(s.url+"/withdrawals/batch"),
			chromedp.WaitVisible(css(`tr[data-testid="batch-list-row"]`)),
		)
		if got := read(t, ctx, chromedp.AttributeValue(css(`tr[data-testid="batch-list-row"]`), "data-batch-id")); got.Value != batchID {
			t.Fatalf("the batches list shows %q; want %q", got.Value, batchID)
		}
		submit(t, `tr[data-testid="batch-list-row"] a`, `[data-testid="batch-id"]`)
		if got := textOf(t, ctx, `[data-testid="batch-id"]`); got != batchID {
			t.Fatalf("the list links %q; want %q", got, batchID)
		}
		submit(t, `tr[data-testid="batch-row"][data-payout-id="po-b1"] a`, `[data-testid="payout-batch"]`)
		if got := textOf(t, ctx, `[data-testid="payout-batch"]`); got != batchID {
			t.Fatalf("po-b1's page names batch %q; want %q", got, batchID)
		}
	})

	t.Run("RefusedFiles", func(t *testing.T) {
		browse(t, ctx, chromedp.Navigate(s.url+"/withdrawals/batch"), chromedp.WaitVisible(css(`form[data-testid="upload-batch"]`)))
		var many strings.Builder
		many.WriteString(header + "\n")
		for i := range 1001 {
			many.WriteString(line(fmt.Sprintf("po-m%d", i), "0.01", "m") + "\n")
		}
		huge := header + "\n" + strings.Repeat(line("po-h", "1.00", strings.Repeat("h", 100))+"\n", 5<<20/150)
		for _, c := range []struct {
			name, file, message string
			ids                 []string
		}{
			{"missing-header.csv", line("po-r1", "1.00", "a") + "\n", "first line must be the header " + header, []string{"po-r1"}},
			{"reordered-header.csv", "amount,payout_id,asset,network,address,payer_id\n1.00,po-r2,USDT,TRON,TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t,a\n", "in this order", []string{"po-r2"}},
			{"1001-rows.csv", many.String(), "more than 1,000 payouts", []string{"po-m0", "po-m1000"}},
			{"5mib.csv", huge, "larger than 2 MiB", []string{"po-h"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				upload(t, c.name, c.file)
				if msg := textOf(t, ctx, `[data-testid="batch-error"]`); !strings.Contains(msg, c.message) || !strings.Contains(msg, "Nothing was created") {
					t.Fatalf("the message %q lacks %q", msg, c.message)
				}
				if n := count(t, `tr[data-testid="preview-row"], form[data-testid="confirm-batch"]`); n != 0 {
					t.Fatalf("a refused file shows a preview (%d elements)", n)
				}
				unknown(t, c.ids...)
			})
		}

		// A formula cell: the row's message, and no confirm form.
		upload(t, "formula.csv", header+"\n"+line("po-f1", "1.00", "fine")+"\n"+line("po-f2", "1.00", `"=HYPERLINK(""http://evil.example"",""x"")"`)+"\n")
		if n := count(t, `tr[data-testid="preview-row"]`); n != 2 {
			t.Fatalf("%d preview rows; want 2", n)
		}
		if msg := textOf(t, ctx, `tr[data-testid="preview-row"][data-payout-id="po-f2"] [data-testid="row-error"]`); !strings.Contains(msg, "payer_id") || !strings.Contains(msg, "formula") {
			t.Fatalf("the formula row says %q", msg)
		}
		if n := count(t, `form[data-testid="confirm-batch"], tr[data-testid="preview-row"] a`); n != 0 {
			t.Fatal("a file with a formula cell can be confirmed, or its cell became a link")
		}
		unknown(t, "po-f1", "po-f2")
		fitsPhone(t)
		if got := available(t); got != "69.50" {
			t.Fatalf("available %s after refused files; want 69.50", got)
		}
	})

	t.Run("ViewerRefused", func(t *testing.T) {
		browse(t, ctx, chromedp.Click(css(`form[action="/logout"] button`)), chromedp.WaitVisible(css(`form[action="/login"]`)))
		signIn(t, viewer["staff_email"].(string), viewer["staff_password"].(string))
		browse(t, ctx, chromedp.Navigate(s.url+"/withdrawals"), chromedp.WaitVisible(css(`tr[data-testid="payout-row"]`)))
		if n := count(t, `a[href="/withdrawals/batch"]`); n != 0 {
			t.Fatal("a viewer is offered the batch page")
		}
		browse(t, ctx, chromedp.Navigate(s.url+"/withdrawals/batch"), chromedp.WaitVisible(css(`.error-code`)))
		if got := textOf(t, ctx, `.error-code`); got != "Error 403" {
			t.Fatalf("a viewer's batch page: %q", got)
		}
		if n := count(t, `form[data-testid="upload-batch"]`); n != 0 {
			t.Fatal("a viewer is shown the upload form")
		}
		// The result page is a page to read.
		browse(t, ctx, chromedp.Navigate(s.url+"/withdrawals/batch/"+batchID), chromedp.WaitVisible(css(`[data-testid="batch-id"]`)))
	})
}
