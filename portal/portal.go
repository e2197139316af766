// Package portal serves the staff portal: server-rendered pages where a
// merchant's staff sign in with e-mail and password and read their
// workspace's balance, payments, withdrawals and customers, and manage API
// keys and webhooks (contract, section 8).
//
// The portal runs over the engine (a Service, which *payoutkit.Engine
// implements), never over a store, so it shows exactly what the /v1 API
// shows, and its list pages carry the engine's sealed cursors in their
// query strings, which only the workspace and filter they were issued for
// accept. Sessions live in the engine's store, so a sign-out on one instance
// ends the session on every instance. Every page and form works with
// JavaScript turned off; templates and assets are embedded in the binary.
//
// Who the staff are (sign-in, sessions, two-factor sign-in, roles, step-up
// codes) is package staff's: the portal asks its Team, then hands the
// engine the caller as the actor of each change.
//
// Mount the Handler at "/" beside the /v1 API:
//
//	mux.Handle("/v1/", api)
//	mux.Handle("/", portal.New(engine, team, portal.Options{}))
package portal

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/staff"
)

// Service is what the portal asks of the engine. *payoutkit.Engine
// implements it.
type Service interface {
	// Reads.
	Workspace(ctx context.Context, workspaceID string) (payoutkit.Workspace, error)
	Balance(ctx context.Context, workspaceID string) (payoutkit.Balance, error)
	Payout(ctx context.Context, workspaceID, payoutID string) (payoutkit.Payout, error)
	ListPayouts(ctx context.Context, workspaceID string, req payoutkit.ListPayoutsRequest) (payoutkit.List[payoutkit.Payout], error)
	PayoutsPerDay(ctx context.Context, workspaceID string, days int) ([]payoutkit.DayCount, error)
	PayoutEvents(ctx context.Context, workspaceID, payoutID string) ([]payoutkit.EventLog, error)
	ListOrders(ctx context.Context, workspaceID string, req payoutkit.ListOrdersRequest) (payoutkit.List[payoutkit.Order], error)
	ListCustomers(ctx context.Context, workspaceID string, req payoutkit.ListCustomersRequest) (payoutkit.List[payoutkit.Customer], error)
	ListEvents(ctx context.Context, workspaceID string, req payoutkit.ListEventsRequest) (payoutkit.List[payoutkit.Event], error)
	APIKeys(ctx context.Context, workspaceID string) ([]payoutkit.APIKey, error)

	// Developer settings.
	CreateAPIKey(ctx context.Context, workspaceID string, req payoutkit.CreateAPIKeyRequest, by payoutkit.Actor) (payoutkit.NewKey, error)
	RevokeAPIKey(ctx context.Context, workspaceID, prefix string, by payoutkit.Actor) (int, error)
	ResetAPIKeys(ctx context.Context, workspaceID string, by payoutkit.Actor) (payoutkit.NewKey, error)
	SetWebhookURL(ctx context.Context, workspaceID, webhookURL string, by payoutkit.Actor) (payoutkit.Workspace, error)
	RotateWebhookSecret(ctx context.Context, workspaceID string, by payoutkit.Actor) (payoutkit.Workspace, error)
	ResendEvent(ctx context.Context, workspaceID, eventID string) error

	// Payout controls (contract, section 10) for admins, who act through
	// Team.Authorize or, with a fresh code, Team.SteppedUp.
	PayoutPolicy(ctx context.Context, workspaceID string) (payoutkit.PayoutPolicy, error)
	Addresses(ctx context.Context, workspaceID string) ([]payoutkit.AddressEntry, error)
	PayoutDecision(ctx context.Context, workspaceID, payoutID string) (payoutkit.SecurityLogEntry, error)
	ApprovePayout(ctx context.Context, workspaceID, payoutID string, by payoutkit.Actor) (payoutkit.Payout, error)
	RejectPayout(ctx context.Context, workspaceID, payoutID, reason string, by payoutkit.Actor) (payoutkit.Payout, error)
	AddAddress(ctx context.Context, workspaceID, network, addr, label string, by payoutkit.Actor) (payoutkit.AddressEntry, error)
	RemoveAddress(ctx context.Context, workspaceID, network, addr string, by payoutkit.Actor) (int, error)
	SetPayoutPolicy(ctx context.Context, workspaceID string, patch payoutkit.PolicyPatch, by payoutkit.Actor) (payoutkit.PayoutPolicy, error)
	// Mass payouts (contract, section 12), for admins: the portal checks a
	// file's rows before it offers to create them.
	CheckPayoutBatch(req payoutkit.CreatePayoutBatchRequest) error
	CreatePayoutBatch(ctx context.Context, workspaceID string, req payoutkit.CreatePayoutBatchRequest) (payoutkit.PayoutBatch, bool, error)
	PayoutBatch(ctx context.Context, workspaceID, batchID string) (payoutkit.PayoutBatch, error)
	PayoutBatches(ctx context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.PayoutBatch], error)

	// The security log.
	SecurityLog(ctx context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.SecurityLogEntry], error)
}

