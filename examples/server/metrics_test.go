package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/payoutkit/payoutkit"
)

var metricsMu sync.Mutex // serializes use of the metricsListening hook

// startServerWithMetrics is startServer that also returns the metrics
// listener's URL ("" when serve opened none).
func startServerWithMetrics(t *testing.T, args ...string) (*server, string) {
	t.Helper()
	metricsMu.Lock()
	defer metricsMu.Unlock()
	addrs := make(chan net.Addr, 1)
	metricsListening = func(a net.Addr) { addrs <- a }
	defer func() { metricsListening = nil }()
	s := startServer(t, args...) // serve listens for metrics before it listens for the API
	select {
	case a := <-addrs:
		return s, "http://" + a.String()
	default:
		return s, ""
	}
}

// scrape fetches url and parses the Prometheus text exposition.
func scrape(t *testing.T, url string) (map[string]*dto.MetricFamily, error) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// value returns the value of the family's series with exactly the given
// labels (name, value pairs) and whether there is one: a counter's or
// gauge's value, a histogram's count.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		if len(m.GetLabel())*2 != len(labels) {
			continue
		}
		match := true
		for i, l := range m.GetLabel() {
			if l.GetName() != labels[2*i] || l.GetValue() != labels[2*i+1] {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// A scrape of -metrics-addr shows the API's requests by route and code,
// the payouts created and settled, the group commits, the webhook
// attempts, the outbox and the Go runtime; the API's listener serves no
// metrics.
func TestMetrics(t *testing.T) {
	var mu sync.Mutex
	received := 0
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received++
		mu.Unlock()
		io.WriteString(w, "success")
	}))
	defer hook.Close()
	db := filepath.Join(t.TempDir(), "payoutkit.db")
	s, metricsURL := startServerWithMetrics(t, "-db", db, "-metrics-addr", "127.0.0.1:0")
	if metricsURL == "" {
		t.Fatal("no metrics listener")
	}
	first := decodeObject(t, s.stdout.String())
	key := first["api_key"].(string)
	mustCommand(t, "webhook", "set", "-db", db, "-workspace", first["workspace_id"].(string), "-url", hook.URL)

	payout := `{"payout_id":"po-1","amount":"25.00","asset":"USDT","network":"TRON","address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","payer_id":"cust-42"}`
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/v1/orders", `{"order_id":"order-1","amount":"100.00"}`, 0},
		{"POST", "/v1/sandbox/orders/pay", `{"order_id":"order-1"}`, 0},
		{"POST", "/v1/payouts", payout, 0},
		{"POST", "/v1/payouts", payout, 0}, // a replay: no second payout
		{"POST", "/v1/payouts", strings.Replace(payout, `"po-1","amount":"25.00"`, `"po-2","amount":"500.00"`, 1), 40000},
		{"POST", "/v1/sandbox/payouts/complete", `{"payout_id":"po-1","txid":"0xsandbox1"}`, 0},
		{"GET", "/v1/payouts/po-1", "", 40400}, // no such route: counted as unmatched, never by path
	} {
		if _, env := call(t, c.method, s.url+c.path, key, c.body); code(env) != c.want {
			t.Fatalf("%s %s: %v; want code %d", c.method, c.path, env, c.want)
		}
	}

	// The request and delivery hooks run after their answers: scrape until
	// every series has caught up.
	type check struct {
		name   string
		labels []string
		ok     func(float64) bool
		want   string
	}
	atLeast := func(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }
	exactly := func(n float64) func(float64) bool { return func(v float64) bool { return v == n } }
	checks := []check{
		{"payoutkit_http_requests_total", []string{"code", "0", "route", "POST /v1/payouts"}, exactly(2), "2"},
		{"payoutkit_http_requests_total", []string{"code", "40000", "route", "POST /v1/payouts"}, exactly(1), "1"},
		{"payoutkit_http_requests_total", []string{"code", "0", "route", "POST /v1/sandbox/payouts/complete"}, exactly(1), "1"},
		{"payoutkit_http_requests_total", []string{"code", "40400", "route", unmatchedRoute}, exactly(1), "1"},
		{"payoutkit_http_request_duration_seconds", []string{"route", "POST /v1/payouts"}, exactly(3), "3 observations"},
		{"payoutkit_payouts_created_total", nil, exactly(1), "1 (the replay is not a payout)"},
		{"payoutkit_payouts_settled_total", []string{"status", "completed"}, exactly(1), "1"},
		{"payoutkit_payouts_settled_total", []string{"status", "failed"}, exactly(0), "0"},
		{"payoutkit_commit_batch_size", nil, atLeast(1), "at least 1 observation"},
		{"payoutkit_commit_duration_seconds", nil, atLeast(1), "at least 1 observation"},
		// order.paid, payout.submitted, payout.completed
		{"payoutkit_webhook_attempts_total", []string{"result", "delivered"}, atLeast(3), "at least 3"},
		{"payoutkit_webhook_attempts_total", []string{"result", "failed"}, exactly(0), "0"},
		{"payoutkit_webhook_attempts_total", []string{"result", "not_sent"}, exactly(0), "0"},
		{"payoutkit_outbox_events", []string{"state", "delivered"}, atLeast(0), "a value"},
		{"payoutkit_outbox_events", []string{"state", "pending"}, atLeast(0), "a value"},
		{"payoutkit_outbox_events", []string{"state", "failed"}, exactly(0), "0"},
		{"payoutkit_outbox_events", []string{"state", "not_sent"}, exactly(0), "0"},
		{"payoutkit_outbox_oldest_pending_age_seconds", nil, atLeast(0), "a value"},
		{"go_goroutines", nil, atLeast(1), "at least 1"},
		{"process_start_time_seconds", nil, atLeast(1), "a start time"},
	}
	var fams map[string]*dto.MetricFamily
	var failing []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		fams, err = scrape(t, metricsURL+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		failing = failing[:0]
		for _, c := range checks {
			if v, ok := value(fams, c.name, c.labels...); !ok || !c.ok(v) {
				failing = append(failing, fmt.Sprintf("%s%v = %v (present %v); want %s", c.name, c.labels, v, ok, c.want))
			}
		}
		if len(failing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(failing) > 0 {
		t.Fatalf("after 30 s of scrapes:\n%s", strings.Join(failing, "\n"))
	}
	// No series is labelled with a raw path.
	for _, m := range fams["payoutkit_http_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "route" && strings.Contains(l.GetValue(), "po-1") {
				t.Errorf("a route label carries a raw path: %q", l.GetValue())
			}
		}
	}

	// The API's listener serves no metrics, and the metrics listener
	// nothing but them.
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "payoutkit_http_requests_total") || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("the API listener answered /metrics with %s %q", resp.Status, body)
	}
	for _, path := range []string{"/", "/v1/balance", "/healthz", "/debug/pprof/"} { // profiles only with -pprof
		resp, err := http.Get(metricsURL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("the metrics listener answered %s with %s; want 404", path, resp.Status)
		}
	}
}

