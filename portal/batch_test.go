package portal_test

import (
	"bytes"
	"fmt"
	"html"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/payoutkit/payoutkit"
)

const batchHeader = "payout_id,amount,asset,network,address,payer_id\n"

func batchLine(id, amount, payer string) string {
	return id + "," + amount + ",USDT,TRON," + tronAddress + "," + payer + "\n"
}

// postMultipart posts fields and, unless file is nil, a file part named
// "file", as a browser posts a form with enctype="multipart/form-data".
func (b *browser) postMultipart(path string, fields url.Values, file []byte) *response {
	b.h.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, vs := range fields {
		for _, v := range vs {
			_ = mw.WriteField(k, v)
		}
	}
	if file != nil {
		fw, _ := mw.CreateFormFile("file", "payouts.csv")
		_, _ = fw.Write(file)
	}
	_ = mw.Close()
	req, err := http.NewRequestWithContext(b.h.ctx, http.MethodPost, b.h.srv.URL+path, &body)
	if err != nil {
		b.h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return b.do(req)
}

// uploadBatch posts a file to the batch page, as its upload form does.
func (b *browser) uploadBatch(csrf, file string, allOrNothing bool) *response {
	b.h.t.Helper()
	fields := url.Values{"csrf_token": {csrf}}
	if allOrNothing {
		fields.Set("all_or_nothing", "on")
	}
	return b.postMultipart("/withdrawals/batch", fields, []byte(file))
}

var (
	confirmFormRe = regexp.MustCompile(`(?s)<form[^>]*data-testid="confirm-batch"[^>]*>(.*?)</form>`)
	hiddenRe      = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)
)

// confirmFields are the hidden fields of a preview's confirm form, or nil
// when it has none.
func confirmFields(body string) url.Values {
	m := confirmFormRe.FindStringSubmatch(body)
	if m == nil {
		return nil
	}
	fields := url.Values{}
	for _, f := range hiddenRe.FindAllStringSubmatch(m[1], -1) {
		fields.Set(f[1], html.UnescapeString(f[2]))
	}
	return fields
}

func count(body, testid string) int {
	return strings.Count(body, `data-testid="`+testid+`"`)
}

// batchState is what a test checks was (not) created: the batches and the
// payouts of the workspace.
func (h *harness) batchState(ws string) (batches, payouts int) {
	h.t.Helper()
	bs, err := h.engine.PayoutBatches(h.ctx, ws, payoutkit.PageRequest{})
	if err != nil {
		h.t.Fatal(err)
	}
	ps, err := h.engine.ListPayouts(h.ctx, ws, payoutkit.ListPayoutsRequest{})
	if err != nil {
		h.t.Fatal(err)
	}
	return len(bs.Items), len(ps.Items)
}

func (h *harness) wantNothingCreated(ws string) {
	h.t.Helper()
	if bs, ps := h.batchState(ws); bs != 0 || ps != 0 {
		h.t.Fatalf("%d batches and %d payouts were created; want none", bs, ps)
	}
}

var resultCodeRe = regexp.MustCompile(`<tr data-testid="batch-row" data-payout-id="([^"]+)"[^>]*>(?s:.*?)data-testid="result">(\d+)<`)

