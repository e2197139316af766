package portal_test

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/portal"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// clockHarness is a harness whose engine reads the time from a clock the
// test sets, so that payouts are created on the days it chooses.
type clockHarness struct {
	*harness
	now atomic.Pointer[time.Time]
}

func newClockHarness(t *testing.T, start time.Time) *clockHarness {
	t.Helper()
	c := &clockHarness{}
	c.now.Store(&start)
	c.harness = serveHarness(t, memstore.New(), func() time.Time { return *c.now.Load() }, portal.Options{})
	return c
}

func (c *clockHarness) set(t time.Time) { c.now.Store(&t) }

// readCSV parses an export, failing unless it is a CSV attachment.
func readCSV(t *testing.T, r *response) [][]string {
	t.Helper()
	r.wantStatus(t, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Fatalf("Content-Type %q; want text/csv", ct)
	}
	if cd := r.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, `attachment; filename="`) || !strings.HasSuffix(cd, `.csv"`) {
		t.Fatalf("Content-Disposition %q; want an attachment with a .csv filename", cd)
	}
	if csp := r.Header.Get("Content-Security-Policy"); csp == "" {
		t.Fatal("an export without the portal's headers")
	}
	rows, err := csv.NewReader(strings.NewReader(r.body)).ReadAll()
	if err != nil {
		t.Fatalf("the export is not CSV: %v\n%s", err, r.body)
	}
	return rows
}

var payoutHeader = "payout_id,status,amount,currency,asset,network,address,payer_id,txid,failure_reason,created_at,updated_at,asset_amount,network_fee,approval"

// TestWithdrawalsCSV exports more payouts than the engine lists in one
// batch: every one, newest first, each with the payout object's fields,
// and the page's filters (status, q, from, to) keep the same rows as the
// page.
func TestWithdrawalsCSV(t *testing.T) {
	day := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	h := newClockHarness(t, day)
	nw := h.workspace("Acme")
	ws := nw.Workspace.ID
	h.fund(ws, "fund", "100000.00", "")
	// 1,100 payouts over 11 days, 100 a day, each a second apart: more
	// than two batches of the export.
	const perDay, days = 100, 11
	for d := range days {
		for i := range perDay {
			h.set(day.AddDate(0, 0, d).Add(time.Duration(i) * time.Second))
			h.payout(ws, fmt.Sprintf("po-%02d-%03d", d, i), "1.00", fmt.Sprintf("payer-%d", i%2))
		}
	}
	h.set(day.AddDate(0, 0, days))
	if _, err := h.engine.CompletePayout(h.ctx, ws, "po-03-007", payoutkit.Completion{TxID: "0xabc"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.engine.FailPayout(h.ctx, ws, "po-04-008", "no route"); err != nil {
		t.Fatal(err)
	}
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)

	rows := readCSV(t, b.get("/withdrawals.csv"))
	if got := strings.Join(rows[0], ","); got != payoutHeader {
		t.Fatalf("header %q; want %q", got, payoutHeader)
	}
	if len(rows) != 1+perDay*days {
		t.Fatalf("%d rows; want the header and %d payouts", len(rows), perDay*days)
	}
	if rows[1][0] != "po-10-099" || rows[len(rows)-1][0] != "po-00-000" {
		t.Fatalf("first %s, last %s; want newest first", rows[1][0], rows[len(rows)-1][0])
	}
	seen := map[string]bool{}
	for _, r := range rows[1:] {
		seen[r[0]] = true
	}
	if len(seen) != perDay*days {
		t.Fatalf("%d distinct payouts; want %d", len(seen), perDay*days)
	}
	completed := map[string][]string{}
	for _, r := range rows[1:] {
		completed[r[0]] = r
	}
	want := []string{"po-03-007", "completed", "1.00", "USD", "USDT", "TRON", tronAddress, "payer-1", "0xabc", "",
		"2026-11-04T12:00:07Z", "2026-11-12T12:00:00Z", "", "", "none"}
	if got := completed["po-03-007"]; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("completed payout's row %q; want %q", got, want)
	}
	if got := completed["po-04-008"]; got[1] != "failed" || got[9] != "no route" {
		t.Fatalf("failed payout's row %q", got)
	}

	count := func(query string) int {
		t.Helper()
		return len(readCSV(t, b.get("/withdrawals.csv?"+query))) - 1
	}
	for _, c := range []struct {
		query string
		want  int
	}{
		{"status=failed", 1},
		{"status=completed", 1},
		{"status=submitted", perDay*days - 2},
		{"q=payer-0", perDay * days / 2},
		{"q=po-03-007", 1},
		{"from=2026-11-03&to=2026-11-04", 2 * perDay},
		{"from=2026-11-11", perDay},
		{"to=2026-11-01", perDay},
		{"from=2026-11-12", 0},
		{"q=payer-1&from=2026-11-05&to=2026-11-05", perDay / 2},
		{"status=failed&from=2026-11-06", 0},
		{"status=failed&from=2026-11-05&to=2026-11-05", 1},
	} {
		if got := count(c.query); got != c.want {
			t.Errorf("/withdrawals.csv?%s: %d rows; want %d", c.query, got, c.want)
		}
	}

	// The page keeps the same rows: its first page, and the link to the
	// export carries its filters.
	page := b.get("/withdrawals?from=2026-11-03&to=2026-11-03&status=submitted").wantStatus(t, http.StatusOK)
	if n := strings.Count(page.body, `data-testid="payout-row"`); n != 50 {
		t.Fatalf("%d rows on the filtered page; want 50", n)
	}
	if !strings.Contains(page.body, `data-payout-id="po-02-099"`) || strings.Contains(page.body, `data-payout-id="po-03-`) {
		t.Fatal("the filtered page shows payouts of other days")
	}
	page.wantContains(t, `data-testid="csv-link"`, `href="/withdrawals.csv?from=2026-11-03&amp;status=submitted&amp;to=2026-11-03"`,
		`href="/withdrawals?from=2026-11-03&amp;status=completed&amp;to=2026-11-03"`, `value="2026-11-03"`)
	next := between(page.body, `<a rel="next" href="`, `"`)
	if !strings.Contains(next, "from=2026-11-03") || !strings.Contains(next, "to=2026-11-03") {
		t.Fatalf("the next page %q drops the date filters", next)
	}
}

