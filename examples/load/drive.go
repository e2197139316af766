package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// request is one API call of a workload. answered, if set, learns the
// envelope's code and when the answer arrived; unanswered, if set, learns
// that no answer came (a transport error, or the run ended first), so the
// request's outcome is unknown until it is sent again. data, if set, is a
// pointer the envelope's data is decoded into before answered is called.
type request struct {
	method, path, key string
	body              []byte
	data              any
	answered          func(code int, at time.Time)
	unanswered        func()
}

// result is what one workload measured.
type result struct {
	Name            string  `json:"name"`
	Requests        int     `json:"requests"`
	OK              int     `json:"ok"`      // answered code 0
	Refused         int     `json:"refused"` // answered another code
	Errors          int     `json:"errors"`  // no answer, or not an envelope
	FirstError      string  `json:"first_error,omitempty"`
	Rate            float64 `json:"rate"` // requests per second
	P50             millis  `json:"p50_ms"`
	P99             millis  `json:"p99_ms"`
	Max             millis  `json:"max_ms"`
	RatioToBaseline float64 `json:"ratio_to_baseline,omitempty"`
	ServerCPU       float64 `json:"server_cpu_cores,omitempty"` // cores busy on average during the load
	ServerRSSMiB    float64 `json:"server_rss_peak_mib,omitempty"`
	LoadCPU         float64 `json:"load_cpu_cores,omitempty"` // this process: its clients and webhook receiver
	// ServerCPUPerOp and DatabaseCPUPerOp are the CPU time, in
	// microseconds, that the server and the database's processes (on
	// PostgreSQL) spent per request, webhook deliveries included;
	// CPUPerOpXBaseline is their sum as a multiple of the bare handler's.
	ServerCPUPerOp    float64   `json:"server_cpu_us_per_request,omitempty"`
	DatabaseCPUPerOp  float64   `json:"database_cpu_us_per_request,omitempty"`
	CPUPerOpXBaseline float64   `json:"cpu_per_request_x_baseline,omitempty"`
	Delivery          *delivery `json:"delivery,omitempty"`
	// Batch is set for the batch workloads, whose requests each carry
	// many payouts.
	Batch *batchFigures `json:"batch,omitempty"`

	loadEnded    time.Time
	elapsed      time.Duration // from the first request to the last answer
	serverUsed   time.Duration // the server's CPU over the workload and its settle
	databaseUsed time.Duration // the database processes', on PostgreSQL
}

// batchFigures are a batch workload's figures per payout rather than per
// request (a request is one batch). Payouts counts the items of every
// answered batch, accepted or refused; CPU per payout is the server's and
// the database's CPU over the workload, its webhooks' delivery and the
// server's settling afterwards, divided by Payouts.
type batchFigures struct {
	Size              int     `json:"batch_size"`
	Clients           int     `json:"clients"`
	Payouts           int     `json:"payouts"`
	Accepted          int     `json:"accepted"`
	Refused           int     `json:"refused"`
	PayoutRate        float64 `json:"payouts_per_second"`
	ServerCPUPerOp    float64 `json:"server_cpu_us_per_payout,omitempty"`
	DatabaseCPUPerOp  float64 `json:"database_cpu_us_per_payout,omitempty"`
	CPUPerOpXBaseline float64 `json:"cpu_per_payout_x_baseline,omitempty"`
}

// millis marshals a duration as fractional milliseconds.
type millis time.Duration

func (m millis) MarshalJSON() ([]byte, error) {
	return json.Marshal(float64(m) / float64(time.Millisecond))
}

func (m millis) String() string { return time.Duration(m).Round(10 * time.Microsecond).String() }

