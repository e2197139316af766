package portal_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
)

// BenchmarkPayoutsPerDayMillion is the dashboard chart's one read alone
// in the million-payout workspace: over 30 days that hold all of them, and
// over 30 days from the day of the last 50,000 (a million payouts over
// about 20 months). It reads the day counters, one row a day, so its cost
// no longer follows the payouts in its window.
func BenchmarkPayoutsPerDayMillion(b *testing.B) {
	fx, err := bigWorkspace()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("window=1000000", func(b *testing.B) {
		for b.Loop() {
			days, err := fx.engine.PayoutsPerDay(b.Context(), fx.ws, 30)
			if err != nil || len(days) != 30 {
				b.Fatal(len(days), err)
			}
		}
	})
	b.Run("window=50000", func(b *testing.B) {
		// The fixture's payouts are one a second from 2026-01-01: the
		// last 50,000 start 50,000 seconds before the last one.
		// The store counts whole days: from the first of from's day.
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		last := start.Add(benchPayouts * time.Second)
		from := last.Add(-(50_000 - 1) * time.Second)
		want := benchPayouts - int(from.Truncate(24*time.Hour).Sub(start)/time.Second) + 1
		for b.Loop() {
			days, err := fx.store.PayoutsPerDay(b.Context(), fx.ws, from, from.AddDate(0, 0, 30))
			if n := total(days); err != nil || n != want {
				b.Fatal(n, err)
			}
		}
	})
}

func total(days []payoutkit.DayCount) int {
	n := 0
	for _, d := range days {
		n += d.Total()
	}
	return n
}

// countingWriter is a ResponseWriter that keeps nothing of the body but
// its size and its lines, so that a benchmark of a streamed answer
// measures the server's memory, not the client's.
type countingWriter struct {
	header       http.Header
	code         int
	bytes, lines int64
}

func (w *countingWriter) Header() http.Header { return w.header }
func (w *countingWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	w.bytes += int64(len(p))
	w.lines += int64(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

// BenchmarkWithdrawalsCSVMillion exports a million payouts, reporting the
// bytes the server allocates per row: a constant, whatever the export's
// length, since rows are read 500 at a time and written as they come.
func BenchmarkWithdrawalsCSVMillion(b *testing.B) {
	fx, err := bigWorkspace()
	if err != nil {
		b.Fatal(err)
	}
	var rows, size int64
	var before, after runtime.MemStats
	runtime.GC()
	peakBefore := peakRSS()
	runtime.ReadMemStats(&before)
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "/withdrawals.csv", nil)
		req.AddCookie(fx.cookie)
		w := &countingWriter{header: http.Header{}}
		fx.handler.ServeHTTP(w, req)
		if w.code != http.StatusOK || w.lines != benchPayouts+1 {
			b.Fatalf("GET /withdrawals.csv: %d with %d lines; want %d", w.code, w.lines, benchPayouts+1)
		}
		rows += benchPayouts
		size += w.bytes
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(rows), "B/row")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(rows), "allocs/row")
	b.ReportMetric(float64(size)/float64(b.N), "csv-bytes/op")
	if peak := peakRSS(); peak > 0 {
		// The process's peak resident memory before the exports (the
		// fixture's build) and after them: flat when exports stream.
		b.ReportMetric(float64(peakBefore)/(1<<20), "peak-RSS-before-MB")
		b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-after-MB")
	}
}

// peakRSS is the process's peak resident set size (VmHWM), 0 where
// /proc does not say.
func peakRSS() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
