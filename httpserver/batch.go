package httpserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/payoutkit/payoutkit"
)

// createPayoutBatch serves POST /v1/payouts/batch (contract, section 12).
// An all-or-nothing refusal comes back from the engine as an error whose
// message already names the item, answered like any other.
func (h *Handler) createPayoutBatch(w http.ResponseWriter, r *http.Request, p payoutkit.Principal) error {
	body, err := readObjectLimit(w, r, MaxBatchBodyBytes)
	if err != nil {
		return err
	}
	req, err := readBatchRequest(body)
	if err != nil {
		return err
	}
	b, replayed, err := h.svc.CreatePayoutBatch(r.Context(), p.WorkspaceID, req)
	if err != nil {
		return err
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	return writeOK(w, b)
}

// payoutBatchInfo serves POST /v1/payouts/batch/info.
func (h *Handler) payoutBatchInfo(w http.ResponseWriter, r *http.Request, p payoutkit.Principal) error {
	id, err := readID(w, r, "batch_id")
	if err != nil {
		return err
	}
	b, err := h.svc.PayoutBatch(r.Context(), p.WorkspaceID, id)
	if err != nil {
		return err
	}
	return writeOK(w, b)
}

// payoutFields are the members of a payout create, as POST /v1/payouts
// reads them, into req.
func payoutFields(req *payoutkit.CreatePayoutRequest) []field {
	return []field{
		{"payout_id", true, &req.PayoutID},
		{"amount", true, &req.Amount},
		{"asset", true, &req.Asset},
		{"network", true, &req.Network},
		{"address", true, &req.Address},
		{"payer_id", true, &req.PayerID},
	}
}

// readBatchRequest reads a batch body with a single create's strictness:
// batch_id a string, payouts an array of objects whose members are read as
// a single create's (a wrong type named by its path, "payouts[3].amount",
// or an item's repeated member), all_or_nothing a boolean, null or absent.
// A wrong JSON type anywhere is 40000 naming every problem; otherwise the
// values are left for the engine to judge, missing ones included.
func readBatchRequest(body object) (payoutkit.CreatePayoutBatchRequest, error) {
	var req payoutkit.CreatePayoutBatchRequest
	problems, wrongType := body.check("", field{"batch_id", true, &req.BatchID})
	bad := func(field, message string) {
		problems = append(problems, payoutkit.FieldError{Field: field, Message: message})
		wrongType = true
	}
	switch raw := string(body["all_or_nothing"]); raw {
	case "", "null", "false":
	case "true":
		req.AllOrNothing = true
	default:
		bad("all_or_nothing", "must be a boolean")
	}
	raw, ok := body["payouts"]
	switch {
	case !ok:
		problems = append(problems, payoutkit.FieldError{Field: "payouts", Message: "is required"})
	case len(raw) == 0 || raw[0] != '[':
		bad("payouts", "must be an array")
	default:
		items, tooMany := batchItems(raw)
		if tooMany {
			// The engine judges the count before any item: it needs only
			// the length, not the (up to a megabyte of) items.
			req.Payouts = make([]payoutkit.CreatePayoutRequest, payoutkit.MaxBatchItems+1)
			break
		}
		req.Payouts = make([]payoutkit.CreatePayoutRequest, len(items))
		for i, item := range items {
			path := "payouts[" + strconv.Itoa(i) + "]"
			obj, msg := itemObject(item)
			if msg != "" {
				bad(path, msg)
				continue
			}
			more, wrong := obj.check(path+".", payoutFields(&req.Payouts[i])...)
			problems = append(problems, more...)
			wrongType = wrongType || wrong
		}
	}
	if wrongType {
		return payoutkit.CreatePayoutBatchRequest{}, invalid(problems)
	}
	return req, nil
}

// batchItems splits a JSON array (valid: the body was parsed) into its
// elements, stopping with tooMany past payoutkit.MaxBatchItems, so that a
// megabyte of tiny elements costs no more than the items a batch may hold.
func batchItems(raw json.RawMessage) (items []json.RawMessage, tooMany bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // the opening bracket
		return nil, false
	}
	for dec.More() {
		if len(items) == payoutkit.MaxBatchItems {
			return nil, true
		}
		var item json.RawMessage
		if err := dec.Decode(&item); err != nil {
			return items, false // cannot happen: raw is valid JSON
		}
		items = append(items, item)
	}
	return items, false
}

// itemObject reads one element of payouts as an object, or says what is
// wrong with it: not an object, or a member name repeated.
func itemObject(raw json.RawMessage) (object, string) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, "must be an object"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return nil, "must be an object"
	}
	obj, dup, err := members(dec)
	switch {
	case err != nil:
		return nil, "must be an object"
	case dup != "":
		return nil, "repeats the member " + quoteName(dup)
	}
	return obj, ""
}
