package portal

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/payoutkit/payoutkit"
)

// developerView is the Settings → Developer page.
type developerView struct {
	// WorkspaceID is shown because every CLI command names the workspace
	// by it.
	WorkspaceID   string
	WorkspaceName string
	Keys          []payoutkit.APIKey
	WebhookURL    string
	// NoWebhookURL reports that the workspace has no webhook URL stored
	// (whatever a failed form posted), so that the page says its events
	// are recorded but not sent.
	NoWebhookURL bool
	Events       []payoutkit.Event
	pager
	// NewKey and NewSecret are shown once, on the answer that made them.
	NewKey    string
	NewSecret string
	// Fields holds the messages of the form that was posted, by field.
	Fields form
	// KeyForm is the new-key form as shown: every scope ticked and no
	// allowlist, or what was posted when it was refused.
	KeyForm keyForm
}

// keyForm is the state of the new-key form.
type keyForm struct {
	OrdersWrite, PayoutsWrite bool
	AllowIPs                  string
	// Posted marks a refused form's state, kept even when it is empty.
	Posted bool
}

// defaultKeyForm is the form for a key with every scope, from anywhere.
var defaultKeyForm = keyForm{OrdersWrite: true, PayoutsWrite: true}

// notices are the messages a redirect back to the Developer page may ask
// for with ?done=<code>; nothing else from the URL is shown.
var notices = map[string]string{
	"key-revoked":   "The key was revoked. Requests with it are refused from now on.",
	"no-key":        "No active key has that prefix; nothing was revoked.",
	"webhook-saved": "The webhook URL was saved. New events go there; earlier ones are not sent again unless you resend them.",
	"event-resent":  "The event will be delivered again shortly.",
}

func (h *Handler) developer(w http.ResponseWriter, r *request) {
	h.renderDeveloper(w, r, http.StatusOK, developerView{}, notices[r.URL.Query().Get("done")])
}

// renderDeveloper fills v with the workspace's keys, webhook and events
// and renders the page. A posted webhook URL that failed stays in the form.
func (h *Handler) renderDeveloper(w http.ResponseWriter, r *request, status int, v developerView, notice string) {
	ctx, ws := r.Context(), r.session.WorkspaceID
	keys, err := h.svc.APIKeys(ctx, ws)
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	workspace, err := h.svc.Workspace(ctx, ws)
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	events, err := h.svc.ListEvents(ctx, ws, payoutkit.ListEventsRequest{Limit: pageSize, Cursor: cursor(r)})
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	v.WorkspaceID, v.WorkspaceName = workspace.ID, workspace.Name
	v.NoWebhookURL = workspace.WebhookURL == ""
	v.Keys, v.Events, v.pager = keys, events.Items, nextPage(r, events.NextCursor)
	if !v.KeyForm.Posted {
		v.KeyForm = defaultKeyForm
	}
	if _, posted := v.Fields["url"]; !posted {
		v.WebhookURL = workspace.WebhookURL
	}
	h.renderPage(w, r, status, "developer", page{Title: "Developer settings", Section: "developer", Notice: notice, Data: v})
}

