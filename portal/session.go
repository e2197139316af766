package portal

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/staff"
)

// The cookies the portal sets.
const (
	// SessionCookie holds a signed-in session's token. Its value is random
	// (256 bits); the store keeps only its SHA-256.
	SessionCookie = "payoutkit_session"
	// loginCookie binds the sign-in form's CSRF token to the browser that
	// loaded the form.
	loginCookie = "payoutkit_login"
)

// maxFormBytes bounds a form's body.
const maxFormBytes = 64 << 10

// request is one signed-in request: the session, its token, and the
// workspace the staff user belongs to.
type request struct {
	*http.Request
	session payoutkit.StaffSession
	token   string
	csrf    string
}

// signedIn wraps a page that needs a session. Without a valid one, a GET
// goes to the sign-in page (coming back here after it) and a POST changes
// nothing. A signed-in POST must carry the session's CSRF token.
func (h *Handler) signedIn(page func(http.ResponseWriter, *request)) http.Handler {
	return h.session(func(w http.ResponseWriter, r *request) {
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if err := r.ParseForm(); err != nil {
				h.renderError(w, r.Request, http.StatusBadRequest, "The form could not be read.")
				return
			}
			if !sameToken(r.PostForm.Get("csrf_token"), r.csrf) {
				h.forbidden(w, r.Request)
				return
			}
		}
		page(w, r)
	})
}

// session wraps a page that needs a session, as signedIn does, leaving a
// POST's body to the page (uploadForm reads it).
func (h *Handler) session(page func(http.ResponseWriter, *request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(SessionCookie)
		var s payoutkit.StaffSession
		if err == nil {
			s, err = h.team.Session(r.Context(), c.Value)
		}
		switch {
		case errors.Is(err, http.ErrNoCookie), errors.Is(err, payoutkit.ErrUnauthorized):
			if c != nil {
				h.clearCookie(w, r, SessionCookie, "/")
			}
			target := "/login"
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				target += "?next=" + url.QueryEscape(r.URL.RequestURI())
			}
			http.Redirect(w, r, target, http.StatusSeeOther)
			return
		case err != nil:
			h.serverError(w, r, err)
			return
		}
		req := &request{Request: r, session: s, token: c.Value, csrf: csrfToken(c.Value)}
		if !s.TwoFactor && !twoFactorExempt(r.URL.Path) {
			// A workspace that requires two-factor sign-in sends a user
			// without it to set it up before anything else.
			ws, err := h.svc.Workspace(r.Context(), s.WorkspaceID)
			if err != nil {
				h.serverError(w, r, err)
				return
			}
			if ws.RequireTwoFactor {
				http.Redirect(w, r, "/settings/security", http.StatusSeeOther)
				return
			}
		}
		page(w, req)
	})
}

// csrfToken is the CSRF token of a session: an HMAC of a fixed label keyed
// with the session's token, so that it needs no storage, differs per
// session, and cannot be made without the cookie.
func csrfToken(sessionToken string) string {
	mac := hmac.New(sha256.New, []byte(sessionToken))
	mac.Write([]byte("payoutkit portal csrf v1"))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func sameToken(got, want string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// loginView is the sign-in page's data.
type loginView struct {
	Email, Next, CSRF string
	Error             string
	Fields            map[string]string
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil {
		if _, err := h.team.Session(r.Context(), c.Value); err == nil {
			http.Redirect(w, r, localPath(r.URL.Query().Get("next")), http.StatusSeeOther)
			return
		}
	}
	h.renderLogin(w, r, http.StatusOK, loginView{Next: r.URL.Query().Get("next")})
}

// renderLogin answers the sign-in page with a fresh form token.
func (h *Handler) renderLogin(w http.ResponseWriter, r *http.Request, status int, v loginView) {
	v.CSRF = rand.Text()
	http.SetCookie(w, &http.Cookie{
		Name: loginCookie, Value: v.CSRF, Path: "/login", MaxAge: 3600,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
	if v.Next != "" && localPath(v.Next) != v.Next {
		v.Next = "" // never carry an off-site target along
	}
	h.render(w, r, status, "login", page{Title: "Sign in", Data: v})
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		h.renderError(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	v := loginView{Email: r.PostForm.Get("email"), Next: r.PostForm.Get("next")}
	// A browser's sign-in must come from the form it loaded here: a form
	// token bound to a cookie. (Non-browser clients send no fetch metadata,
	// and cannot be a cross-site request's vehicle.)
	if r.Header.Get("Sec-Fetch-Site") != "" {
		c, err := r.Cookie(loginCookie)
		if err != nil || !sameToken(r.PostForm.Get("csrf_token"), c.Value) {
			v.Error = "The sign-in form expired. Please try again."
			h.renderLogin(w, r, http.StatusForbidden, v)
			return
		}
	}
	password := r.PostForm.Get("password")
	var fields form
	fields.text("email", v.Email, 254)
	fields.text("password", password, 1024)
	if fields.failed() {
		v.Fields = fields
		h.renderLogin(w, r, http.StatusBadRequest, v)
		return
	}

	st, err := h.team.SignIn(r.Context(), v.Email, password, h.client(r))
	if locked, ok := errors.AsType[*staff.SignInLockedError](err); ok {
		wait := int(math.Ceil(locked.RetryAfter.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(wait))
		v.Error = "Too many failed sign-ins for this e-mail. Try again in " + minutes(wait) + "."
		h.renderLogin(w, r, http.StatusTooManyRequests, v)
		return
	}
	if errors.Is(err, payoutkit.ErrUnauthorized) {
		v.Error = "Invalid e-mail or password"
		h.renderLogin(w, r, http.StatusUnauthorized, v)
		return
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	if st.Pending != "" {
		// The second step: its own short-lived cookie, not a session.
		http.SetCookie(w, &http.Cookie{
			Name: twoFactorCookie, Value: st.Pending + "~" + url.QueryEscape(localPath(v.Next)), Path: "/login",
			MaxAge:   pendingMaxAge, // the engine refuses it after its own expiry
			HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
		})
		http.Redirect(w, r, "/login/2fa", http.StatusSeeOther)
		return
	}
	h.startSession(w, r, st.Session, v.Next)
}

func (h *Handler) logout(w http.ResponseWriter, r *request) {
	if err := h.team.EndSession(r.Context(), r.token); err != nil {
		h.serverError(w, r.Request, err)
		return
	}
	h.clearCookie(w, r.Request, SessionCookie, "/")
	http.Redirect(w, r.Request, "/login", http.StatusSeeOther)
}

func (h *Handler) clearCookie(w http.ResponseWriter, r *http.Request, name, path string) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: "", Path: path, MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode,
	})
}

// localPath returns next when it is a path on this site, and "/" otherwise:
// it must start with exactly one "/", and carry no scheme, host, backslash
// or control character, so that no browser reads it as another site.
func localPath(next string) string {
	if next == "" || next[0] != '/' || len(next) > 2048 || strings.HasPrefix(next, "//") {
		return "/"
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") {
		return "/"
	}
	return next
}

// minutes renders a wait in seconds as a person reads it.
func minutes(seconds int) string {
	switch m := (seconds + 59) / 60; m {
	case 1:
		return "1 minute"
	default:
		return strconv.Itoa(m) + " minutes"
	}
}