// newHTTPClient keeps one idle connection per client, so the load is
// keep-alive throughout and never measures connection setup.
func newHTTPClient(clients int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = clients
	tr.MaxIdleConnsPerHost = clients
	tr.MaxConnsPerHost = clients
	tr.Proxy = nil
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// loop is how a workload's closed loop runs: its clients, its bounds, and
// whether the requests still in flight when the time is up are waited for
// (finish) rather than cut off.
type loop struct {
	clients  int
	duration time.Duration
	requests int
	finish   bool
}

// loop is the command line's closed loop, as most workloads run it.
func (o options) loop() loop {
	return loop{clients: o.clients, duration: o.duration, requests: o.requests}
}

// drive runs a closed loop: l.clients goroutines each send next(client)'s
// request, wait for its answer, and send the next, until l.duration passes
// or l.requests have been sent.
func drive(ctx context.Context, l loop, baseURL string, next func(client int) request) result {
	runCtx, cancel := context.WithTimeout(ctx, l.duration)
	defer cancel()
	reqCtx := runCtx // the requests end with the run, unless they finish
	if l.finish {
		reqCtx = ctx
	}
	hc := newHTTPClient(l.clients)
	defer hc.CloseIdleConnections()

	var (
		mu      sync.Mutex
		all     []time.Duration
		res     result
		budget  = l.requests
		limited = l.requests > 0
	)
	take := func() bool {
		if !limited {
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		if budget == 0 {
			return false
		}
		budget--
		return true
	}

	start := time.Now()
	var wg sync.WaitGroup
	for c := range l.clients {
		wg.Go(func() {
			var lat []time.Duration
			var ok, refused, failed int
			var firstErr string
			for runCtx.Err() == nil && take() {
				req := next(c)
				t0 := time.Now()
				code, err := call(reqCtx, hc, baseURL, req)
				at := time.Now()
				if err != nil && req.unanswered != nil {
					req.unanswered()
				}
				if reqCtx.Err() != nil && err != nil {
					break // cut off by the end of the run, not an answer
				}
				lat = append(lat, at.Sub(t0))
				switch {
				case err != nil:
					failed++
					if firstErr == "" {
						firstErr = err.Error()
					}
				case code == 0:
					ok++
				default:
					refused++
				}
				if err == nil && req.answered != nil {
					req.answered(code, at)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			all = append(all, lat...)
			res.OK += ok
			res.Refused += refused
			res.Errors += failed
			if res.FirstError == "" {
				res.FirstError = firstErr
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.loadEnded = time.Now()
	res.Requests = len(all)
	res.Rate = float64(len(all)) / res.elapsed.Seconds()
	if len(all) > 0 {
		slices.Sort(all)
		res.P50 = millis(percentile(all, 0.50))
		res.P99 = millis(percentile(all, 0.99))
		res.Max = millis(all[len(all)-1])
	}
	return res
}

// percentile of sorted durations, nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// call sends one request and returns the envelope's code.
func call(ctx context.Context, hc *http.Client, baseURL string, r request) (int, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, baseURL+r.path, body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+r.key)
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// Data holds r.data's pointer, so the decoder fills what it points to
	// (and leaves it alone for a null); without one it skips the data.
	env := struct {
		Code *int `json:"code"`
		Data any  `json:"data"`
	}{Data: r.data}
	if r.data == nil {
		env.Data = &skip{}
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.Code == nil {
		return 0, &httpError{status: resp.StatusCode}
	}
	return *env.Code, nil
}

// skip decodes any JSON value into nothing.
type skip struct{}

func (*skip) UnmarshalJSON([]byte) error { return nil }

// httpError is an answer that is not the API's envelope.
type httpError struct{ status int }

func (e *httpError) Error() string {
	return "HTTP " + http.StatusText(e.status) + ": not a JSON envelope"
}

// getJSON calls the API and decodes the envelope's data into v; a code other
// than 0 is an error.
func getJSON(ctx context.Context, hc *http.Client, baseURL string, r request, v any) error {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, baseURL+r.path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+r.key)
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var env struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return &httpError{status: resp.StatusCode}
	}
	if env.Code != 0 {
		return &apiError{path: r.path, code: env.Code, message: env.Message}
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(env.Data, v)
}

// apiError is an answer with a code other than 0.
type apiError struct {
	path    string
	code    int
	message string
}

func (e *apiError) Error() string {
	return e.path + ": code " + strconv.Itoa(e.code) + ": " + e.message
}