// resultCodes reads a result page's codes by payout_id.
func resultCodes(body string) map[string]string {
	out := map[string]string{}
	for _, m := range resultCodeRe.FindAllStringSubmatch(body, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// TestBatchUploadPreviewConfirm: an admin uploads a file, reads the
// preview (nothing created yet), confirms, and reads the result; a second
// confirm of the same preview replays the batch.
func TestBatchUploadPreviewConfirm(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Batches")
	ws := nw.Workspace.ID
	h.fund(ws, "ord-1", "100.00", "buyer")
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)

	b.get("/withdrawals").wantStatus(t, http.StatusOK).wantContains(t, `href="/withdrawals/batch"`)
	b.get("/withdrawals/batch").wantStatus(t, http.StatusOK).
		wantContains(t, `enctype="multipart/form-data"`, `name="file" type="file"`, "No batches yet.")

	file := batchHeader + batchLine("po-1", "10.00", "alice") + batchLine("po-2", "20.50", "bob") + batchLine("po-3", "90.00", "carol")
	preview := b.uploadBatch(csrf, file, false).wantStatus(t, http.StatusOK)
	if n := count(preview.body, "preview-row"); n != 3 {
		t.Fatalf("%d preview rows; want 3\n%s", n, preview.body)
	}
	preview.wantContains(t, `data-testid="batch-total">120.50<`)
	if count(preview.body, "batch-row") != 0 || count(preview.body, "batch-id") != 0 {
		t.Fatal("the preview shows a result")
	}
	h.wantNothingCreated(ws)

	fields := confirmFields(preview.body)
	if fields == nil || fields.Get("batch_id") == "" || fields.Get("csv") == "" {
		t.Fatalf("no confirm form with a batch_id and the rows:\n%s", preview.body)
	}
	if m := confirmFormRe.FindString(preview.body); strings.Contains(m, `type="text"`) || strings.Contains(m, `type="file"`) {
		t.Fatalf("the confirm form has more than hidden fields:\n%s", m)
	}

	result := b.postMultipart("/withdrawals/batch", fields, nil).wantStatus(t, http.StatusOK)
	batchID := fields.Get("batch_id")
	result.wantContains(t, `data-testid="batch-id">`+batchID+`<`, `data-testid="batch-accepted">2<`, `data-testid="batch-refused">1<`,
		`data-testid="batch-accepted-amount">30.50<`, `href="/withdrawals/po-1"`, "Insufficient available balance")
	if got, want := fmt.Sprint(resultCodes(result.body)), "map[po-1:0 po-2:0 po-3:40000]"; got != want {
		t.Fatalf("result codes %s; want %s\n%s", got, want, result.body)
	}
	if bs, ps := h.batchState(ws); bs != 1 || ps != 2 {
		t.Fatalf("%d batches, %d payouts; want 1 and 2", bs, ps)
	}

	// The same confirm again, posted URL-encoded this time: a replay.
	again := b.post("/withdrawals/batch", fields).wantStatus(t, http.StatusOK).wantContains(t, "nothing was paid twice")
	if fmt.Sprint(resultCodes(again.body)) != fmt.Sprint(resultCodes(result.body)) {
		t.Fatalf("the replay shows other results:\n%s", again.body)
	}
	if bs, ps := h.batchState(ws); bs != 1 || ps != 2 {
		t.Fatalf("after a second confirm: %d batches, %d payouts; want 1 and 2", bs, ps)
	}
	if bal, _ := h.engine.Balance(h.ctx, ws); bal.Available.String() != "69.50" {
		t.Fatalf("available %s; want 69.50 (debited once)", bal.Available)
	}

	// The batches list links the result page, which reads it back; each
	// payout's page links its batch.
	list := b.get("/withdrawals/batch").wantStatus(t, http.StatusOK)
	list.wantContains(t, `data-testid="batch-list-row" data-batch-id="`+batchID+`"`, `href="/withdrawals/batch/`+batchID+`"`)
	b.get("/withdrawals/batch/"+batchID).wantStatus(t, http.StatusOK).
		wantContains(t, `data-testid="batch-id">`+batchID+`<`, `data-testid="batch-accepted">2<`)
	b.get("/withdrawals/po-1").wantStatus(t, http.StatusOK).
		wantContains(t, `data-testid="payout-batch">`+batchID+`<`, `href="/withdrawals/batch/`+batchID+`"`)
	b.get("/withdrawals/batch/batch-none").wantStatus(t, http.StatusNotFound)
	b.get("/withdrawals/batch/"+url.PathEscape("bad id!")).wantStatus(t, http.StatusNotFound)

	// A new preview of the same file chooses another batch ID: the
	// payouts replay (same payout_ids), the balance is not touched.
	fields2 := confirmFields(b.uploadBatch(csrf, file, false).wantStatus(t, http.StatusOK).body)
	if fields2.Get("batch_id") == batchID {
		t.Fatal("two previews share a batch ID")
	}
	b.postMultipart("/withdrawals/batch", fields2, nil).wantStatus(t, http.StatusOK)
	if bal, _ := h.engine.Balance(h.ctx, ws); bal.Available.String() != "69.50" {
		t.Fatalf("available %s after replayed payouts; want 69.50", bal.Available)
	}
}

// TestBatchRoles: the batch page is an admin's; other roles get 403 for
// GET, upload and confirm, and nothing is created. Every role reads a
// batch's result.
func TestBatchRoles(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Roles")
	ws := nw.Workspace.ID
	h.fund(ws, "ord-1", "100.00", "buyer")
	admin := h.browser()
	adminCSRF := admin.signIn(nw.StaffEmail, nw.StaffPassword)
	file := batchHeader + batchLine("po-1", "10.00", "alice")
	fields := confirmFields(admin.uploadBatch(adminCSRF, file, false).wantStatus(t, http.StatusOK).body)

	for _, role := range []payoutkit.Role{payoutkit.RoleDeveloper, payoutkit.RoleViewer} {
		email := string(role) + "@example.com"
		b := h.browser()
		csrf := b.signIn(email, h.addStaff(ws, email, role))
		b.get("/withdrawals/batch").wantStatus(t, http.StatusForbidden)
		b.uploadBatch(csrf, file, false).wantStatus(t, http.StatusForbidden)
		own := url.Values{}
		for k, v := range fields {
			own[k] = v
		}
		own.Set("csrf_token", csrf)
		b.postMultipart("/withdrawals/batch", own, nil).wantStatus(t, http.StatusForbidden)
		b.post("/withdrawals/batch", own).wantStatus(t, http.StatusForbidden)
		if page := b.get("/withdrawals").wantStatus(t, http.StatusOK); strings.Contains(page.body, `href="/withdrawals/batch"`) {
			t.Errorf("%s: the withdrawals page links the batch page", role)
		}
		h.wantNothingCreated(ws)
	}

	// No session: to the sign-in page, nothing created.
	anon := h.browser()
	anon.get("/withdrawals/batch").wantStatus(t, http.StatusSeeOther)
	anon.postMultipart("/withdrawals/batch", fields, nil).wantStatus(t, http.StatusSeeOther)
	// The admin's confirm without the CSRF token: 403.
	bad := url.Values{}
	for k, v := range fields {
		bad[k] = v
	}
	bad.Del("csrf_token")
	admin.postMultipart("/withdrawals/batch", bad, nil).wantStatus(t, http.StatusForbidden)
	bad.Set("csrf_token", "forged")
	admin.postMultipart("/withdrawals/batch", bad, []byte(file)).wantStatus(t, http.StatusForbidden)
	h.wantNothingCreated(ws)

	admin.postMultipart("/withdrawals/batch", fields, nil).wantStatus(t, http.StatusOK)
	viewer := h.browser()
	viewer.signIn("v2@example.com", h.addStaff(ws, "v2@example.com", payoutkit.RoleViewer))
	viewer.get("/withdrawals/batch/"+fields.Get("batch_id")).wantStatus(t, http.StatusOK).
		wantContains(t, `data-testid="batch-row" data-payout-id="po-1"`)
}

// TestBatchFileRefusals: each bad file gets a clear message and creates
// nothing; a spreadsheet's export (BOM, CRLF, quoted commas) is fine.
func TestBatchFileRefusals(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Files")
	ws := nw.Workspace.ID
	h.fund(ws, "ord-1", "100.00", "buyer")
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)

	var many strings.Builder
	many.WriteString(batchHeader)
	for i := range 1001 {
		many.WriteString(batchLine(fmt.Sprintf("po-%d", i), "0.01", "p"))
	}
	huge := batchHeader + strings.Repeat(batchLine("po-x", "1.00", strings.Repeat("p", 100)), 5<<20/160)
	for _, c := range []struct {
		name, file, message string
	}{
		{"no header", batchLine("po-1", "1.00", "a"), "first line must be the header payout_id,amount,asset,network,address,payer_id"},
		{"reordered header", "amount,payout_id,asset,network,address,payer_id\n" + batchLine("po-1", "1.00", "a"), "in this order"},
		{"empty", "", "the file is empty"},
		{"header only", batchHeader, "no payout below its header"},
		{"1,001 rows", many.String(), "more than 1,000 payouts"},
		{"5 MiB", huge, "larger than 2 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := b.uploadBatch(csrf, c.file, false).wantStatus(t, http.StatusBadRequest)
			resp.wantContains(t, `data-testid="batch-error"`, html.EscapeString(c.message), "Nothing was created")
			if count(resp.body, "preview-row") != 0 || confirmFields(resp.body) != nil {
				t.Fatal("a refused file has a preview")
			}
			h.wantNothingCreated(ws)
		})
	}

	// Rows with problems: a preview marking each, no confirm form.
	file := batchHeader +
		batchLine("po-1", "10.00", "alice") +
		batchLine("po-2", "10.00", `"=HYPERLINK(""http://evil"")"`) +
		"po-3,10.00,USDT,TRON\n" +
		"po-4,10.00,USDT,TRON,nope,dave\n" +
		batchLine("po-5", "abc", "erin") +
		batchLine("po-1", "1.00", "twice")
	resp := b.uploadBatch(csrf, file, false).wantStatus(t, http.StatusBadRequest)
	if n := count(resp.body, "preview-row"); n != 6 {
		t.Fatalf("%d preview rows; want 6\n%s", n, resp.body)
	}
	if confirmFields(resp.body) != nil {
		t.Fatal("a preview with problems offers to confirm")
	}
	resp.wantContains(t, "5 of 6 rows have problems", "payer_id: Starts like a spreadsheet formula",
		"This row has 4 columns; it needs 6", "address:", "amount:", "payout_id: is also line 2&#39;s")
	if n := strings.Count(resp.body, `data-invalid="true"`); n != 5 {
		t.Fatalf("%d rows marked invalid; want 5", n)
	}
	if strings.Contains(resp.body, "<a href=\"http://evil") {
		t.Fatal("a cell was not escaped")
	}
	h.wantNothingCreated(ws)

	// A spreadsheet's export: BOM, CRLF, quoted fields with commas.
	export := "\uFEFF" + strings.ReplaceAll(batchHeader+batchLine("po-1", "1.00", `"Smith, John"`)+batchLine(`"po-2"`, `"2.00"`, `"a ""quoted"" name"`), "\n", "\r\n")
	resp = b.uploadBatch(csrf, export, false).wantStatus(t, http.StatusOK)
	resp.wantContains(t, `data-testid="batch-total">3.00<`, "Smith, John", "a &#34;quoted&#34; name")
	fields := confirmFields(resp.body)
	b.postMultipart("/withdrawals/batch", fields, nil).wantStatus(t, http.StatusOK)
	if p, err := h.engine.Payout(h.ctx, ws, "po-1"); err != nil || p.PayerID != "Smith, John" || p.BatchID != fields.Get("batch_id") {
		t.Fatalf("po-1: %+v, %v", p, err)
	}
	if p, _ := h.engine.Payout(h.ctx, ws, "po-2"); p.PayerID != `a "quoted" name` {
		t.Fatalf("po-2's payer_id %q", p.PayerID)
	}
}

