package portal

import (
	"crypto/rand"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/skip2/go-qrcode"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/staff"
)

// twoFactorCookie holds a sign-in's pending second step (the engine's
// SignInStart.Pending and the page to go to after it): not a session, it
// opens nothing but the code form, and only for a few minutes.
const twoFactorCookie = "payoutkit_2fa"

// pendingMaxAge is the second step's cookie's lifetime in seconds, as long
// as the engine's pending state lasts (five minutes).
const pendingMaxAge = 5 * 60

// caller is the request's staff user, for the team's calls.
func (h *Handler) caller(r *request) staff.Caller {
	return staff.Caller{Session: r.session, ClientAddr: h.client(r.Request)}
}

// steppedUp is the request's staff user as the actor of an engine call
// that needs a fresh two-factor code, the form's "totp": the engine has the
// team check and use up the code once the call's input is valid.
func (h *Handler) steppedUp(r *request) payoutkit.Actor {
	return h.team.SteppedUp(h.caller(r), r.PostForm.Get("totp"))
}

// role guards a page with the role it needs, judged by the role stored for
// the user now: any other role gets the 403 page and nothing changes. The
// page's engine calls then take the user as their actor (actor,
// steppedUp).
// Wrap a handler of signedIn with it: h.signedIn(h.role(payoutkit.RoleAdmin, page)).
func (h *Handler) role(need payoutkit.Role, page func(http.ResponseWriter, *request)) func(http.ResponseWriter, *request) {
	return func(w http.ResponseWriter, r *request) {
		if _, err := h.team.Authorize(r.Context(), h.caller(r), need); err != nil {
			h.engineError(w, r.Request, err)
			return
		}
		page(w, r)
	}
}

// twoFactorExempt are the paths a user whose workspace requires two-factor
// sign-in may use before turning it on.
func twoFactorExempt(path string) bool {
	return path == "/logout" || path == "/settings/security" || strings.HasPrefix(path, "/settings/security/")
}

// login2FAView is the second step's page.
type login2FAView struct {
	CSRF  string
	Error string
}

// pendingSignIn reads the second step's cookie: the engine's pending state
// and the page to go to after it.
func pendingSignIn(r *http.Request) (pending, next string, ok bool) {
	c, err := r.Cookie(twoFactorCookie)
	if err != nil || c.Value == "" {
		return "", "", false
	}
	pending, rawNext, _ := strings.Cut(c.Value, "~")
	next, err = url.QueryUnescape(rawNext)
	if err != nil {
		next = ""
	}
	return pending, localPath(next), pending != ""
}

