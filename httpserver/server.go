// Package httpserver serves the payoutkit /v1 HTTP API (the wire contract) over
// any payoutkit.Service: the JSON envelope, API-key authentication, body
// limits, request ids, an optional per-workspace rate limit, a limit on
// failed authentications per client address, request logs, and the
// sandbox endpoints when enabled.
//
// Mount the handler returned by New on an http.Server, or under a prefix of a
// larger mux with http.StripPrefix left out: every route lives under /v1.
package httpserver

import (
	"cmp"
	_ "embed"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit"
)

// MaxBodyBytes is the largest request body accepted (64 KiB); a larger one is
// answered with 41300.
const MaxBodyBytes = 64 << 10

// MaxBatchBodyBytes is the largest body of POST /v1/payouts/batch (1 MiB),
// room for payoutkit.MaxBatchItems payouts; every other path keeps
// MaxBodyBytes.
const MaxBatchBodyBytes = 1 << 20

// OpenAPI is the OpenAPI 3.1 description of the API, served at
// GET /v1/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte

// Options configures the handler. The zero value serves the API without the
// sandbox endpoints and without a rate limit.
type Options struct {
	// Logger receives one log line per request and the details of internal
	// errors. Defaults to slog.Default().
	Logger *slog.Logger
	// Sandbox mounts POST /v1/sandbox/orders/pay, /v1/sandbox/payouts/complete
	// and /v1/sandbox/payouts/fail, which settle orders and payouts by hand.
	// Defaults to false: those paths are 40400.
	Sandbox bool
	// RateLimit is the number of requests per second allowed per
	// workspace, whichever of its API keys they use (so that more keys do
	// not buy more rate), as a token bucket; excess requests get 42900 with
	// a Retry-After header. Defaults to 0: no limit.
	RateLimit float64
	// RateBurst is the bucket size of the rate limit. Defaults to RateLimit
	// rounded up, and at least 1.
	RateBurst int
	// AuthFailureLimit is how many failed authentications (40100) one
	// client address may make per AuthFailureWindow, as a token bucket.
	// Beyond it, every request of that address that needs a key is answered
	// 42900 with a Retry-After header, before its key is looked up, so that
	// guessing keys costs the database nothing. Successful requests never
	// count. IPv6 addresses count by their /64. Concurrent requests may
	// overshoot the limit by the number in flight. Defaults to
	// DefaultAuthFailureLimit (20); a negative value turns it off.
	AuthFailureLimit int
	// AuthFailureWindow is the window of AuthFailureLimit. Defaults to
	// DefaultAuthFailureWindow (1 minute).
	AuthFailureWindow time.Duration
	// AuthFailureAddresses bounds the client addresses the limit tracks at
	// once (about 150 bytes each); a new one evicts the address whose last
	// failure is the oldest. Defaults to DefaultAuthFailureAddresses (16384).
	AuthFailureAddresses int
	// ClientAddress returns a request's client address for
	// AuthFailureLimit. Defaults to the address an API key's allowlist
	// judges (ClientAddr over TrustedProxies): the host of r.RemoteAddr
	// unless TrustedProxies holds it. Behind a reverse proxy every client
	// has the proxy's address: set TrustedProxies, return the address the
	// proxy reports (from a header only the proxy can set), or turn the
	// limit off.
	ClientAddress func(r *http.Request) string
	// TrustedProxies are the address ranges of the reverse proxies in
	// front of the handler, whose X-Forwarded-For header names the client
	// (see ClientAddr). The client address decides what an API key's
	// address allowlist lets through, so a range here must hold only
	// proxies that set that header themselves. Defaults to none: the client
	// is the TCP peer, and X-Forwarded-For is ignored.
	TrustedProxies []netip.Prefix
	// Now is the clock of the rate limiters. Defaults to time.Now.
	Now func() time.Time
	// ObserveRequest, when set, is called once per request after its
	// answer is written (beside the request's log line), for metrics.
	// route is the matched pattern with its method, such as
	// "POST /v1/payouts" (a HEAD request counts under its GET route), or ""
	// when the path or the method matched no route (40400, 40500), so that
	// it never carries a raw path; code is the envelope code written (0 for
	// a success); d is the time from the request's arrival at the handler to
	// the end of its answer. It is called from the requests' goroutines,
	// concurrently, and must return quickly. Defaults to nil.
	ObserveRequest func(route string, code payoutkit.Code, d time.Duration)
}

// Handler is the /v1 API. It is safe for concurrent use.
type Handler struct {
	svc     payoutkit.Service
	log     *slog.Logger
	mux     *http.ServeMux
	allow   map[string][]string // path → methods, for 405 and Allow
	limiter *limiter
	// failures limits failed authentications per client address; nil
	// when off.
	failures *failureLimiter
	client   func(*http.Request) string
	// trusted are Options.TrustedProxies.
	trusted []netip.Prefix
	observe func(route string, code payoutkit.Code, d time.Duration)
}

