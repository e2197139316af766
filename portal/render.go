package portal

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit"
)

//go:embed templates
var templateFiles embed.FS

// pageNames are the templates/<name>.html files, each defining "content"
// inside the shared layout.
var pageNames = []string{
	"login", "error", "dashboard", "payments", "withdrawals", "withdrawal", "customers", "developer", "confirm", "password",
	"login2fa", "security", "team", "addresses", "policy",
	"securitylog", "batch", "batchresult",
}

type pages struct{ byName map[string]*template.Template }

func parsePages() *pages {
	p := &pages{byName: make(map[string]*template.Template)}
	for _, name := range pageNames {
		t := template.Must(template.New(name).Funcs(funcs).ParseFS(templateFiles,
			"templates/layout.html", "templates/parts.html", "templates/"+name+".html"))
		p.byName[name] = t
	}
	return p
}

var funcs = template.FuncMap{
	"money": func(a payoutkit.Amount) string { return a.String() },
	// units renders an amount in an asset's units as the API does, or a
	// dash while unset.
	"units": func(d decimal.NullDecimal) string {
		if !d.Valid {
			return "—"
		}
		return d.Decimal.String()
	},
	"when": when,
	"path": url.PathEscape,
	"dash": func(s string) string {
		if s == "" {
			return "—"
		}
		return s
	},
	"ms": func(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) },
	// allowip renders an entry of a key's address allowlist as it was
	// meant: an address alone, or a CIDR range.
	"allowip": payoutkit.FormatAllowIP,
	"sub":     func(a, b int) int { return a - b },
	"add":     func(a, b int) int { return a + b },
	// details lists a security log entry's details by key, so that
	// every entry reads in the same order.
	"details": func(d map[string]string) []detail {
		out := make([]detail, 0, len(d))
		for _, k := range slices.Sorted(maps.Keys(d)) {
			out = append(out, detail{k, d[k]})
		}
		return out
	},
}

// detail is one member of a security log entry's details.
type detail struct{ Key, Value string }

// timeFormat is the one way the portal prints a time: UTC, to the second,
// with its zone written out, so that staff in any time zone read the same
// instant the API's RFC 3339 times name.
const timeFormat = "2006-01-02 15:04:05 UTC"

// when renders t as a time element in timeFormat, with the RFC 3339 form
// for machines in its datetime attribute, or a dash for the zero time. Every
// page prints times through it, so that they all read alike.
func when(t time.Time) template.HTML {
	if t.IsZero() {
		return "—"
	}
	t = t.UTC()
	// Both forms are made of digits, dashes, colons, spaces and letters
	// from the layouts: nothing to escape.
	return template.HTML(`<time datetime="` + t.Format(time.RFC3339) + `">` + t.Format(timeFormat) + `</time>`)
}

// page is what the layout renders: the page's own data in Data.
type page struct {
	Title string
	// Section marks the navigation entry of the page.
	Section string
	// Staff and Workspace are set on signed-in pages, with the CSRF token
	// of the sign-out form.
	Staff     string
	Workspace string
	CSRF      string
	Notice    string
	Data      any
	// Role is the signed-in user's role: the layout and the pages offer
	// only the links and forms it allows.
	Role payoutkit.Role
	// Standby is set when the pages read from a standby.
	Standby bool
}

// Admin reports whether the page's user has the admin role.
func (p page) Admin() bool { return p.Role == payoutkit.RoleAdmin }

// Developer reports whether the page's user may use Settings → Developer.
func (p page) Developer() bool { return p.Role.Allows(payoutkit.RoleDeveloper) }