func (h *Handler) login2FAPage(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := pendingSignIn(r); !ok {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	h.renderLogin2FA(w, r, http.StatusOK, login2FAView{})
}

func (h *Handler) renderLogin2FA(w http.ResponseWriter, r *http.Request, status int, v login2FAView) {
	v.CSRF = rand.Text()
	http.SetCookie(w, &http.Cookie{
		Name: loginCookie, Value: v.CSRF, Path: "/login", MaxAge: 3600,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
	h.render(w, r, status, "login2fa", page{Title: "Two-factor sign-in", Data: v})
}

// login2FA checks the second step's code and signs in.
func (h *Handler) login2FA(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		h.renderError(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	pending, next, ok := pendingSignIn(r)
	if !ok {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	if r.Header.Get("Sec-Fetch-Site") != "" {
		c, err := r.Cookie(loginCookie)
		if err != nil || !sameToken(r.PostForm.Get("csrf_token"), c.Value) {
			h.renderLogin2FA(w, r, http.StatusForbidden, login2FAView{Error: "The form expired. Please try again."})
			return
		}
	}
	code := r.PostForm.Get("code")
	if len(code) > 64 {
		code = code[:64]
	}
	ns, err := h.team.FinishSignIn(r.Context(), pending, code, h.client(r))
	if locked, ok := errors.AsType[*staff.SignInLockedError](err); ok {
		wait := int(math.Ceil(locked.RetryAfter.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(wait))
		h.renderLogin2FA(w, r, http.StatusTooManyRequests, login2FAView{Error: "Too many failed sign-ins for this e-mail. Try again in " + minutes(wait) + "."})
		return
	}
	if errors.Is(err, staff.ErrSignInExpired) {
		h.clearCookie(w, r, twoFactorCookie, "/login")
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	if errors.Is(err, payoutkit.ErrUnauthorized) {
		h.renderLogin2FA(w, r, http.StatusUnauthorized, login2FAView{Error: "Invalid code"})
		return
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	h.startSession(w, r, ns, next)
}

// startSession sets a new session's cookie and goes to next.
func (h *Handler) startSession(w http.ResponseWriter, r *http.Request, ns staff.NewSession, next string) {
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: ns.Token, Path: "/",
		Expires: ns.Session.CreatedAt.Add(h.maxAge), MaxAge: int(h.maxAge / time.Second),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode,
	})
	h.clearCookie(w, r, loginCookie, "/login")
	h.clearCookie(w, r, twoFactorCookie, "/login")
	http.Redirect(w, r, localPath(next), http.StatusSeeOther)
}

// securityView is Settings → Security.
type securityView struct {
	On            bool
	RecoveryLeft  int
	Secret        string
	RecoveryCodes []string
	Required      bool
	Fields        form
}

func (h *Handler) securityPage(w http.ResponseWriter, r *request) {
	h.renderSecurity(w, r, http.StatusOK, securityView{}, "")
}

// renderSecurity fills v with the user's two-factor state (a secret to
// confirm while it is off) and renders the page.
func (h *Handler) renderSecurity(w http.ResponseWriter, r *request, status int, v securityView, notice string) {
	u, err := h.team.Authorize(r.Context(), h.caller(r), payoutkit.RoleViewer)
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	v.On, v.RecoveryLeft = u.TwoFactor(), u.RecoveryCodes
	if !v.On {
		setup, err := h.team.TOTPSetup(r.Context(), h.caller(r))
		if err != nil {
			h.engineError(w, r.Request, err)
			return
		}
		v.Secret = setup.Secret
	}
	ws, err := h.svc.Workspace(r.Context(), r.session.WorkspaceID)
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	v.Required = ws.RequireTwoFactor
	h.renderPage(w, r, status, "security", page{Title: "Security", Section: "security", Notice: notice, Data: v})
}

// totpQR serves the QR code of the secret the security page offers, as a
// PNG from this site (the CSP allows no other images).
func (h *Handler) totpQR(w http.ResponseWriter, r *request) {
	setup, err := h.team.TOTPSetup(r.Context(), h.caller(r))
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	png, err := qrcode.Encode(setup.URL, qrcode.Medium, 256)
	if err != nil {
		h.serverError(w, r.Request, err)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write(png)
}

func (h *Handler) enableTOTP(w http.ResponseWriter, r *request) {
	codes, err := h.team.EnableTOTP(r.Context(), h.caller(r), r.PostForm.Get("code"))
	if f, ok := fieldErrors(err); ok {
		h.renderSecurity(w, r, http.StatusBadRequest, securityView{Fields: f}, "")
		return
	}
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	r.session.TwoFactor = true
	h.renderSecurity(w, r, http.StatusOK, securityView{RecoveryCodes: codes},
		"Two-factor sign-in is on. Keep these recovery codes somewhere safe: each works once, and they are shown only now.")
}

func (h *Handler) disableTOTP(w http.ResponseWriter, r *request) {
	err := h.team.DisableTOTP(r.Context(), h.caller(r), r.PostForm.Get("code"))
	if f, ok := fieldErrors(err); ok {
		h.renderSecurity(w, r, http.StatusBadRequest, securityView{Fields: f}, "")
		return
	}
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	r.session.TwoFactor = false
	h.renderSecurity(w, r, http.StatusOK, securityView{}, "Two-factor sign-in is off.")
}

// fieldErrors returns the form messages of an engine's 40000.
func fieldErrors(err error) (form, bool) {
	e, ok := errors.AsType[*payoutkit.Error](err)
	if !ok || !errors.Is(err, payoutkit.ErrInvalidInput) {
		return nil, false
	}
	var f form
	for _, fe := range e.Fields {
		f.add(fe.Field, sentence(fe.Message))
	}
	if !f.failed() {
		f.add("form", e.Message)
	}
	return f, true
}

// teamView is Settings → Team.
type teamView struct {
	Users       []payoutkit.StaffUser
	Roles       []payoutkit.Role
	NewEmail    string
	NewPassword string
	Required    bool
	Fields      form
}

var allRoles = []payoutkit.Role{payoutkit.RoleAdmin, payoutkit.RoleDeveloper, payoutkit.RoleViewer}

var teamNotices = map[string]string{
	"role-changed": "The role was changed. It holds from the user's next request.",
	"removed":      "The user was removed and signed out everywhere.",
	"no-user":      "No user of this workspace has that e-mail; nothing changed.",
	"required":     "Every staff user now needs two-factor sign-in.",
	"not-required": "Two-factor sign-in is no longer required.",
}

func (h *Handler) teamPage(w http.ResponseWriter, r *request) {
	h.renderTeam(w, r, http.StatusOK, teamView{}, teamNotices[r.URL.Query().Get("done")])
}

func (h *Handler) renderTeam(w http.ResponseWriter, r *request, status int, v teamView, notice string) {
	users, err := h.team.Users(r.Context(), r.session.WorkspaceID)
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	ws, err := h.svc.Workspace(r.Context(), r.session.WorkspaceID)
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	v.Users, v.Roles, v.Required = users, allRoles, ws.RequireTwoFactor
	h.renderPage(w, r, status, "team", page{Title: "Team", Section: "team", Notice: notice, Data: v})
}

func (h *Handler) addStaff(w http.ResponseWriter, r *request) {
	email, roleName := r.PostForm.Get("email"), r.PostForm.Get("role")
	var f form
	f.text("email", email, 254)
	role, err := staff.ParseRole(roleName)
	if err != nil {
		f.add("role", "Choose admin, developer or viewer.")
	}
	var ns staff.NewUser
	if !f.failed() {
		ns, err = h.team.AddUser(r.Context(), r.session.WorkspaceID, email, role, h.actor(r))
		if ff, ok := fieldErrors(err); ok {
			for k, m := range ff {
				if k == "staff_email" {
					k = "email"
				}
				f.add(k, m)
			}
		} else if err != nil {
			h.engineError(w, r.Request, err)
			return
		}
	}
	if f.failed() {
		h.renderTeam(w, r, http.StatusBadRequest, teamView{Fields: f, NewEmail: email}, "")
		return
	}
	h.renderTeam(w, r, http.StatusOK, teamView{NewPassword: ns.Password},
		ns.Email+" was added as "+string(ns.Role)+". Give them this password now: it is shown only once.")
}

func (h *Handler) setRole(w http.ResponseWriter, r *request) {
	role, err := staff.ParseRole(r.PostForm.Get("role"))
	if err == nil {
		err = h.team.SetRole(r.Context(), h.caller(r), r.PostForm.Get("email"), role, r.PostForm.Get("totp"))
	}
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	http.Redirect(w, r.Request, "/settings/team?done=role-changed", http.StatusSeeOther)
}

func (h *Handler) removeStaff(w http.ResponseWriter, r *request) {
	n, err := h.team.RemoveUser(r.Context(), r.session.WorkspaceID, r.PostForm.Get("email"), h.actor(r))
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	done := "removed"
	if n == 0 {
		done = "no-user"
	}
	http.Redirect(w, r.Request, "/settings/team?done="+done, http.StatusSeeOther)
}

func (h *Handler) requireTwoFactor(w http.ResponseWriter, r *request) {
	on := r.PostForm.Get("on") == "true"
	if err := h.team.SetRequireTwoFactor(r.Context(), r.session.WorkspaceID, on, h.actor(r)); err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	done := "not-required"
	if on {
		done = "required"
	}
	http.Redirect(w, r.Request, "/settings/team?done="+done, http.StatusSeeOther)
}

// addressesView is Settings → Addresses.
type addressesView struct {
	Entries []payoutkit.AddressEntry
	Policy  payoutkit.PayoutPolicy
	Form    struct{ Network, Address, Label string }
	Fields  form
}

var addressNotices = map[string]string{
	"added":      "The address was added. It is usable once its cooling-off has passed.",
	"removed":    "The address was removed from the address book.",
	"no-address": "The address book has no such entry; nothing was removed.",
}

func (h *Handler) addressesPage(w http.ResponseWriter, r *request) {
	h.renderAddresses(w, r, http.StatusOK, addressesView{}, addressNotices[r.URL.Query().Get("done")])
}

func (h *Handler) renderAddresses(w http.ResponseWriter, r *request, status int, v addressesView, notice string) {
	list, err := h.svc.Addresses(r.Context(), r.session.WorkspaceID)
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	pol, err := h.svc.PayoutPolicy(r.Context(), r.session.WorkspaceID)
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	v.Entries, v.Policy = list, pol
	h.renderPage(w, r, status, "addresses", page{Title: "Addresses", Section: "addresses", Notice: notice, Data: v})
}

func (h *Handler) addAddress(w http.ResponseWriter, r *request) {
	var v addressesView
	v.Form.Network, v.Form.Address, v.Form.Label = r.PostForm.Get("network"), r.PostForm.Get("address"), r.PostForm.Get("label")
	_, err := h.svc.AddAddress(r.Context(), r.session.WorkspaceID, v.Form.Network, v.Form.Address, v.Form.Label, h.steppedUp(r))
	if f, ok := fieldErrors(err); ok {
		v.Fields = f
		h.renderAddresses(w, r, http.StatusBadRequest, v, "")
		return
	}
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	http.Redirect(w, r.Request, "/settings/addresses?done=added", http.StatusSeeOther)
}

func (h *Handler) removeAddress(w http.ResponseWriter, r *request) {
	n, err := h.svc.RemoveAddress(r.Context(), r.session.WorkspaceID, r.PostForm.Get("network"), r.PostForm.Get("address"), h.actor(r))
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	done := "removed"
	if n == 0 {
		done = "no-address"
	}
	http.Redirect(w, r.Request, "/settings/addresses?done="+done, http.StatusSeeOther)
}

// policyView is Settings → Policy; Form holds the form's values as shown.
type policyView struct {
	Policy payoutkit.PayoutPolicy
	Form   policyForm
	Fields form
}

type policyForm struct {
	MaxPayout, DailyLimit, ApprovalOver, CoolingOff string
	AddressAllowlist                                bool
}

func formOf(p payoutkit.PayoutPolicy) policyForm {
	limit := func(l payoutkit.Limit) string {
		if !l.Set {
			return ""
		}
		return l.Amount.String()
	}
	return policyForm{MaxPayout: limit(p.MaxPayout), DailyLimit: limit(p.DailyLimit), ApprovalOver: limit(p.ApprovalOver),
		CoolingOff: p.CoolingOff.String(), AddressAllowlist: p.AddressAllowlist}
}

func (h *Handler) policyPage(w http.ResponseWriter, r *request) {
	notice := ""
	if r.URL.Query().Get("done") == "saved" {
		notice = "The payout policy was saved. It holds from the next payout."
	}
	h.renderPolicy(w, r, http.StatusOK, nil, nil, notice)
}

func (h *Handler) renderPolicy(w http.ResponseWriter, r *request, status int, posted *policyForm, f form, notice string) {
	pol, err := h.svc.PayoutPolicy(r.Context(), r.session.WorkspaceID)
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	v := policyView{Policy: pol, Form: formOf(pol), Fields: f}
	if posted != nil {
		v.Form = *posted
	}
	h.renderPage(w, r, status, "policy", page{Title: "Payout policy", Section: "policy", Notice: notice, Data: v})
}

func (h *Handler) setPolicy(w http.ResponseWriter, r *request) {
	pf := policyForm{
		MaxPayout: strings.TrimSpace(r.PostForm.Get("max_payout")), DailyLimit: strings.TrimSpace(r.PostForm.Get("daily_limit")),
		ApprovalOver: strings.TrimSpace(r.PostForm.Get("approval_over")), CoolingOff: strings.TrimSpace(r.PostForm.Get("cooling_off")),
		AddressAllowlist: r.PostForm.Get("address_allowlist") == "on" || r.PostForm.Get("address_allowlist") == "true",
	}
	var f form
	limit := func(field, s string) *payoutkit.Limit {
		if s == "" {
			return &payoutkit.Limit{}
		}
		a, err := payoutkit.ParseAmount(s)
		if err != nil {
			f.add(field, "Enter an amount in USD, e.g. 500.00, or leave it empty for no limit.")
			return nil
		}
		l := payoutkit.LimitOf(a)
		return &l
	}
	patch := payoutkit.PolicyPatch{
		MaxPayout: limit("max_payout", pf.MaxPayout), DailyLimit: limit("daily_limit", pf.DailyLimit),
		ApprovalOver: limit("approval_over", pf.ApprovalOver), AddressAllowlist: &pf.AddressAllowlist,
	}
	if pf.CoolingOff != "" {
		d, err := time.ParseDuration(pf.CoolingOff)
		if err != nil {
			f.add("cooling_off", "Enter a duration, e.g. 24h or 30m.")
		}
		patch.CoolingOff = &d
	}
	if f.failed() {
		h.renderPolicy(w, r, http.StatusBadRequest, &pf, f, "")
		return
	}
	_, err := h.svc.SetPayoutPolicy(r.Context(), r.session.WorkspaceID, patch, h.steppedUp(r))
	if ff, ok := fieldErrors(err); ok {
		h.renderPolicy(w, r, http.StatusBadRequest, &pf, ff, "")
		return
	}
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	http.Redirect(w, r.Request, "/settings/policy?done=saved", http.StatusSeeOther)
}

func (h *Handler) approvePayout(w http.ResponseWriter, r *request) {
	id := r.PathValue("payout_id")
	if _, err := h.svc.ApprovePayout(r.Context(), r.session.WorkspaceID, id, h.steppedUp(r)); err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	http.Redirect(w, r.Request, "/withdrawals/"+url.PathEscape(id)+"?done=approved", http.StatusSeeOther)
}

func (h *Handler) rejectPayout(w http.ResponseWriter, r *request) {
	id := r.PathValue("payout_id")
	if _, err := h.svc.RejectPayout(r.Context(), r.session.WorkspaceID, id, r.PostForm.Get("reason"), h.steppedUp(r)); err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	http.Redirect(w, r.Request, "/withdrawals/"+url.PathEscape(id)+"?done=rejected", http.StatusSeeOther)
}
