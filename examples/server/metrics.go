package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/payoutkit/payoutkit"
)

// metricsListening, when set (by tests), is told the address the metrics
// listener listens on.
var metricsListening func(net.Addr)

// metrics is serve's Prometheus registry and the series that the library
// packages' hooks feed (httpserver.Options.ObserveRequest,
// payoutkit.Config.ObservePayout, the store's WithCommitObserver,
// payoutkit.DeliveryConfig.ObserveAttempt). The libraries know nothing of
// Prometheus. A nil *metrics (no -metrics-addr) hands out nil hooks.
type metrics struct {
	reg            *prometheus.Registry
	requests       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	created        prometheus.Counter
	settled        *prometheus.CounterVec
	commitSize     prometheus.Histogram
	commitDuration prometheus.Histogram
	attempts       *prometheus.CounterVec
}

// unmatchedRoute is the route label of API requests that matched no route
// (40400, 40500): never their raw path, so that the label's values stay few.
const unmatchedRoute = "unmatched"

// newMetrics registers every series but the outbox's (watchOutbox adds
// them once the store is open) on a registry of its own, with the standard
// Go and process collectors.
func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payoutkit_http_requests_total",
			Help: "API requests answered, by route pattern (\"unmatched\" for none) and envelope code (0 for a success).",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "payoutkit_http_request_duration_seconds",
			Help:    "Time to answer an API request, by route pattern.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route"}),
		created: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "payoutkit_payouts_created_total",
			Help: "Payouts created (debited and submitted) by this instance; replays are not counted.",
		}),
		settled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payoutkit_payouts_settled_total",
			Help: "Payouts settled by this instance, by final status (completed or failed).",
		}, []string{"status"}),
		commitSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "payoutkit_commit_batch_size",
			Help:    "Writes carried by each group-commit transaction.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 9), // 1 to 256, the largest batch
		}),
		commitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "payoutkit_commit_duration_seconds",
			Help:    "Time from a group-commit transaction's BEGIN until its writers were answered.",
			Buckets: prometheus.ExponentialBuckets(.00025, 2, 14), // 250 µs to 2 s
		}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "payoutkit_webhook_attempts_total",
			Help: "Webhook delivery attempts recorded by this instance, by result: delivered, retry (will be attempted again), failed (given up) or not_sent (the workspace had no webhook URL).",
		}, []string{"result"}),
	}
	// Series that exist from the start, at 0, rather than at their first event.
	for _, s := range []payoutkit.PayoutStatus{payoutkit.PayoutCompleted, payoutkit.PayoutFailed} {
		m.settled.WithLabelValues(string(s))
	}
	for _, r := range []string{"delivered", "retry", "failed", "not_sent"} {
		m.attempts.WithLabelValues(r)
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.duration, m.created, m.settled, m.commitSize, m.commitDuration, m.attempts,
	)
	return m
}

// storeOptions returns the store's options that feed the commit series.
func (m *metrics) storeOptions() []storeOption {
	if m == nil {
		return nil
	}
	return []storeOption{withCommitObserver(func(writes int, d time.Duration) {
		m.commitSize.Observe(float64(writes))
		m.commitDuration.Observe(d.Seconds())
	})}
}

// observeRequest is the API's httpserver.Options.ObserveRequest.
func (m *metrics) observeRequest() func(route string, code payoutkit.Code, d time.Duration) {
	if m == nil {
		return nil
	}
	return func(route string, code payoutkit.Code, d time.Duration) {
		if route == "" {
			route = unmatchedRoute
		}
		m.requests.WithLabelValues(route, strconv.Itoa(int(code))).Inc()
		m.duration.WithLabelValues(route).Observe(d.Seconds())
	}
}

// observePayout is the engine's payoutkit.Config.ObservePayout.
func (m *metrics) observePayout() func(payoutkit.Payout) {
	if m == nil {
		return nil
	}
	return func(p payoutkit.Payout) {
		switch p.Status {
		case payoutkit.PayoutSubmitted:
			m.created.Inc()
		case payoutkit.PayoutCompleted, payoutkit.PayoutFailed:
			m.settled.WithLabelValues(string(p.Status)).Inc()
		}
	}
}

// observeAttempt is the engine's payoutkit.DeliveryConfig.ObserveAttempt.
func (m *metrics) observeAttempt() func(payoutkit.DeliveryAttempt, payoutkit.EventDelivery) {
	if m == nil {
		return nil
	}
	return func(_ payoutkit.DeliveryAttempt, next payoutkit.EventDelivery) {
		switch next.EventState() {
		case payoutkit.EventStateDelivered:
			m.attempts.WithLabelValues("delivered").Inc()
		case payoutkit.EventStatePending:
			m.attempts.WithLabelValues("retry").Inc()
		case payoutkit.EventStateFailed:
			m.attempts.WithLabelValues("failed").Inc()
		case payoutkit.EventStateNotSent:
			m.attempts.WithLabelValues("not_sent").Inc()
		}
	}
}