// render writes a page whole, or a plain 500 if its template fails: the
// page is executed into a buffer first, so a failure never shows half a page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	var buf bytes.Buffer
	if err := h.pages.byName[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		h.log.ErrorContext(r.Context(), "portal: rendering a page", "page", name, "err", err)
		http.Error(w, "Internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// renderPage renders a signed-in page with the layout's navigation.
func (h *Handler) renderPage(w http.ResponseWriter, r *request, status int, name string, p page) {
	ws, err := h.svc.Workspace(r.Context(), r.session.WorkspaceID)
	if err != nil {
		h.serverError(w, r.Request, err)
		return
	}
	p.Staff, p.Workspace, p.CSRF, p.Role, p.Standby = r.session.StaffEmail, ws.Name, r.csrf, r.session.Role, h.standby
	h.render(w, r.Request, status, name, p)
}

type errorView struct {
	Status  int
	Heading string
	Message string
	// SignedIn is set when the page has the layout's navigation.
	SignedIn bool
}

// errorHeadings name the portal's error pages as staff read them.
var errorHeadings = map[int]string{
	http.StatusBadRequest:          "This request cannot be served",
	http.StatusForbidden:           "Not allowed",
	http.StatusNotFound:            "Page not found",
	http.StatusConflict:            "This cannot be done now",
	http.StatusInternalServerError: "Something went wrong",
}

// renderError answers an error page inside the portal's layout: with the
// navigation when r carries a valid session, so that staff are never left
// on a dead end, and bare otherwise.
func (h *Handler) renderError(w http.ResponseWriter, r *http.Request, status int, message string) {
	heading := errorHeadings[status]
	if heading == "" {
		heading = http.StatusText(status)
	}
	p := page{Title: http.StatusText(status)}
	h.sessionLayout(r, &p)
	p.Data = errorView{Status: status, Heading: heading, Message: message, SignedIn: p.Staff != ""}
	h.render(w, r, status, "error", p)
}

// sessionLayout fills the signed-in parts of p's layout when r carries a
// valid session. It leaves p bare on any failure (no cookie, an ended
// session, a failing store): an error page must render whatever went wrong.
func (h *Handler) sessionLayout(r *http.Request, p *page) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return
	}
	s, err := h.team.Session(r.Context(), c.Value)
	if err != nil {
		return
	}
	ws, err := h.svc.Workspace(r.Context(), s.WorkspaceID)
	if err != nil {
		return
	}
	p.Staff, p.Workspace, p.CSRF, p.Role = s.StaffEmail, ws.Name, csrfToken(c.Value), s.Role
}

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.renderError(w, r, http.StatusNotFound, "There is no such page.")
}

func (h *Handler) forbidden(w http.ResponseWriter, r *http.Request) {
	h.renderError(w, r, http.StatusForbidden, "This form has expired or did not come from this site. Reload the page and try again.")
}

// serverError logs err and answers a 500 that says nothing about it.
func (h *Handler) serverError(w http.ResponseWriter, r *http.Request, err error) {
	h.log.ErrorContext(r.Context(), "portal: serving a page", "method", r.Method, "path", r.URL.Path, "err", err)
	h.renderError(w, r, http.StatusInternalServerError, "Something went wrong on our side. Please try again.")
}

// engineError answers an error of the engine: the caller's mistakes with
// their own status, anything else as a 500.
func (h *Handler) engineError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, payoutkit.ErrNotFound):
		h.notFound(w, r)
	case errors.Is(err, payoutkit.ErrInvalidInput):
		h.renderError(w, r, http.StatusBadRequest, err.Error())
	case errors.Is(err, payoutkit.ErrForbidden):
		h.renderError(w, r, http.StatusForbidden, "Your role does not allow this, or it needs a fresh two-factor code: "+err.Error()+". Nothing was changed.")
	case errors.Is(err, payoutkit.ErrConflict):
		h.renderError(w, r, http.StatusConflict, sentenceOf(err.Error())+" Nothing was changed.")
	case errors.Is(err, payoutkit.ErrUnauthorized):
		h.renderError(w, r, http.StatusForbidden, "Your session no longer allows this. Sign in again.")
	default:
		h.serverError(w, r, err)
	}
}

// form collects the messages of a form's invalid fields, by field name.
type form map[string]string

func (f *form) add(field, message string) {
	if *f == nil {
		*f = make(form)
	}
	if _, seen := (*f)[field]; !seen {
		(*f)[field] = message
	}
}

func (f form) failed() bool { return len(f) > 0 }

// text checks a required single-line field: present, at most max
// characters, valid UTF-8 without control characters.
func (f *form) text(field, value string, max int) {
	switch {
	case strings.TrimSpace(value) == "":
		f.add(field, "This field is required.")
	case !utf8.ValidString(value):
		f.add(field, "This field must be valid text.")
	case utf8.RuneCountInString(value) > max:
		f.add(field, fmt.Sprintf("This field must be at most %d characters.", max))
	case strings.ContainsFunc(value, isControl):
		f.add(field, "This field must not contain control characters.")
	}
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// sentenceOf capitalises an engine message and ends it with a full stop.
func sentenceOf(msg string) string {
	if msg == "" {
		return msg
	}
	msg = strings.ToUpper(msg[:1]) + msg[1:]
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}