var _ Service = (*payoutkit.Engine)(nil)

// Team is what the portal asks of staff identity (contract, sections 8 and
// 11). *staff.Team implements it. Every change judges the caller's stored
// role first (Authorize, SteppedUp); the portal's guards only answer sooner.
type Team interface {
	// Sessions.
	SignIn(ctx context.Context, email, password, clientAddr string) (staff.SignInStart, error)
	FinishSignIn(ctx context.Context, pending, code, clientAddr string) (staff.NewSession, error)
	Session(ctx context.Context, token string) (payoutkit.StaffSession, error)
	EndSession(ctx context.Context, token string) error
	ChangePassword(ctx context.Context, s payoutkit.StaffSession, current, next string) error

	// Roles and step-up codes.
	Authorize(ctx context.Context, c staff.Caller, need payoutkit.Role) (payoutkit.StaffUser, error)
	SteppedUp(c staff.Caller, code string) payoutkit.Actor

	// Two-factor sign-in.
	TOTPSetup(ctx context.Context, c staff.Caller) (staff.TOTPSetup, error)
	EnableTOTP(ctx context.Context, c staff.Caller, code string) ([]string, error)
	DisableTOTP(ctx context.Context, c staff.Caller, code string) error

	// The team, for admins.
	Users(ctx context.Context, workspaceID string) ([]payoutkit.StaffUser, error)
	AddUser(ctx context.Context, workspaceID, email string, role payoutkit.Role, by payoutkit.Actor) (staff.NewUser, error)
	SetRole(ctx context.Context, c staff.Caller, email string, role payoutkit.Role, code string) error
	RemoveUser(ctx context.Context, workspaceID, email string, by payoutkit.Actor) (int, error)
	SetRequireTwoFactor(ctx context.Context, workspaceID string, on bool, by payoutkit.Actor) error
}

var _ Team = (*staff.Team)(nil)

// Options configures the portal. The zero value is usable.
type Options struct {
	// Logger receives one line per request and the details of internal
	// errors. Defaults to slog.Default().
	Logger *slog.Logger
	// SessionMaxAge is the lifetime given to the session cookie; it should
	// match the team's staff.Config.SessionMaxAge. Defaults to
	// staff.DefaultSessionMaxAge.
	SessionMaxAge time.Duration
	// ClientAddress returns a request's client address, which the
	// security log records with sign-ins and staff changes. Defaults to the
	// host of r.RemoteAddr; behind a reverse proxy, return the address the
	// proxy reports (as httpserver.ClientAddr does over trusted proxies).
	ClientAddress func(r *http.Request) string
	// ExplorerURL, when set, gives a settled payout's block explorer page
	// ("" for none), linked beside its txid on the withdrawal page. The
	// EVM processor's configuration makes one. Defaults to no links.
	ExplorerURL func(network, txid string) string
	// ReadsFromStandby says that the service reads the pages' lists from
	// a standby, which may lag the primary: every signed-in page's footer
	// says so.
	ReadsFromStandby bool
}

// Handler serves the portal's pages. It is safe for concurrent use.
type Handler struct {
	svc    Service
	team   Team
	log    *slog.Logger
	maxAge time.Duration
	client func(r *http.Request) string
	pages  *pages
	root   http.Handler
	// explorer is Options.ExplorerURL.
	explorer func(network, txid string) string
	// standby is Options.ReadsFromStandby.
	standby bool
}

//go:embed assets
var assets embed.FS