// TestBatchConfirmJudgesAgain: a confirm whose rows were changed on the way
// is judged as an upload is; an all-or-nothing batch with a refusal
// creates nothing.
func TestBatchConfirmJudgesAgain(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Judge")
	ws := nw.Workspace.ID
	h.fund(ws, "ord-1", "15.00", "buyer")
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)
	file := batchHeader + batchLine("po-1", "10.00", "alice") + batchLine("po-2", "10.00", "bob")
	fields := confirmFields(b.uploadBatch(csrf, file, true).wantStatus(t, http.StatusOK).body)
	if fields.Get("all_or_nothing") != "true" {
		t.Fatalf("all_or_nothing %q; want true", fields.Get("all_or_nothing"))
	}

	tampered := url.Values{}
	for k, v := range fields {
		tampered[k] = v
	}
	tampered.Set("csv", batchHeader+batchLine("po-1", "10.00", "=cmd"))
	b.postMultipart("/withdrawals/batch", tampered, nil).wantStatus(t, http.StatusBadRequest).wantContains(t, "formula")
	tampered.Set("csv", "garbage")
	b.postMultipart("/withdrawals/batch", tampered, nil).wantStatus(t, http.StatusBadRequest).wantContains(t, "upload the file again")
	tampered.Set("csv", fields.Get("csv"))
	tampered.Set("batch_id", "bad id")
	b.postMultipart("/withdrawals/batch", tampered, nil).wantStatus(t, http.StatusBadRequest)
	h.wantNothingCreated(ws)

	// 15.00 pays po-1, not po-2: all or nothing creates nothing.
	resp := b.postMultipart("/withdrawals/batch", fields, nil).wantStatus(t, http.StatusConflict)
	resp.wantContains(t, "Nothing was created", "payouts[1]: Insufficient available balance")
	h.wantNothingCreated(ws)
	// Funded, the same confirm is judged afresh and passes.
	h.fund(ws, "ord-2", "10.00", "buyer")
	b.postMultipart("/withdrawals/batch", fields, nil).wantStatus(t, http.StatusOK).wantContains(t, `data-testid="batch-accepted">2<`)
}

