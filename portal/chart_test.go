package portal_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
)

var chartDayRE = regexp.MustCompile(`<g data-testid="chart-day" data-day="([0-9-]+)" data-completed="(\d+)" data-failed="(\d+)" data-in-progress="(\d+)">`)

// TestDashboardChart seeds payouts on chosen days and reads the
// dashboard's chart: one bar a day for the last 30 days (today included),
// each with the day's completed, failed and in-progress payouts, a legend,
// and both axes labelled, drawn without inline styles.
func TestDashboardChart(t *testing.T) {
	today := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	h := newClockHarness(t, today)
	nw := h.workspace("Acme")
	ws := nw.Workspace.ID
	h.fund(ws, "fund", "1000.00", "")
	n := 0
	seed := func(at time.Time, completed, failed, submitted int) {
		t.Helper()
		h.set(at)
		for _, settle := range []struct {
			count int
			how   string
		}{{completed, "complete"}, {failed, "fail"}, {submitted, ""}} {
			for range settle.count {
				n++
				id := fmt.Sprintf("po-%d", n)
				h.payout(ws, id, "1.00", "c")
				var err error
				switch settle.how {
				case "complete":
					_, err = h.engine.CompletePayout(h.ctx, ws, id, payoutkit.Completion{TxID: "tx"})
				case "fail":
					_, err = h.engine.FailPayout(h.ctx, ws, id, "no")
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	seed(today.AddDate(0, 0, -30), 5, 0, 0)                      // 31 days ago: not shown
	seed(time.Date(2026, 10, 27, 0, 0, 0, 0, time.UTC), 2, 1, 0) // the first day shown, its first instant
	seed(time.Date(2026, 11, 10, 23, 59, 59, 0, time.UTC), 7, 2, 3)
	seed(today, 1, 0, 12)
	other := h.workspace("Other")
	h.fund(other.Workspace.ID, "fund", "10.00", "")
	h.payout(other.Workspace.ID, "x", "1.00", "c")
	h.set(today)

	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)
	page := b.get("/").wantStatus(t, http.StatusOK)
	page.wantContains(t, `data-testid="chart"`, `data-testid="chart-legend"`, ">Completed</li>", ">Failed</li>", ">In progress</li>",
		"Payouts created per day, Oct 27 to Nov 25, 2026 (UTC)", "28 payouts in the last 30 days",
		">Nov 25</text>", ">Nov 18</text>", ">0</text>", ">15</text>", ">payouts</text>")
	if strings.Contains(page.body, "style=") || strings.Contains(page.body, "<script") {
		t.Fatal("the dashboard has an inline style or script, which its Content-Security-Policy refuses")
	}
	days := chartDayRE.FindAllStringSubmatch(page.body, -1)
	if len(days) != 30 || days[0][1] != "2026-10-27" || days[29][1] != "2026-11-25" {
		t.Fatalf("%d days in the chart; want 30 from 2026-10-27 to 2026-11-25", len(days))
	}
	want := map[string]string{"2026-10-27": "2/1/0", "2026-11-10": "7/2/3", "2026-11-25": "1/0/12"}
	for _, d := range days {
		got := d[2] + "/" + d[3] + "/" + d[4]
		if w, ok := want[d[1]]; ok && got != w || !ok && got != "0/0/0" {
			t.Errorf("%s: completed/failed/in progress %s; want %s", d[1], got, cmpOr(w, "0/0/0"))
		}
	}
	// Every bar has its day's tooltip, readable without a script.
	page.wantContains(t, "<title>Nov 10: 7 completed, 2 failed, 3 in progress</title>")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestDashboardChartEmpty: a workspace without payouts still has its chart,
// with an axis from 0 and no bars.
func TestDashboardChartEmpty(t *testing.T) {
	h := newHarness(t)
	nw := h.workspace("Acme")
	b := h.browser()
	b.signIn(nw.StaffEmail, nw.StaffPassword)
	page := b.get("/").wantStatus(t, http.StatusOK)
	page.wantContains(t, `data-testid="chart"`, "0 payouts in the last 30 days", ">0</text>", ">4</text>")
	if strings.Contains(page.body, "<rect") {
		t.Fatal("bars in an empty chart")
	}
	if n := len(chartDayRE.FindAllString(page.body, -1)); n != 30 {
		t.Fatalf("%d days; want 30", n)
	}
}
