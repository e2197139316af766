package httpserver

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit"
)

// listRequest is the body of POST /v1/payouts/list and /v1/orders/list,
// checked for JSON types and formats; the engine checks the values.
type listRequest struct {
	status, payerID, cursor string
	approval                string // payouts only
	from, to                time.Time
	limit                   int
}

// readListRequest reads a list body. Every member is optional and null
// means absent. status, payer_id, created_from and created_to are strings
// and, when present, not empty; the times are RFC 3339; limit is an integer
// from 1 to 500; an empty cursor asks for the first page. A payout listing
// (payouts) also reads approval, a string that is not empty either.
func readListRequest(w http.ResponseWriter, r *http.Request, payouts bool) (listRequest, error) {
	body, err := readObject(w, r)
	if err != nil {
		return listRequest{}, err
	}
	var lr listRequest
	var from, to string
	var problems []payoutkit.FieldError
	bad := func(field, message string) {
		problems = append(problems, payoutkit.FieldError{Field: field, Message: message})
	}
	if err := body.read(
		field{"status", false, &lr.status},
		field{"payer_id", false, &lr.payerID},
		field{"created_from", false, &from},
		field{"created_to", false, &to},
		field{"cursor", false, &lr.cursor},
	); err != nil {
		return listRequest{}, err
	}
	names := []string{"status", "payer_id", "created_from", "created_to"}
	if payouts {
		if err := body.read(field{"approval", false, &lr.approval}); err != nil {
			return listRequest{}, err
		}
		names = append(names, "approval")
	}
	for _, name := range names {
		if string(body[name]) == `""` {
			bad(name, "must not be empty (leave it out to keep all)")
		}
	}
	parse := func(name, s string) time.Time {
		if s == "" {
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			bad(name, "must be an RFC 3339 time such as 2026-11-22T10:00:00Z")
		}
		return t
	}
	lr.from, lr.to = parse("created_from", from), parse("created_to", to)
	if lr.to.IsZero() && to != "" {
		// 0001-01-01T00:00:00Z: nothing was created before it, but the
		// zero time means no bound; the next microsecond keeps the same
		// (empty) set.
		lr.to = lr.to.Add(time.Microsecond)
	}
	if raw, ok := body["limit"]; ok && string(raw) != "null" {
		n, err := strconv.Atoi(string(raw))
		switch {
		case err != nil || strings.HasPrefix(string(raw), "+"):
			bad("limit", "must be an integer from 1 to "+strconv.Itoa(payoutkit.MaxListLimit))
		case n < 1 || n > payoutkit.MaxListLimit:
			bad("limit", "must be between 1 and "+strconv.Itoa(payoutkit.MaxListLimit))
		default:
			lr.limit = n
		}
	}
	if len(problems) > 0 {
		parts := make([]string, len(problems))
		for i, f := range problems {
			parts[i] = f.Field + " " + f.Message
		}
		return listRequest{}, payoutkit.NewError(payoutkit.CodeInvalidInput, strings.Join(parts, "; "), problems)
	}
	return lr, nil
}

func (h *Handler) listPayouts(w http.ResponseWriter, r *http.Request, p payoutkit.Principal) error {
	lr, err := readListRequest(w, r, true)
	if err != nil {
		return err
	}
	list, err := h.svc.ListPayouts(r.Context(), p.WorkspaceID, payoutkit.ListPayoutsRequest{
		Status: payoutkit.PayoutStatus(lr.status), PayerID: lr.payerID, Approval: payoutkit.Approval(lr.approval),
		CreatedFrom: lr.from, CreatedTo: lr.to, Limit: lr.limit, Cursor: lr.cursor,
	})
	if err != nil {
		return err
	}
	return writeOK(w, list)
}

func (h *Handler) listOrders(w http.ResponseWriter, r *http.Request, p payoutkit.Principal) error {
	lr, err := readListRequest(w, r, false)
	if err != nil {
		return err
	}
	list, err := h.svc.ListOrders(r.Context(), p.WorkspaceID, payoutkit.ListOrdersRequest{
		Status: payoutkit.OrderStatus(lr.status), PayerID: lr.payerID,
		CreatedFrom: lr.from, CreatedTo: lr.to, Limit: lr.limit, Cursor: lr.cursor,
	})
	if err != nil {
		return err
	}
	return writeOK(w, list)
}