// TestBatchStepUp: an admin with two-factor sign-in on confirms with a
// fresh code; a second confirm of the same batch replays without one.
func TestBatchStepUp(t *testing.T) {
	h, clock := newClockedHarness(t)
	nw := h.workspace("Step-up")
	ws := nw.Workspace.ID
	h.fund(ws, "ord-1", "100.00", "buyer")
	b := h.browser()
	csrf := b.signIn(nw.StaffEmail, nw.StaffPassword)
	secret, _ := b.enableTwoFactor(csrf, clock)

	preview := b.uploadBatch(csrf, batchHeader+batchLine("po-1", "10.00", "alice"), false).wantStatus(t, http.StatusOK)
	if m := confirmFormRe.FindString(preview.body); !strings.Contains(m, `name="totp"`) {
		t.Fatalf("the confirm form asks for no code:\n%s", m)
	}
	fields := confirmFields(preview.body)
	b.postMultipart("/withdrawals/batch", fields, nil).wantStatus(t, http.StatusForbidden).wantContains(t, "fresh two-factor code")
	fields.Set("totp", "000000")
	b.postMultipart("/withdrawals/batch", fields, nil).wantStatus(t, http.StatusForbidden)
	h.wantNothingCreated(ws)

	fields.Set("totp", totpCode(t, secret, clock.Now()))
	b.postMultipart("/withdrawals/batch", fields, nil).wantStatus(t, http.StatusOK).wantContains(t, `data-testid="batch-accepted">1<`)
	// The code is used up; the second confirm replays all the same.
	b.postMultipart("/withdrawals/batch", fields, nil).wantStatus(t, http.StatusOK).wantContains(t, "nothing was paid twice")
	if bs, ps := h.batchState(ws); bs != 1 || ps != 1 {
		t.Fatalf("%d batches, %d payouts; want 1 and 1", bs, ps)
	}
}