// TestDateFilterRefusals: a date that is not YYYY-MM-DD, or an end before
// the start, answers the page with its message and status 400, on the list
// and on its export alike.
func TestDateFilterRefusals(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	h.fund(nw.Workspace.ID, "fund", "10.00", "")
	h.payout(nw.Workspace.ID, "po-1", "1.00", "c")
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)
	for _, q := range []string{"from=yesterday", "to=2026-13-01", "from=2026-1-5", "from=2026-11-05T00:00:00Z", "from=2026-11-05&to=2026-11-04"} {
		for _, path := range []string{"/withdrawals?", "/withdrawals.csv?"} {
			page := b.get(path+q).wantStatus(t, http.StatusBadRequest)
			if !strings.Contains(page.body, "Enter a date as YYYY-MM-DD.") && !strings.Contains(page.body, "The end date must not be before the start date.") {
				t.Fatalf("%s%s: no message:\n%s", path, q, page.body)
			}
			if strings.Contains(page.body, `data-testid="payout-row"`) || strings.Contains(page.body, `data-testid="csv-link"`) {
				t.Fatalf("%s%s: a refused filter still lists", path, q)
			}
		}
	}
	b.get("/withdrawals.csv?status=pending").wantStatus(t, http.StatusBadRequest).wantContains(t, "Choose submitted, completed or failed.")
}

// TestCSVFormulaCells: a cell that a spreadsheet would run as a formula
// (starting with =, +, -, @, or with blanks before one of them, which an
// import that trims blanks would drop) is exported with a leading
// apostrophe; the rest are exported as they are.
func TestCSVFormulaCells(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	ws := nw.Workspace.ID
	h.fund(ws, "-1", "100.00", "@SUM(A1)")
	if _, _, err := h.engine.CreateOrder(h.ctx, ws, payoutkit.CreateOrderRequest{OrderID: "plain", Amount: "1.00", Description: "-2+3"}); err != nil {
		t.Fatal(err)
	}
	payers := []string{`=HYPERLINK("http://evil.example","x")`, "+1", "-1", "@cmd", "plain=1",
		" =1+2", "  \u00a0@cmd", "\u3000+1", " cust 42"}
	neutralised := map[int]bool{0: true, 1: true, 2: true, 3: true, 5: true, 6: true, 7: true}
	for i, p := range payers {
		h.payout(ws, fmt.Sprintf("po-%d", i), "1.00", p)
	}
	if _, err := h.engine.FailPayout(h.ctx, ws, "po-4", "=cmd|' /C calc'!A0"); err != nil {
		t.Fatal(err)
	}
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)
	byID := map[string][]string{}
	for _, r := range readCSV(t, b.get("/withdrawals.csv"))[1:] {
		byID[r[0]] = r
	}
	for i, p := range payers {
		want := p
		if neutralised[i] {
			want = "'" + p
		}
		if got := byID[fmt.Sprintf("po-%d", i)][7]; got != want {
			t.Errorf("payer_id %q exported as %q; want %q", p, got, want)
		}
	}
	if got := byID["po-4"][9]; got != `'=cmd|' /C calc'!A0` {
		t.Errorf("failure_reason exported as %q", got)
	}

	orders := readCSV(t, b.get("/payments.csv"))
	if got := strings.Join(orders[0], ","); got != "order_id,status,amount,currency,payer_id,description,created_at,updated_at,paid_at" {
		t.Fatalf("payments header %q", got)
	}
	if len(orders) != 3 || orders[1][0] != "plain" || orders[1][5] != "'-2+3" || orders[1][8] != "" ||
		orders[2][0] != "'-1" || orders[2][4] != "'@SUM(A1)" || orders[2][1] != "paid" || orders[2][8] == "" {
		t.Fatalf("payments export %q", orders)
	}
}

// TestPaymentsCSVEveryRow exports more orders than one batch, and the
// payments page links its export.
func TestPaymentsCSVEveryRow(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	for i := range 1020 {
		if _, _, err := h.engine.CreateOrder(h.ctx, nw.Workspace.ID, payoutkit.CreateOrderRequest{OrderID: fmt.Sprintf("o-%04d", i), Amount: "2.50"}); err != nil {
			t.Fatal(err)
		}
	}
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)
	b.get("/payments").wantStatus(t, http.StatusOK).wantContains(t, `href="/payments.csv" data-testid="csv-link"`)
	rows := readCSV(t, b.get("/payments.csv"))
	if len(rows) != 1021 || rows[1][0] != "o-1019" || rows[1020][0] != "o-0000" || rows[1][2] != "2.50" || rows[1][1] != "pending" {
		t.Fatalf("%d rows, first %q, last %q; want 1,020 orders newest first", len(rows), rows[1], rows[len(rows)-1])
	}
	// Without a session, an export is a sign-in like any page.
	anon := h.browser()
	if r := anon.get("/withdrawals.csv?status=failed"); r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/login?next=%2Fwithdrawals.csv%3Fstatus%3Dfailed" {
		t.Fatalf("anonymous export: %d %s", r.StatusCode, r.Header.Get("Location"))
	}
}