// The events of a workspace without a webhook URL are counted as not_sent,
// apart from failed, so that an alert on failed events does not fire for a
// server that was never given a URL.
func TestMetricsNotSent(t *testing.T) {
	db := filepath.Join(t.TempDir(), "payoutkit.db")
	s, metricsURL := startServerWithMetrics(t, "-db", db, "-metrics-addr", "127.0.0.1:0")
	if metricsURL == "" {
		t.Fatal("no metrics listener")
	}
	key := decodeObject(t, s.stdout.String())["api_key"].(string) // the first workspace has no URL
	payout := `{"payout_id":"po-1","amount":"25.00","asset":"USDT","network":"TRON","address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","payer_id":"cust-42"}`
	for _, c := range []struct{ path, body string }{
		{"/v1/orders", `{"order_id":"order-1","amount":"100.00"}`},
		{"/v1/sandbox/orders/pay", `{"order_id":"order-1"}`},
		{"/v1/payouts", payout},
		{"/v1/sandbox/payouts/fail", `{"payout_id":"po-1","reason":"bounced"}`},
	} {
		if _, env := call(t, "POST", s.url+c.path, key, c.body); code(env) != 0 {
			t.Fatalf("POST %s: %v", c.path, env)
		}
	}
	// order.paid, payout.submitted, payout.failed: none sent, none failed.
	want := map[string]float64{"not_sent": 3, "failed": 0, "pending": 0, "delivered": 0}
	var got map[string]float64
	deadline := time.Now().Add(30 * time.Second) // a reading serves scrapes for outboxTTL
	for {
		fams, err := scrape(t, metricsURL+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		got = map[string]float64{}
		for state := range want {
			if v, ok := value(fams, "payoutkit_outbox_events", "state", state); ok {
				got[state] = v
			}
		}
		if fmt.Sprint(got) == fmt.Sprint(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("payoutkit_outbox_events = %v; want %v", got, want)
	}
}

// An attempt that fails for want of a webhook URL (an event resent, or due
// after the URL was removed) is counted as not_sent, not failed.
func TestObserveAttemptNotSent(t *testing.T) {
	m := newMetrics()
	observe := m.observeAttempt()
	for _, next := range []payoutkit.EventDelivery{
		{State: payoutkit.DeliveryFailed, Attempts: 1, LastError: payoutkit.NoWebhookURLError},
		{State: payoutkit.DeliveryFailed, Attempts: 3, LastError: payoutkit.NoWebhookURLError},
		{State: payoutkit.DeliveryFailed, Attempts: 9, LastError: "connection refused"},
		{State: payoutkit.DeliveryPending, Attempts: 1, LastError: "connection refused"},
		{State: payoutkit.DeliveryDelivered, Attempts: 2},
	} {
		observe(payoutkit.DeliveryAttempt{Attempt: next.Attempts, Error: next.LastError}, next)
	}
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	for result, want := range map[string]float64{"not_sent": 2, "failed": 1, "retry": 1, "delivered": 1} {
		if v, ok := value(byName, "payoutkit_webhook_attempts_total", "result", result); !ok || v != want {
			t.Errorf("payoutkit_webhook_attempts_total{result=%q} = %v (present %v); want %v", result, v, ok, want)
		}
	}
}

// Without -metrics-addr no metrics listener opens and no hook is set; with
// PAYOUTKIT_METRICS_ADDR it does.
func TestMetricsOffByDefault(t *testing.T) {
	s, metricsURL := startServerWithMetrics(t, "-db", filepath.Join(t.TempDir(), "payoutkit.db"))
	if metricsURL != "" {
		t.Fatalf("a metrics listener at %s without -metrics-addr", metricsURL)
	}
	if strings.Contains(s.stderr.String(), "serving metrics") {
		t.Fatalf("serve logged a metrics listener without -metrics-addr:\n%s", s.stderr)
	}

	t.Setenv(envName("metrics-addr"), "127.0.0.1:0")
	_, metricsURL = startServerWithMetrics(t, "-db", filepath.Join(t.TempDir(), "payoutkit.db"))
	if metricsURL == "" {
		t.Fatal("no metrics listener with PAYOUTKIT_METRICS_ADDR")
	}
	fams, err := scrape(t, metricsURL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := value(fams, "payoutkit_payouts_created_total"); !ok {
		t.Fatalf("no payoutkit_payouts_created_total in %d families", len(fams))
	}
}

// With -pprof, the metrics listener serves Go's profiles, and only it: the
// API's listener does not. Without -metrics-addr, -pprof is refused.
func TestPprof(t *testing.T) {
	s, metricsURL := startServerWithMetrics(t, "-db", filepath.Join(t.TempDir(), "payoutkit.db"), "-metrics-addr", "127.0.0.1:0", "-pprof")
	if metricsURL == "" {
		t.Fatal("no metrics listener")
	}
	for _, c := range []struct {
		url  string
		want int
	}{
		{metricsURL + "/debug/pprof/goroutine?debug=1", http.StatusOK},
		{metricsURL + "/debug/pprof/heap", http.StatusOK},
		{s.url + "/debug/pprof/goroutine?debug=1", http.StatusNotFound},
	} {
		resp, err := http.Get(c.url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET %s: %s; want %d", c.url, resp.Status, c.want)
		}
		if c.want == http.StatusOK && len(body) == 0 {
			t.Errorf("GET %s: an empty profile", c.url)
		}
	}

	var stderr strings.Builder
	if err := run(t.Context(), []string{"serve", "-db", filepath.Join(t.TempDir(), "p.db"), "-pprof"}, io.Discard, &stderr); err == nil || !strings.Contains(stderr.String()+err.Error(), "-pprof needs -metrics-addr") {
		t.Errorf("serve -pprof without -metrics-addr: %v %s; want a usage error", err, stderr.String())
	}
}

// The outbox collector reads the store at most once per outboxTTL however
// often it is scraped, and leaves its series out without a recent reading.
func TestOutboxCollectorCaches(t *testing.T) {
	store := &countingOutbox{h: payoutkit.OutboxHealth{Pending: 2, Delivered: 5, Failed: 1, NotSent: 3}}
	c := newOutboxCollector(t.Context(), store, discardLogger())
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	store.h.OldestPending = now.Add(-90 * time.Second)
	collect := func() map[string]float64 {
		ch := make(chan prometheus.Metric, 8)
		c.Collect(ch)
		close(ch)
		out := map[string]float64{}
		for m := range ch {
			var d dto.Metric
			if err := m.Write(&d); err != nil {
				t.Fatal(err)
			}
			name := m.Desc().String()
			for _, l := range d.GetLabel() {
				name = l.GetValue()
			}
			if strings.Contains(name, "oldest_pending") {
				name = "oldest"
			}
			out[name] = d.GetGauge().GetValue()
		}
		return out
	}
	want := map[string]float64{"pending": 2, "delivered": 5, "failed": 1, "not_sent": 3, "oldest": 90}
	for range 3 {
		if got := collect(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("collected %v; want %v", got, want)
		}
	}
	if n := store.calls(); n != 1 {
		t.Fatalf("%d readings for 3 scrapes within the TTL; want 1", n)
	}
	now = now.Add(outboxTTL)
	store.set(payoutkit.OutboxHealth{Delivered: 8})
	if got := collect(); got["delivered"] != 8 || got["oldest"] != 0 || store.calls() != 2 {
		t.Fatalf("after the TTL: %v, %d readings; want a new reading", got, store.calls())
	}
	// Readings that fail leave the last one in place, up to outboxMaxAge.
	store.fail(context.DeadlineExceeded)
	now = now.Add(outboxMaxAge)
	if got := collect(); got["delivered"] != 8 {
		t.Fatalf("a failed reading within the max age: %v; want the last reading", got)
	}
	now = now.Add(time.Second)
	if got := collect(); len(got) != 0 {
		t.Fatalf("without a reading of the last %s: %v; want no series", outboxMaxAge, got)
	}
}

// countingOutbox is an OutboxHealth that counts its readings.
type countingOutbox struct {
	mu  sync.Mutex
	h   payoutkit.OutboxHealth
	err error
	n   int
}

func (o *countingOutbox) OutboxHealth(context.Context) (payoutkit.OutboxHealth, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n++
	return o.h, o.err
}

func (o *countingOutbox) calls() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n
}

func (o *countingOutbox) set(h payoutkit.OutboxHealth) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.h = h
}

func (o *countingOutbox) fail(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.err = err
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