var _ http.Handler = (*Handler)(nil)

// New returns the /v1 API over svc.
func New(svc payoutkit.Service, opts Options) *Handler {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	h := &Handler{svc: svc, log: opts.Logger, mux: http.NewServeMux(), allow: make(map[string][]string), observe: opts.ObserveRequest,
		trusted: slices.Clone(opts.TrustedProxies)}
	if opts.RateLimit > 0 {
		h.limiter = newLimiter(opts.RateLimit, opts.RateBurst, opts.Now)
	}
	if opts.AuthFailureLimit >= 0 {
		h.failures = newFailureLimiter(
			cmp.Or(opts.AuthFailureLimit, DefaultAuthFailureLimit),
			cmp.Or(max(opts.AuthFailureWindow, 0), DefaultAuthFailureWindow),
			cmp.Or(max(opts.AuthFailureAddresses, 0), DefaultAuthFailureAddresses), opts.Now)
		h.client = opts.ClientAddress
		if h.client == nil {
			h.client = h.clientHost
		}
	}
	h.route("GET /v1/openapi.yaml", h.openAPI)
	h.route("POST /v1/payouts", h.auth(payoutkit.ScopePayoutsWrite, h.createPayout))
	h.route("POST /v1/payouts/info", h.auth(readOnly, h.payoutInfo))
	h.route("POST /v1/payouts/list", h.auth(readOnly, h.listPayouts))
	// Paths of their own: the router matches exact paths, so "batch" is
	// never read as a payout_id.
	h.route("POST /v1/payouts/batch", h.auth(payoutkit.ScopePayoutsWrite, h.createPayoutBatch))
	h.route("POST /v1/payouts/batch/info", h.auth(readOnly, h.payoutBatchInfo))
	h.route("GET /v1/balance", h.balanceRoute())
	h.route("GET /v1/coins", h.auth(readOnly, h.coins))
	h.route("POST /v1/orders", h.auth(payoutkit.ScopeOrdersWrite, h.createOrder))
	h.route("POST /v1/orders/info", h.auth(readOnly, h.orderInfo))
	h.route("POST /v1/orders/list", h.auth(readOnly, h.listOrders))
	if opts.Sandbox {
		h.route("POST /v1/sandbox/orders/pay", h.auth(payoutkit.ScopeOrdersWrite, h.sandboxPayOrder))
		h.route("POST /v1/sandbox/payouts/complete", h.auth(payoutkit.ScopePayoutsWrite, h.sandboxCompletePayout))
		h.route("POST /v1/sandbox/payouts/fail", h.auth(payoutkit.ScopePayoutsWrite, h.sandboxFailPayout))
	}
	return h
}

// route registers an exact "METHOD /path" pattern.
func (h *Handler) route(pattern string, fn func(http.ResponseWriter, *http.Request) error) {
	method, path, _ := strings.Cut(pattern, " ")
	h.allow[path] = append(h.allow[path], method)
	if method == http.MethodGet {
		h.allow[path] = append(h.allow[path], http.MethodHead)
	}
	h.mux.Handle(pattern, handlerFunc(fn))
}

// handlerFunc is an endpoint: it writes a success itself, or returns the
// error that writeError turns into the envelope.
type handlerFunc func(http.ResponseWriter, *http.Request) error

func (f handlerFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := f(w, r); err != nil {
		writeError(w, r, err)
	}
}

// ServeHTTP routes the request. Paths match exactly (no redirects, no
// cleaning): an unknown path is 40400 and a known path with another method is
// 40500 with an Allow header, both in the envelope.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec, r := h.begin(w, r)
	defer h.finish(rec, r)
	defer recoverPanic(rec, r)

	methods, known := h.allow[r.URL.Path]
	switch {
	case !known || r.URL.RawPath != "":
		writeError(rec, r, errorf(payoutkit.CodeNotFound, "no such endpoint"))
		return
	case !slices.Contains(methods, r.Method):
		rec.Header().Set("Allow", strings.Join(methods, ", "))
		writeError(rec, r, errorf(payoutkit.CodeMethodNotAllowed, "method "+safeMethod(r.Method)+" is not allowed here; use "+methods[0]))
		return
	}
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet // served by the GET route
	}
	info(r).pattern = method + " " + r.URL.Path
	h.mux.ServeHTTP(rec, r)
}

// safeMethod keeps a method short and printable for a message.
func safeMethod(m string) string {
	if len(m) > 16 {
		m = m[:16]
	}
	return strings.Map(func(r rune) rune {
		if r < '!' || r > '~' {
			return '?'
		}
		return r
	}, m)
}

func (h *Handler) openAPI(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, err := w.Write(OpenAPI)
	if err != nil {
		return errWritten // the client went away; nothing left to send
	}
	return nil
}
