package portal

import (
	"encoding/csv"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/payoutkit/payoutkit"
)

// exportBatch is how many rows an export reads from the engine at a time:
// the listing's largest page, so that an export of a million rows holds
// one page in memory and asks 2,000 times.
const exportBatch = payoutkit.MaxListLimit

// exportWriteTime is how long the client may take to receive one batch
// of an export; each batch moves the connection's write deadline on by it,
// so that a long export outlives the server's WriteTimeout while a client
// that stops reading is still cut off.
const exportWriteTime = time.Minute

// payoutColumns are the withdrawals export's columns: the payout object's
// fields in the contract's order (section 4), then those that later
// sections added.
var payoutColumns = []string{
	"payout_id", "status", "amount", "currency", "asset", "network", "address", "payer_id",
	"txid", "failure_reason", "created_at", "updated_at",
	"asset_amount", "network_fee", "approval",
}

// orderColumns are the payments export's columns: the order object's
// fields in the contract's order.
var orderColumns = []string{
	"order_id", "status", "amount", "currency", "payer_id", "description", "created_at", "updated_at", "paid_at",
}

// withdrawalsCSV answers every payout that the withdrawals page's filters
// keep, as CSV, streamed batch by batch from the engine.
func (h *Handler) withdrawalsCSV(w http.ResponseWriter, r *request) {
	v, req := withdrawalsFilter(r)
	if v.Fields.failed() {
		h.renderPage(w, r, http.StatusBadRequest, "withdrawals", page{Title: "Withdrawals", Section: "withdrawals", Data: v})
		return
	}
	var first []payoutkit.Payout
	if v.Q != "" {
		exact, err := h.exactPayout(r, req)
		if err != nil {
			h.engineError(w, r.Request, err)
			return
		}
		if exact != nil {
			first = append(first, *exact)
		}
	}
	ws := r.session.WorkspaceID
	next := func(cursor string) ([]payoutkit.Payout, string, error) {
		req.Limit, req.Cursor = exportBatch, cursor
		list, err := h.svc.ListPayouts(r.Context(), ws, req)
		if cursor == "" && refuses(err, "payer_id") {
			return nil, "", nil // a q that no payer_id can be: no payer's payouts
		}
		return list.Items, list.NextCursor, err
	}
	row := make([]string, len(payoutColumns))
	streamCSV(h, w, r, "withdrawals", payoutColumns, first, next, func(p payoutkit.Payout) []string {
		approval := p.Approval
		if approval == "" {
			approval = payoutkit.ApprovalNone
		}
		row = append(row[:0], p.PayoutID, string(p.Status), p.Amount.String(), payoutkit.Currency,
			p.Asset, p.Network, p.Address, p.PayerID, p.TxID, p.FailureReason,
			csvTime(p.CreatedAt), csvTime(p.UpdatedAt), "", "", string(approval))
		if p.AssetAmount.Valid {
			row[12] = p.AssetAmount.Decimal.String()
		}
		if p.NetworkFee.Valid {
			row[13] = p.NetworkFee.Decimal.String()
		}
		return row
	})
}

// paymentsCSV answers every order of the workspace as CSV, streamed batch
// by batch from the engine.
func (h *Handler) paymentsCSV(w http.ResponseWriter, r *request) {
	ws := r.session.WorkspaceID
	next := func(cursor string) ([]payoutkit.Order, string, error) {
		list, err := h.svc.ListOrders(r.Context(), ws, payoutkit.ListOrdersRequest{Limit: exportBatch, Cursor: cursor})
		return list.Items, list.NextCursor, err
	}
	row := make([]string, len(orderColumns))
	streamCSV(h, w, r, "payments", orderColumns, nil, next, func(o payoutkit.Order) []string {
		return append(row[:0], o.OrderID, string(o.Status), o.Amount.String(), payoutkit.Currency,
			o.PayerID, o.Description, csvTime(o.CreatedAt), csvTime(o.UpdatedAt), csvTime(o.PaidAt))
	})
}

// streamCSV writes a header row, the rows of first, then every row that
// next reads, batch after batch until its cursor runs out, each cell
// neutralised for spreadsheets. An error before the first batch answers an
// error page; after it, the answer is already under way, so the
// connection is cut: a client then sees a broken download, never a short
// file that looks whole.
func streamCSV[T any](h *Handler, w http.ResponseWriter, r *request, name string, header []string, first []T,
	next func(cursor string) ([]T, string, error), record func(T) []string,
) {
	items, cursor, err := next("")
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/csv; charset=utf-8")
	hdr.Set("Content-Disposition", `attachment; filename="`+name+"-"+time.Now().UTC().Format(dateLayout)+`.csv"`)
	rc := http.NewResponseController(w)
	out := csv.NewWriter(w)
	write := func(cells []string) {
		for i, c := range cells {
			cells[i] = neutralise(c)
		}
		_ = out.Write(cells) // a failed write shows in out.Error at the next flush
	}
	write(append([]string(nil), header...))
	for _, it := range first {
		write(record(it))
	}
	for {
		for _, it := range items {
			write(record(it))
		}
		out.Flush()
		if err := out.Error(); err != nil {
			return // the client went away
		}
		if cursor == "" {
			return
		}
		if err := rc.SetWriteDeadline(time.Now().Add(exportWriteTime)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return
		}
		if items, cursor, err = next(cursor); err != nil {
			h.log.ErrorContext(r.Context(), "portal: export cut short", "export", name, "err", err)
			panic(http.ErrAbortHandler)
		}
	}
}

// neutralise keeps a cell from being read as a formula by a spreadsheet: a
// cell starting with =, +, -, @, a tab or a carriage return (contract,
// section 11), or whose first character after leading blanks is =, +, - or
// @, gets a leading apostrophe. The blanks count because an import that
// trims them (LibreOffice's "trim spaces") would otherwise run " =1+2".
func neutralise(cell string) string {
	if cell == "" {
		return cell
	}
	switch cell[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + cell
	}
	if t := strings.TrimLeftFunc(cell, csvBlank); t != "" {
		switch t[0] {
		case '=', '+', '-', '@':
			return "'" + cell
		}
	}
	return cell
}

// csvBlank reports whether a spreadsheet may trim r from the start of a
// cell: white space (NBSP and the ideographic space included), control
// characters, and invisible format characters such as a zero-width space
// or a byte-order mark. It errs wide: a cell it wrongly takes for a
// formula only gains an apostrophe.
func csvBlank(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// csvTime writes a time as the API does (RFC 3339, UTC), or nothing for
// the zero time.
func csvTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
