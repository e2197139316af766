package main

import (
	"context"
	"encoding/csv"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// TestPortalExportAndChartInBrowser: in a real Chromium, the dashboard shows
// the chart of payouts per day with its legend, counting the payouts the
// API made, and the withdrawals list's "Download CSV" link downloads the
// rows of the list's filter as a file.
func TestPortalExportAndChartInBrowser(t *testing.T) {
	f := newPortalFixture(t)
	browse(t, f.ctx, chromedp.Navigate(f.s.url+"/"), chromedp.WaitVisible(css(`[data-testid="chart"]`)))
	legend := textOf(t, f.ctx, `[data-testid="chart-legend"]`)
	for _, word := range []string{"Completed", "Failed", "In progress"} {
		if !strings.Contains(legend, word) {
			t.Fatalf("the chart's legend %q lacks %q", legend, word)
		}
	}
	type chartState struct {
		Days, Completed, Failed, InProgress, Bars int
		Width                                     float64
	}
	chart := read(t, f.ctx, chromedp.Evaluate[chartState](`(() => {
		const s = {Days: 0, Completed: 0, Failed: 0, InProgress: 0, Bars: 0};
		for (const d of document.querySelectorAll('[data-testid="chart-day"]')) {
			s.Days++; s.Completed += +d.dataset.completed; s.Failed += +d.dataset.failed; s.InProgress += +d.dataset.inProgress;
		}
		s.Bars = document.querySelectorAll('[data-testid="chart"] rect').length;
		s.Width = document.querySelector('[data-testid="chart"]').getBoundingClientRect().width;
		return s;
	})()`))
	// The fixture's payouts: two completed, one failed, one in progress.
	if chart.Days != 30 || chart.Completed != 2 || chart.Failed != 1 || chart.InProgress != 1 || chart.Bars == 0 || chart.Width < 300 {
		t.Fatalf("the chart shows %+v; want 30 days counting 2 completed, 1 failed and 1 in progress, drawn", chart)
	}

	dir := t.TempDir()
	events := true
	if _, err := chromedp.CallBrowser(f.ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir, EventsEnabled: &events,
	}); err != nil {
		t.Fatal(err)
	}
	browse(t, f.ctx,
		chromedp.Navigate(f.s.url+"/withdrawals?status=completed"),
		chromedp.WaitVisible(css(`[data-testid="csv-link"]`)),
	)
	// Listen before the click, so that a quick download is not missed.
	wait, cancel := context.WithTimeout(f.ctx, stepTimeout)
	defer cancel()
	progress := chromedp.BrowserEvents(wait, browser.DownloadProgress)
	browse(t, f.ctx, chromedp.Click(css(`[data-testid="csv-link"]`)))
	file := waitForDownload(t, progress, dir)
	if !strings.HasPrefix(filepath.Base(file), "withdrawals-") || filepath.Ext(file) != ".csv" {
		t.Fatalf("downloaded %s; want withdrawals-<date>.csv", filepath.Base(file))
	}
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if err != nil {
		t.Fatalf("the download is not CSV: %v\n%s", err, body)
	}
	if len(rows) != 3 || rows[0][0] != "payout_id" || rows[1][0] != "po-1002" || rows[2][0] != "po-1001" || rows[1][1] != "completed" {
		t.Fatalf("downloaded rows %q; want the header and the two completed payouts, newest first", rows)
	}
}

// waitForDownload returns the path of the first file the browser finishes
// downloading into dir, as its progress events tell.
func waitForDownload(t *testing.T, progress iter.Seq2[browser.EventDownloadProgress, error], dir string) string {
	t.Helper()
	for ev, err := range progress {
		if err != nil {
			t.Fatalf("waiting for the download: %v", err)
		}
		switch ev.State {
		case browser.DownloadProgressStateCompleted:
			entries, err := os.ReadDir(dir)
			if err != nil || len(entries) != 1 {
				t.Fatalf("download directory: %v, %v", entries, err)
			}
			return filepath.Join(dir, entries[0].Name())
		case browser.DownloadProgressStateCanceled:
			t.Fatal("the download was cancelled")
		}
	}
	t.Fatal("no download completed")
	return ""
}