// createKey creates a key with the scopes ticked and the addresses given.
// The form always sends an empty "scope" beside its checkboxes, so that a
// form with none ticked makes a read-only key; a post without any "scope"
// (an older form) makes a key with every scope.
func (h *Handler) createKey(w http.ResponseWriter, r *request) {
	var req payoutkit.CreateAPIKeyRequest
	kf := keyForm{AllowIPs: r.PostForm.Get("allow_ips"), Posted: true}
	if values, ok := r.PostForm["scope"]; ok {
		req.Scopes = []payoutkit.Scope{}
		for _, v := range values {
			if v != "" {
				req.Scopes = append(req.Scopes, payoutkit.Scope(v))
			}
			kf.OrdersWrite = kf.OrdersWrite || v == string(payoutkit.ScopeOrdersWrite)
			kf.PayoutsWrite = kf.PayoutsWrite || v == string(payoutkit.ScopePayoutsWrite)
		}
	}
	req.AllowIPs = strings.FieldsFunc(kf.AllowIPs, func(c rune) bool { return c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t' })
	var f form
	if len(kf.AllowIPs) > 4096 {
		f.add("allow_ips", "Must be at most 4096 characters.")
	}
	var k payoutkit.NewKey
	if !f.failed() {
		var err error
		k, err = h.svc.CreateAPIKey(r.Context(), r.session.WorkspaceID, req, h.actor(r))
		if e, ok := errors.AsType[*payoutkit.Error](err); ok && errors.Is(err, payoutkit.ErrInvalidInput) {
			for _, fe := range e.Fields {
				f.add(fe.Field, sentence(fe.Message))
			}
		} else if err != nil {
			h.engineError(w, r.Request, err)
			return
		}
	}
	if f.failed() {
		h.renderDeveloper(w, r, http.StatusBadRequest, developerView{Fields: f, KeyForm: kf}, "")
		return
	}
	h.renderDeveloper(w, r, http.StatusOK, developerView{NewKey: k.Key},
		"Key "+k.Prefix+" was created. Copy it now: it is shown only once.")
}

// confirmView is the page that asks before a key is revoked or every key
// reset: it says what will happen, and its form posts to Action, the
// endpoint that does it, so that no single click revokes a key.
type confirmView struct {
	Heading string
	Action  string
	Button  string
	// Key is the key a revocation revokes; Reset is set for a reset, with
	// Keys the active keys it revokes.
	Key   *payoutkit.APIKey
	Reset bool
	Keys  []payoutkit.APIKey
}

// confirmRevoke asks before revoking the active key whose prefix the query
// names; a prefix that names no active key of the workspace is a 404 page.
func (h *Handler) confirmRevoke(w http.ResponseWriter, r *request) {
	prefix := strings.TrimPrefix(r.URL.Query().Get("prefix"), "sk_")
	keys, err := h.svc.APIKeys(r.Context(), r.session.WorkspaceID)
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	for _, k := range keys {
		if k.Prefix == prefix && k.Active() {
			h.renderPage(w, r, http.StatusOK, "confirm", page{
				Title: "Revoke key " + k.Prefix, Section: "developer",
				Data: confirmView{Heading: "Revoke key sk_" + k.Prefix + "_…?", Action: "/settings/developer/keys/revoke", Button: "Revoke this key", Key: &k},
			})
			return
		}
	}
	h.renderError(w, r.Request, http.StatusNotFound, "No active key has that prefix; nothing was revoked.")
}

// confirmReset asks before revoking every active key and creating one new
// key, listing the keys that will stop working.
func (h *Handler) confirmReset(w http.ResponseWriter, r *request) {
	keys, err := h.svc.APIKeys(r.Context(), r.session.WorkspaceID)
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	active := make([]payoutkit.APIKey, 0, len(keys))
	for _, k := range keys {
		if k.Active() {
			active = append(active, k)
		}
	}
	h.renderPage(w, r, http.StatusOK, "confirm", page{
		Title: "Reset API keys", Section: "developer",
		Data: confirmView{Heading: "Revoke all keys and create a new one?", Action: "/settings/developer/keys/reset", Button: "Revoke all and create a new key", Reset: true, Keys: active},
	})
}

func (h *Handler) revokeKey(w http.ResponseWriter, r *request) {
	prefix := strings.TrimPrefix(r.PostForm.Get("prefix"), "sk_")
	var f form
	if f.text("prefix", prefix, 8); !f.failed() && !isKeyPrefix(prefix) {
		f.add("prefix", "A key prefix is 8 letters and digits.")
	}
	if f.failed() {
		h.renderDeveloper(w, r, http.StatusBadRequest, developerView{Fields: f}, "")
		return
	}
	n, err := h.svc.RevokeAPIKey(r.Context(), r.session.WorkspaceID, prefix, h.actor(r))
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	done := "key-revoked"
	if n == 0 {
		done = "no-key"
	}
	http.Redirect(w, r.Request, "/settings/developer?done="+done, http.StatusSeeOther)
}

func isKeyPrefix(s string) bool {
	if len(s) != 8 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func (h *Handler) resetKeys(w http.ResponseWriter, r *request) {
	k, err := h.svc.ResetAPIKeys(r.Context(), r.session.WorkspaceID, h.actor(r))
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	h.renderDeveloper(w, r, http.StatusOK, developerView{NewKey: k.Key},
		"Every earlier key was revoked. Key "+k.Prefix+" is the only active one: copy it now, it is shown only once.")
}

func (h *Handler) setWebhook(w http.ResponseWriter, r *request) {
	raw := r.PostForm.Get("url")
	var f form
	if f.text("url", raw, 2048); !f.failed() {
		if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			f.add("url", "Enter an absolute http:// or https:// URL.")
		}
	}
	if !f.failed() {
		_, err := h.svc.SetWebhookURL(r.Context(), r.session.WorkspaceID, raw, h.actor(r))
		if e, ok := errors.AsType[*payoutkit.Error](err); ok && errors.Is(err, payoutkit.ErrInvalidInput) {
			f.add("url", e.Message)
		} else if err != nil {
			h.engineError(w, r.Request, err)
			return
		}
	}
	if f.failed() {
		h.renderDeveloper(w, r, http.StatusBadRequest, developerView{Fields: f, WebhookURL: raw}, "")
		return
	}
	http.Redirect(w, r.Request, "/settings/developer?done=webhook-saved", http.StatusSeeOther)
}

func (h *Handler) rotateSecret(w http.ResponseWriter, r *request) {
	ws, err := h.svc.RotateWebhookSecret(r.Context(), r.session.WorkspaceID, h.actor(r))
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	h.renderDeveloper(w, r, http.StatusOK, developerView{NewSecret: ws.WebhookSecret},
		"A new signing secret is in use from now on. Copy it now: it is shown only once.")
}

func (h *Handler) resendEvent(w http.ResponseWriter, r *request) {
	id := r.PostForm.Get("event_id")
	var f form
	if f.text("event_id", id, 64); f.failed() {
		h.renderDeveloper(w, r, http.StatusBadRequest, developerView{Fields: f}, "")
		return
	}
	if err := h.svc.ResendEvent(r.Context(), r.session.WorkspaceID, id); err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	http.Redirect(w, r.Request, "/settings/developer?done=event-resent", http.StatusSeeOther)
}

type passwordView struct{ Fields form }

func (h *Handler) passwordPage(w http.ResponseWriter, r *request) {
	h.renderPage(w, r, http.StatusOK, "password", page{Title: "Password", Section: "password", Data: passwordView{}})
}

func (h *Handler) changePassword(w http.ResponseWriter, r *request) {
	current, next, confirm := r.PostForm.Get("current_password"), r.PostForm.Get("new_password"), r.PostForm.Get("confirm_password")
	var f form
	f.text("current_password", current, 1024)
	f.text("new_password", next, 72)
	if !f.failed() && next != confirm {
		f.add("confirm_password", "The two new passwords differ.")
	}
	if !f.failed() {
		err := h.team.ChangePassword(r.Context(), r.session, current, next)
		if e, ok := errors.AsType[*payoutkit.Error](err); ok && errors.Is(err, payoutkit.ErrInvalidInput) {
			for _, fe := range e.Fields {
				f.add(fe.Field, sentence(fe.Message))
			}
		} else if err != nil {
			h.engineError(w, r.Request, err)
			return
		}
	}
	if f.failed() {
		h.renderPage(w, r, http.StatusBadRequest, "password", page{Title: "Password", Section: "password", Data: passwordView{Fields: f}})
		return
	}
	h.renderPage(w, r, http.StatusOK, "password", page{
		Title: "Password", Section: "password", Data: passwordView{},
		Notice: "Your password was changed. Your other sessions were signed out.",
	})
}

// sentence turns an engine's field message ("must be at least 12
// characters") into one that stands next to its field.
func sentence(msg string) string {
	if msg == "" {
		return msg
	}
	return "This field " + msg + "."
}

type securityLogView struct {
	Entries []payoutkit.SecurityLogEntry
	pager
}

// securityLog lists the workspace's security log, newest first, a page at
// a time.
func (h *Handler) securityLog(w http.ResponseWriter, r *request) {
	p, err := h.svc.SecurityLog(r.Context(), r.session.WorkspaceID, payoutkit.PageRequest{Limit: pageSize, Cursor: cursor(r)})
	if errors.Is(err, payoutkit.ErrInvalidInput) {
		h.renderError(w, r.Request, http.StatusBadRequest, "This page link is not valid. Go back to the first page of the security log.")
		return
	}
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	h.renderPage(w, r, http.StatusOK, "securitylog", page{
		Title: "Security log", Section: "security-log",
		Data: securityLogView{Entries: p.Items, pager: nextPage(r, p.Next)},
	})
}
