package portal

import (
	"errors"
	"net/http"
	"net/url"
	"time"

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
	Chart   chartView
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
	days, err := h.svc.PayoutsPerDay(r.Context(), ws, chartDays)
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
		Data: dashboardView{Balance: b, Chart: newChart(days), Recent: recent.Items, More: recent.NextCursor != ""},
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
	// Approval is "pending" on the Needs approval tab.
	Approval string
	Q        string
	// From and To are the date filters as given (YYYY-MM-DD, UTC, To
	// inclusive).
	From, To string
	Tabs     []tab
	// Exact is the payout whose payout_id is Q, shown above Q's payouts as
	// a payer.
	Exact   *payoutkit.Payout
	Payouts []payoutkit.Payout
	Fields  form
	// CSV links the export of every payout the page's filters keep.
	CSV string
	pager
}

type tab struct {
	Label, URL string
	Active     bool
}

var statusTabs = []struct{ label, status string }{
	{"All", ""}, {"Submitted", "submitted"}, {"Completed", "completed"}, {"Failed", "failed"},
}

// dateLayout is how the date filters are written: a day, in UTC.
const dateLayout = "2006-01-02"

// withdrawalsFilter reads the withdrawals list's filters (status,
// approval, q, from and to) into the page's view and the engine's request, checking each: a
// bad one leaves its message in v.Fields.
func withdrawalsFilter(r *request) (withdrawalsView, payoutkit.ListPayoutsRequest) {
	query := r.URL.Query()
	v := withdrawalsView{Status: query.Get("status"), Approval: query.Get("approval"), Q: query.Get("q"), From: query.Get("from"), To: query.Get("to")}
	filters := func(status, approval string) url.Values {
		u := url.Values{}
		for k, val := range map[string]string{"status": status, "approval": approval, "q": v.Q, "from": v.From, "to": v.To} {
			if val != "" {
				u.Set(k, val)
			}
		}
		return u
	}
	for _, t := range statusTabs {
		link := "/withdrawals"
		if u := filters(t.status, ""); len(u) > 0 {
			link += "?" + u.Encode()
		}
		v.Tabs = append(v.Tabs, tab{Label: t.label, URL: link, Active: t.status == v.Status && v.Approval == ""})
	}
	v.Tabs = append(v.Tabs, tab{Label: "Needs approval", URL: "/withdrawals?" + filters("", "pending").Encode(), Active: v.Approval == "pending"})
	switch v.Approval {
	case "", string(payoutkit.ApprovalPending), string(payoutkit.ApprovalApproved), string(payoutkit.ApprovalRejected), string(payoutkit.ApprovalNone):
	default:
		v.Fields.add("approval", "Choose pending, approved, rejected or none.")
	}
	v.CSV = "/withdrawals.csv"
	if u := filters(v.Status, v.Approval); len(u) > 0 {
		v.CSV += "?" + u.Encode()
	}
	switch payoutkit.PayoutStatus(v.Status) {
	case "", payoutkit.PayoutSubmitted, payoutkit.PayoutCompleted, payoutkit.PayoutFailed:
	default:
		v.Fields.add("status", "Choose submitted, completed or failed.")
	}
	if v.Q != "" {
		v.Fields.text("q", v.Q, 128)
	}
	req := payoutkit.ListPayoutsRequest{Status: payoutkit.PayoutStatus(v.Status), Approval: payoutkit.Approval(v.Approval), PayerID: v.Q}
	day := func(field, value string) time.Time {
		if value == "" {
			return time.Time{}
		}
		d, err := time.Parse(dateLayout, value)
		if err != nil {
			v.Fields.add(field, "Enter a date as YYYY-MM-DD.")
		}
		return d
	}
	req.CreatedFrom = day("from", v.From)
	if to := day("to", v.To); !to.IsZero() {
		req.CreatedTo = to.AddDate(0, 0, 1) // the whole day of to
	}
	if !req.CreatedFrom.IsZero() && !req.CreatedTo.IsZero() && !req.CreatedFrom.Before(req.CreatedTo) {
		v.Fields.add("to", "The end date must not be before the start date.")
	}
	return v, req
}

// exactPayout is the payout whose payout_id is q when it passes the rest of
// req's filters and is not one of q's payouts as a payer (which the list
// holds), or nil.
func (h *Handler) exactPayout(r *request, req payoutkit.ListPayoutsRequest) (*payoutkit.Payout, error) {
	p, err := h.svc.Payout(r.Context(), r.session.WorkspaceID, req.PayerID)
	switch {
	case errors.Is(err, payoutkit.ErrNotFound), errors.Is(err, payoutkit.ErrInvalidInput):
		return nil, nil
	case err != nil:
		return nil, err
	}
	if p.PayerID == req.PayerID || (req.Status != "" && p.Status != req.Status) || (req.Approval != "" && p.Approval != req.Approval) ||
		(!req.CreatedFrom.IsZero() && p.CreatedAt.Before(req.CreatedFrom)) ||
		(!req.CreatedTo.IsZero() && !p.CreatedAt.Before(req.CreatedTo)) {
		return nil, nil
	}
	return &p, nil
}

func (h *Handler) withdrawals(w http.ResponseWriter, r *request) {
	v, req := withdrawalsFilter(r)
	if v.Fields.failed() {
		h.renderPage(w, r, http.StatusBadRequest, "withdrawals", page{Title: "Withdrawals", Section: "withdrawals", Data: v})
		return
	}

	ws := r.session.WorkspaceID
	req.Limit, req.Cursor = pageSize, cursor(r)
	if v.Q != "" && req.Cursor == "" {
		// q names a payout_id or a payer_id: show the payout with that id
		// first, then the payer's payouts.
		exact, err := h.exactPayout(r, req)
		if err != nil {
			h.engineError(w, r.Request, err)
			return
		}
		v.Exact = exact
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
	// Decision is who approved or rejected a held payout, and when.
	Decision *payoutkit.SecurityLogEntry
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
	v := withdrawalView{Payout: p, Events: events, ExplorerURL: h.explorerURL(p)}
	if p.Approval == payoutkit.ApprovalApproved || p.Approval == payoutkit.ApprovalRejected {
		d, err := h.svc.PayoutDecision(r.Context(), ws, id)
		if err == nil {
			v.Decision = &d
		} else if !errors.Is(err, payoutkit.ErrNotFound) {
			h.engineError(w, r.Request, err)
			return
		}
	}
	notice := map[string]string{
		"approved": "The payout was approved: it is handed to the processor now.",
		"rejected": "The payout was rejected: it failed and its amount is back in the balance.",
	}[r.URL.Query().Get("done")]
	h.renderPage(w, r, http.StatusOK, "withdrawal", page{
		Title: "Withdrawal " + p.PayoutID, Section: "withdrawals", Notice: notice, Data: v,
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