// New returns the portal over the engine (svc) and the staff's identity
// (team).
func New(svc Service, team Team, opts Options) *Handler {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SessionMaxAge <= 0 {
		opts.SessionMaxAge = staff.DefaultSessionMaxAge
	}
	if opts.ClientAddress == nil {
		opts.ClientAddress = remoteHost
	}
	h := &Handler{svc: svc, team: team, log: opts.Logger, maxAge: opts.SessionMaxAge, client: opts.ClientAddress, pages: parsePages(), explorer: opts.ExplorerURL,
		standby: opts.ReadsFromStandby}
	admin, developer := payoutkit.RoleAdmin, payoutkit.RoleDeveloper

	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", h.loginPage)
	mux.HandleFunc("POST /login", h.login)
	mux.HandleFunc("GET /login/2fa", h.login2FAPage)
	mux.HandleFunc("POST /login/2fa", h.login2FA)
	mux.Handle("POST /logout", h.signedIn(h.logout))
	mux.Handle("GET /{$}", h.signedIn(h.dashboard))
	mux.Handle("GET /payments", h.signedIn(h.payments))
	mux.Handle("GET /payments.csv", h.signedIn(h.paymentsCSV))
	mux.Handle("GET /withdrawals", h.signedIn(h.withdrawals))
	mux.Handle("GET /withdrawals.csv", h.signedIn(h.withdrawalsCSV))
	mux.Handle("GET /withdrawals/{payout_id}", h.signedIn(h.withdrawal))
	// The batch pages: "batch" is never a payout_id here, the literal
	// segment being the more specific pattern.
	mux.Handle("GET /withdrawals/batch", h.signedIn(h.role(admin, h.batchPage)))
	mux.Handle("POST /withdrawals/batch", h.uploadForm(admin, h.batchPost))
	mux.Handle("GET /withdrawals/batch/{batch_id}", h.signedIn(h.batchResult))
	mux.Handle("GET /customers", h.signedIn(h.customers))
	mux.Handle("GET /settings", http.RedirectHandler("/settings/developer", http.StatusSeeOther))
	mux.Handle("GET /settings/developer", h.signedIn(h.developer))
	mux.Handle("POST /settings/developer/keys", h.signedIn(h.role(developer, h.createKey)))
	mux.Handle("GET /settings/developer/keys/revoke", h.signedIn(h.role(developer, h.confirmRevoke)))
	mux.Handle("POST /settings/developer/keys/revoke", h.signedIn(h.role(developer, h.revokeKey)))
	mux.Handle("GET /settings/developer/keys/reset", h.signedIn(h.role(developer, h.confirmReset)))
	mux.Handle("POST /settings/developer/keys/reset", h.signedIn(h.role(developer, h.resetKeys)))
	mux.Handle("POST /settings/developer/webhook", h.signedIn(h.role(developer, h.setWebhook)))
	mux.Handle("POST /settings/developer/webhook/rotate", h.signedIn(h.role(developer, h.rotateSecret)))
	mux.Handle("POST /settings/developer/events/resend", h.signedIn(h.role(developer, h.resendEvent)))
	mux.Handle("GET /settings/password", h.signedIn(h.passwordPage))
	mux.Handle("POST /settings/password", h.signedIn(h.changePassword))
	mux.Handle("GET /settings/security", h.signedIn(h.securityPage))
	mux.Handle("GET /settings/security/qr.png", h.signedIn(h.totpQR))
	mux.Handle("POST /settings/security/totp", h.signedIn(h.enableTOTP))
	mux.Handle("POST /settings/security/totp/disable", h.signedIn(h.disableTOTP))
	mux.Handle("GET /settings/team", h.signedIn(h.role(admin, h.teamPage)))
	mux.Handle("POST /settings/team", h.signedIn(h.role(admin, h.addStaff)))
	mux.Handle("POST /settings/team/role", h.signedIn(h.role(admin, h.setRole)))
	mux.Handle("POST /settings/team/remove", h.signedIn(h.role(admin, h.removeStaff)))
	mux.Handle("POST /settings/team/require-2fa", h.signedIn(h.role(admin, h.requireTwoFactor)))
	mux.Handle("GET /settings/addresses", h.signedIn(h.role(admin, h.addressesPage)))
	mux.Handle("POST /settings/addresses", h.signedIn(h.role(admin, h.addAddress)))
	mux.Handle("POST /settings/addresses/remove", h.signedIn(h.role(admin, h.removeAddress)))
	mux.Handle("GET /settings/policy", h.signedIn(h.role(admin, h.policyPage)))
	mux.Handle("POST /settings/policy", h.signedIn(h.role(admin, h.setPolicy)))
	mux.Handle("POST /withdrawals/{payout_id}/approve", h.signedIn(h.role(admin, h.approvePayout)))
	mux.Handle("POST /withdrawals/{payout_id}/reject", h.signedIn(h.role(admin, h.rejectPayout)))
	mux.Handle("GET /settings/security-log", h.signedIn(h.role(admin, h.securityLog)))
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", noDirectories(http.FileServerFS(static))))
	mux.HandleFunc("/", h.notFound)

	// Browsers say where a request comes from (Sec-Fetch-Site, Origin):
	// a state-changing request from another site is refused before any
	// handler runs. The session's CSRF token checks the rest.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(h.forbidden))
	h.root = cop.Handler(mux)
	return h
}

// ServeHTTP serves one request, with the security headers every portal
// answer carries.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", contentSecurityPolicy)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "same-origin")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Frame-Options", "DENY")
	rec := &statusRecorder{ResponseWriter: w}
	h.root.ServeHTTP(rec, r)
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "portal request",
		slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.Int("status", rec.status()), slog.Duration("duration", time.Since(start)))
}

// contentSecurityPolicy allows the portal's own stylesheet, images and
// forms, and nothing inline, nothing from elsewhere, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// remoteHost is the default Options.ClientAddress: the host of
// r.RemoteAddr.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// actor is the signed-in staff user of r, from r's client address, as the
// security log records them.
func (h *Handler) actor(r *request) payoutkit.Actor {
	return payoutkit.StaffActor(r.session.StaffEmail, h.client(r.Request))
}

// noDirectories answers 404 for a directory, so the file server lists none.
func noDirectories(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}
