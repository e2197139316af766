package portal

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/payoutkit/payoutkit"
)

// pageSize is the number of rows of every list page.
const pageSize = payoutkit.DefaultListLimit

// dashboardRows is the number of recent withdrawals on the dashboard.
const dashboardRows = 10

// pager is the link to a list's next page, empty on the last page.
type pager struct{ Next string }

// nextPage links the current URL with cursor set to next (none when next
// is empty), keeping the other parameters.
func nextPage(r *request, next string) pager {
	if next == "" {
		return pager{}
	}
	q := r.URL.Query()
	q.Set("cursor", next)
	return pager{Next: r.URL.Path + "?" + q.Encode()}
}

// cursor is the page's cursor, a NextCursor of the engine's that nextPage
// put in the query string; the engine refuses one it did not issue for this
// workspace and listing (a 400 page).
func cursor(r *request) string { return r.URL.Query().Get("cursor") }

type dashboardView struct {
	Balance payoutkit.Balance
	Recent  []payoutkit.Payout
	More    bool
}

func (h *Handler) dashboard(w http.ResponseWriter, r *request) {
	ws := r.session.WorkspaceID
	b, err := h.svc.Balance(r.Context(), ws)
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	recent, err := h.svc.ListPayouts(r.Context(), ws, payoutkit.ListPayoutsRequest{Limit: dashboardRows})
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	h.renderPage(w, r, http.StatusOK, "dashboard", page{
		Title: "Dashboard", Section: "dashboard",
		Data: dashboardView{Balance: b, Recent: recent.Items, More: recent.NextCursor != ""},
	})
}

type paymentsView struct {
	Orders []payoutkit.Order
	pager
}

func (h *Handler) payments(w http.ResponseWriter, r *request) {
	list, err := h.svc.ListOrders(r.Context(), r.session.WorkspaceID, payoutkit.ListOrdersRequest{Limit: pageSize, Cursor: cursor(r)})
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	h.renderPage(w, r, http.StatusOK, "payments", page{
		Title: "Payments", Section: "payments",
		Data: paymentsView{Orders: list.Items, pager: nextPage(r, list.NextCursor)},
	})
}

type withdrawalsView struct {
	Status string
	Q      string
	Tabs   []tab
	// Exact is the payout whose payout_id is Q, shown above Q's payouts as
	// a payer.
	Exact   *payoutkit.Payout
	Payouts []payoutkit.Payout
	Fields  form
	pager
}

type tab struct {
	Label, URL string
	Active     bool
}

var statusTabs = []struct{ label, status string }{
	{"All", ""}, {"Submitted", "submitted"}, {"Completed", "completed"}, {"Failed", "failed"},
}

func (h *Handler) withdrawals(w http.ResponseWriter, r *request) {
	query := r.URL.Query()
	v := withdrawalsView{Status: query.Get("status"), Q: query.Get("q")}
	for _, t := range statusTabs {
		u := url.Values{}
		if t.status != "" {
			u.Set("status", t.status)
		}
		if v.Q != "" {
			u.Set("q", v.Q)
		}
		link := "/withdrawals"
		if len(u) > 0 {
			link += "?" + u.Encode()
		}
		v.Tabs = append(v.Tabs, tab{Label: t.label, URL: link, Active: t.status == v.Status})
	}
	switch payoutkit.PayoutStatus(v.Status) {
	case "", payoutkit.PayoutSubmitted, payoutkit.PayoutCompleted, payoutkit.PayoutFailed:
	default:
		v.Fields.add("status", "Choose submitted, completed or failed.")
	}
	if v.Q != "" {
		v.Fields.text("q", v.Q, 128)
	}
	if v.Fields.failed() {
		h.renderPage(w, r, http.StatusBadRequest, "withdrawals", page{Title: "Withdrawals", Section: "withdrawals", Data: v})
		return
	}

	ws := r.session.WorkspaceID
	req := payoutkit.ListPayoutsRequest{Status: payoutkit.PayoutStatus(v.Status), PayerID: v.Q, Limit: pageSize, Cursor: cursor(r)}
	if v.Q != "" && req.Cursor == "" {
		// q names a payout_id or a payer_id: show the payout with that id
		// first, then the payer's payouts.
		p, err := h.svc.Payout(r.Context(), ws, v.Q)
		switch {
		case err == nil:
			if p.PayerID != v.Q && (req.Status == "" || p.Status == req.Status) {
				v.Exact = &p
			}
		case errors.Is(err, payoutkit.ErrNotFound), errors.Is(err, payoutkit.ErrInvalidInput):
		default:
			h.engineError(w, r.Request, err)
			return
		}
	}
	list, err := h.svc.ListPayouts(r.Context(), ws, req)
	if req.Cursor == "" && refuses(err, "payer_id") {
		// A q that no payer_id can be (invisible characters, which
		// payouts refuse) matches no payouts.
		list, err = payoutkit.List[payoutkit.Payout]{}, nil
	}
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	v.Payouts, v.pager = list.Items, nextPage(r, list.NextCursor)
	h.renderPage(w, r, http.StatusOK, "withdrawals", page{Title: "Withdrawals", Section: "withdrawals", Data: v})
}

// refuses reports whether err is the engine's refusal of field.
func refuses(err error, field string) bool {
	var e *payoutkit.Error
	if !errors.As(err, &e) {
		return false
	}
	for _, f := range e.Fields {
		if f.Field == field {
			return true
		}
	}
	return false
}

type withdrawalView struct {
	Payout payoutkit.Payout
	Events []payoutkit.EventLog
	// ExplorerURL, when set, links the payout's transaction in a block
	// explorer beside its txid (Options.ExplorerURL).
	ExplorerURL string
}

func (h *Handler) withdrawal(w http.ResponseWriter, r *request) {
	ws, id := r.session.WorkspaceID, r.PathValue("payout_id")
	p, err := h.svc.Payout(r.Context(), ws, id)
	if errors.Is(err, payoutkit.ErrInvalidInput) { // not even a payout_id: no such payout
		err = payoutkit.ErrNotFound
	}
	if errors.Is(err, payoutkit.ErrNotFound) {
		h.renderError(w, r.Request, http.StatusNotFound, "No withdrawal has the payout ID “"+id+"” in this workspace.")
		return
	}
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	events, err := h.svc.PayoutEvents(r.Context(), ws, id)
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	h.renderPage(w, r, http.StatusOK, "withdrawal", page{
		Title: "Withdrawal " + p.PayoutID, Section: "withdrawals",
		Data: withdrawalView{Payout: p, Events: events, ExplorerURL: h.explorerURL(p)},
	})
}

// explorerURL is the explorer page of p's transaction, when the portal
// knows one.
func (h *Handler) explorerURL(p payoutkit.Payout) string {
	if h.explorer == nil || p.TxID == "" {
		return ""
	}
	return h.explorer(p.Network, p.TxID)
}

type customersView struct {
	Customers []payoutkit.Customer
	pager
}

func (h *Handler) customers(w http.ResponseWriter, r *request) {
	list, err := h.svc.ListCustomers(r.Context(), r.session.WorkspaceID, payoutkit.ListCustomersRequest{Limit: pageSize, Cursor: cursor(r)})
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	h.renderPage(w, r, http.StatusOK, "customers", page{
		Title: "Customers", Section: "customers",
		Data: customersView{Customers: list.Items, pager: nextPage(r, list.NextCursor)},
	})
}
