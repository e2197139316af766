package portal

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
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
	"login", "error", "dashboard", "payments", "withdrawals", "withdrawal", "customers", "developer", "password",
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
	"iso": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"path": url.PathEscape,
	"dash": func(s string) string {
		if s == "" {
			return "—"
		}
		return s
	},
	"ms": func(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) },
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
}

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
	p.Staff, p.Workspace, p.CSRF = r.session.StaffEmail, ws.Name, r.csrf
	h.render(w, r.Request, status, name, p)
}

type errorView struct {
	Status  int
	Heading string
	Message string
}

func (h *Handler) renderError(w http.ResponseWriter, r *http.Request, status int, message string) {
	h.render(w, r, status, "error", page{
		Title: http.StatusText(status),
		Data:  errorView{Status: status, Heading: http.StatusText(status), Message: message},
	})
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