// serveMetrics adds the outbox's series, listens on addr and serves GET
// /metrics there (and, with withPprof, Go's profiles under /debug/pprof/)
// until the returned stop is called. The listener is separate from the
// API's, so that neither is ever reachable where the API is published.
func (m *metrics) serveMetrics(ctx context.Context, addr string, withPprof bool, store payoutkit.Store, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	outbox := newOutboxCollector(ctx, store, log)
	m.reg.MustRegister(outbox)
	errLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:            errLog,
		Registry:            m.reg, // counts the handler's own errors
		MaxRequestsInFlight: 4,
		Timeout:             30 * time.Second,
	}))
	if withPprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      2 * time.Minute, // longer than a CPU profile's default 30 s
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          errLog,
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	log.Info("serving metrics", "addr", ln.Addr().String(), "path", "/metrics")
	if metricsListening != nil {
		metricsListening(ln.Addr())
	}
	return func() {
		_ = srv.Close() // a scrape has nothing to drain
		<-served
		cancel()
		outbox.readers.Wait() // no reading outlives the store
	}, nil
}

// How the outbox's series are read.
const (
	// outboxTTL is how long one reading of the outbox serves scrapes.
	// Counting delivered and failed events scans the events table (the
	// pending ones are counted and the oldest found through the due
	// index): about 1.4 s on SQLite, 0.7-1.5 s on PostgreSQL, with a
	// million events on the 2-core CI machine. One reading per TTL however
	// many scrapers ask keeps that cost bounded.
	outboxTTL = 10 * time.Second
	// outboxWait is how long a scrape waits for a reading under way.
	outboxWait = 2 * time.Second
	// outboxQueryTimeout bounds one reading, which goes on after the
	// scrape that started it stopped waiting; the next scrape gets it.
	outboxQueryTimeout = 30 * time.Second
	// outboxMaxAge is the oldest reading still served while newer ones
	// fail or take long; older, the series are left out of the scrape.
	outboxMaxAge = 2 * time.Minute
)

// outboxHealther is what the outbox collector reads; every payoutkit.Store
// is one.
type outboxHealther interface {
	OutboxHealth(ctx context.Context) (payoutkit.OutboxHealth, error)
}

// outboxCollector exports the store's OutboxHealth at scrape time:
// payoutkit_outbox_events{state} and
// payoutkit_outbox_oldest_pending_age_seconds. At most one reading runs at a
// time, and a reading serves every scrape for outboxTTL.
type outboxCollector struct {
	ctx    context.Context // ends readings at shutdown
	store  outboxHealther
	log    *slog.Logger
	now    func() time.Time
	events *prometheus.Desc
	oldest *prometheus.Desc

	mu      sync.Mutex
	last    payoutkit.OutboxHealth
	lastAt  time.Time     // when last was read; zero before the first reading
	reading chan struct{} // closed when the reading under way ends; nil when none
	readers sync.WaitGroup
}

func newOutboxCollector(ctx context.Context, store outboxHealther, log *slog.Logger) *outboxCollector {
	return &outboxCollector{
		ctx: ctx, store: store, log: log, now: time.Now,
		events: prometheus.NewDesc("payoutkit_outbox_events",
			"Webhook events in the outbox (every instance's), by delivery state: pending, delivered (kept for -event-retention), failed (given up on) or not_sent (the workspace had no webhook URL). Read at most every 10 s.",
			[]string{"state"}, nil),
		oldest: prometheus.NewDesc("payoutkit_outbox_oldest_pending_age_seconds",
			"Age of the oldest pending webhook event (0 when none is pending).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.events
	ch <- c.oldest
}

// Collect implements prometheus.Collector: it sends the latest reading,
// starting a new one (and waiting for it up to outboxWait) when the latest
// is older than outboxTTL. Without a reading of the last outboxMaxAge it
// sends nothing, so that the series go missing rather than stale.
func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	if c.reading == nil && c.now().Sub(c.lastAt) >= outboxTTL {
		done := make(chan struct{})
		c.reading = done
		c.readers.Go(func() { c.read(done) })
	}
	reading := c.reading
	c.mu.Unlock()
	if reading != nil {
		t := time.NewTimer(outboxWait)
		select {
		case <-reading:
		case <-t.C:
		}
		t.Stop()
	}
	c.mu.Lock()
	h, at := c.last, c.lastAt
	c.mu.Unlock()
	now := c.now()
	if at.IsZero() || now.Sub(at) > outboxMaxAge {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.events, prometheus.GaugeValue, float64(h.Pending), "pending")
	ch <- prometheus.MustNewConstMetric(c.events, prometheus.GaugeValue, float64(h.Delivered), "delivered")
	ch <- prometheus.MustNewConstMetric(c.events, prometheus.GaugeValue, float64(h.Failed), "failed")
	ch <- prometheus.MustNewConstMetric(c.events, prometheus.GaugeValue, float64(h.NotSent), "not_sent")
	age := 0.0
	if !h.OldestPending.IsZero() {
		age = max(now.Sub(h.OldestPending).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age)
}

// read takes one reading of the outbox and closes done.
func (c *outboxCollector) read(done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithTimeout(c.ctx, outboxQueryTimeout)
	defer cancel()
	h, err := c.store.OutboxHealth(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reading = nil
	if err != nil {
		if c.ctx.Err() == nil {
			c.log.Warn("reading the outbox for metrics", "err", err)
		}
		return
	}
	c.last, c.lastAt = h, c.now()
}
