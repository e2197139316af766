package portal

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/batchcsv"
)

// The mass payouts' pages (contract, section 12): an admin uploads a CSV
// file on /withdrawals/batch, reads a preview of every row with what is
// wrong with it, and confirms. Nothing is created before the confirm, whose
// form carries the rows (the file re-encoded) and the batch ID the preview
// chose: the confirm judges the rows again, and a second confirm of the
// same preview replays the batch instead of paying twice.

// maxBatchBody bounds the body of a batch's upload or confirm: room for a
// file well over batchcsv.MaxBytes, so that it is read to its end (the file
// no further than the limit, the rest discarded) and refused with a
// message, and for a confirm's rows posted URL-encoded, which can take
// three times the file's size.
const maxBatchBody = 8 << 20

// maxBatchField bounds one field of a batch's multipart form: the confirm's
// rows are the largest.
const maxBatchField = batchcsv.MaxBytes

// maxBatchParts bounds the parts of a batch's multipart form.
const maxBatchParts = 16

// upload is the file a batch form posted, if any.
type upload struct {
	// sent is set when the form had a file part; data holds at most
	// batchcsv.MaxBytes+1 bytes of it, enough for Parse to refuse a file
	// over the limit.
	sent bool
	name string
	data []byte
}

// uploadForm wraps a page that takes a file upload (multipart/form-data)
// or its confirm: the role first, so that another role's upload is not
// even read, then the body, streamed, then the session's CSRF token.
func (h *Handler) uploadForm(need payoutkit.Role, page func(http.ResponseWriter, *request, upload)) http.Handler {
	return h.session(func(w http.ResponseWriter, r *request) {
		if _, err := h.team.Authorize(r.Context(), h.caller(r), need); err != nil {
			h.engineError(w, r.Request, err)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBatchBody)
		up, err := readUpload(r.Request)
		if err != nil {
			h.renderError(w, r.Request, http.StatusBadRequest, "The form could not be read. A batch file may be at most 2 MiB.")
			return
		}
		if !sameToken(r.PostForm.Get("csrf_token"), r.csrf) {
			h.forbidden(w, r.Request)
			return
		}
		page(w, r, up)
	})
}

// readUpload reads a posted form into r.PostForm: a multipart one as a
// stream, keeping its file part (named "file") in the returned upload, up
// to batchcsv.MaxBytes+1 bytes of it; a URL-encoded one as ParseForm does.
func readUpload(r *http.Request) (upload, error) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "multipart/form-data" {
		return upload{}, r.ParseForm()
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return upload{}, err
	}
	r.PostForm = make(url.Values)
	var up upload
	for range maxBatchParts {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return up, nil
		}
		if err != nil {
			return up, err
		}
		name := part.FormName()
		if name == "file" && !up.sent {
			up.sent, up.name = true, part.FileName()
			up.data, err = io.ReadAll(io.LimitReader(part, batchcsv.MaxBytes+1))
			if err == nil {
				_, err = io.Copy(io.Discard, part) // the rest of a file Parse refuses as too large
			}
			if err != nil && len(up.data) > batchcsv.MaxBytes {
				// Over the body's limit too: the page says the file is
				// too large, which is all there is to say.
				return up, nil
			}
		} else {
			var v []byte
			v, err = io.ReadAll(io.LimitReader(part, maxBatchField+1))
			if err == nil && len(v) > maxBatchField {
				err = fmt.Errorf("form field %q is too large", name)
			}
			r.PostForm.Add(name, string(v))
		}
		part.Close()
		if err != nil {
			return up, err
		}
	}
	return up, errors.New("too many form parts")
}

// batchView is the batch page: the upload form, a preview of an uploaded
// file with its confirm form, and the workspace's batches.
type batchView struct {
	// Header is the file's first line, as the form explains it.
	Header string
	// AllOrNothing is the upload form's choice, carried to the confirm.
	AllOrNothing bool
	// StepUp asks for a two-factor code with the confirm: the user's
	// two-factor sign-in is on.
	StepUp bool
	// Fields holds the upload form's messages: "file" for a file refused
	// as a whole, "form" for the batch's own.
	Fields form

	// Preview is set when a file was read: one row per line.
	Preview bool
	Rows    []previewRow
	// Total sums the rows' valid amounts; Invalid counts the rows with a
	// problem.
	Total   payoutkit.Amount
	Invalid int
	// Refusal is why a confirm created nothing (an all-or-nothing batch
	// with a refused item).
	Refusal string
	// BatchID and CSV are the confirm's hidden fields: the batch ID the
	// preview chose and the rows, re-encoded.
	BatchID, CSV string

	// Batches is a page of the workspace's batches, newest first.
	Batches []payoutkit.PayoutBatch
	pager
}

// previewRow is one row of an uploaded file, with what is wrong with it.
type previewRow struct {
	Line int
	payoutkit.CreatePayoutRequest
	Problems []string
}

// batchNotices are the result page's messages after a confirm.
var batchNotices = map[string]string{
	"created":  "The batch was created. Each accepted payout is on its way like any other.",
	"replayed": "This batch had already been created: it is shown as it was, and nothing was paid twice.",
}

func (h *Handler) batchPage(w http.ResponseWriter, r *request) {
	h.renderBatch(w, r, http.StatusOK, batchView{})
}

// renderBatch renders the batch page with v, the page of batches of the
// request's cursor added.
func (h *Handler) renderBatch(w http.ResponseWriter, r *request, status int, v batchView) {
	list, err := h.svc.PayoutBatches(r.Context(), r.session.WorkspaceID, payoutkit.PageRequest{Limit: pageSize, Cursor: cursor(r)})
	if errors.Is(err, payoutkit.ErrInvalidInput) {
		h.renderError(w, r.Request, http.StatusBadRequest, "This page link is not valid. Go back to the first page of the batches.")
		return
	}
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	v.Batches, v.pager = list.Items, nextPage(r, list.Next)
	v.StepUp, v.Header = r.session.TwoFactor, batchcsv.HeaderLine
	h.renderPage(w, r, status, "batch", page{Title: "Batch payouts", Section: "withdrawals", Data: v})
}

// batchPost is an upload (a preview) or, with step=confirm, a confirm.
func (h *Handler) batchPost(w http.ResponseWriter, r *request, up upload) {
	if r.PostForm.Get("step") == "confirm" {
		h.confirmBatch(w, r)
		return
	}
	v := batchView{AllOrNothing: checked(r.PostForm.Get("all_or_nothing"))}
	if !up.sent || (up.name == "" && len(up.data) == 0) {
		v.Fields.add("file", "Choose a CSV file to upload.")
		h.renderBatch(w, r, http.StatusBadRequest, v)
		return
	}
	file, err := batchcsv.Parse(bytes.NewReader(up.data))
	if err != nil {
		v.Fields.add("file", sentenceOf(err.Error())+" Nothing was created.")
		h.renderBatch(w, r, http.StatusBadRequest, v)
		return
	}
	v.BatchID = newBatchID(time.Now())
	if !h.preview(&v, file) {
		h.renderBatch(w, r, http.StatusBadRequest, v)
		return
	}
	h.renderBatch(w, r, http.StatusOK, v)
}

// confirmBatch creates the batch the confirm form carries, judged again as
// the preview judged it: the rows may have been changed on the way.
func (h *Handler) confirmBatch(w http.ResponseWriter, r *request) {
	v := batchView{AllOrNothing: checked(r.PostForm.Get("all_or_nothing")), BatchID: r.PostForm.Get("batch_id")}
	file, err := batchcsv.Parse(strings.NewReader(r.PostForm.Get("csv")))
	if err != nil {
		v.Fields.add("file", "The confirmed rows could not be read: "+sentenceOf(err.Error())+" Nothing was created; upload the file again.")
		h.renderBatch(w, r, http.StatusBadRequest, v)
		return
	}
	if !h.preview(&v, file) {
		h.renderBatch(w, r, http.StatusBadRequest, v)
		return
	}
	req := payoutkit.CreatePayoutBatchRequest{BatchID: v.BatchID, Payouts: file.Payouts, AllOrNothing: v.AllOrNothing}
	ctx, ws := r.Context(), r.session.WorkspaceID
	if r.session.TwoFactor {
		// A fresh code, as other sensitive actions of an admin with
		// two-factor sign-in take one; not for a batch that exists
		// already, which a second confirm only replays (and whose code
		// the first one used up).
		_, err := h.svc.PayoutBatch(ctx, ws, v.BatchID)
		switch {
		case errors.Is(err, payoutkit.ErrNotFound):
			if err := h.steppedUp(r).Confirm(ctx); err != nil {
				h.engineError(w, r.Request, err)
				return
			}
		case err != nil:
			h.engineError(w, r.Request, err)
			return
		}
	}
	b, replayed, err := h.svc.CreatePayoutBatch(ctx, ws, req)
	if e, ok := errors.AsType[*payoutkit.Error](err); ok && v.AllOrNothing && strings.HasPrefix(e.Message, "payouts[") {
		v.Refusal = "Nothing was created: every payout of an all-or-nothing batch must be accepted, and " + e.Message + "."
		h.renderBatch(w, r, http.StatusConflict, v)
		return
	}
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	notice := batchNotices["created"]
	if replayed {
		notice = batchNotices["replayed"]
	}
	h.renderBatchResult(w, r, b, notice)
}

// preview fills v's rows from file, each with the file's problems and the
// engine's validation of its payout, and the confirm's hidden rows when
// there is no problem. It reports whether there is none.
func (h *Handler) preview(v *batchView, file batchcsv.File) bool {
	v.Preview = true
	v.Rows = make([]previewRow, len(file.Payouts))
	for i, p := range file.Payouts {
		v.Rows[i] = previewRow{Line: file.Lines[i], CreatePayoutRequest: p}
	}
	// A row the file itself spoils (a wrong column count, not CSV) is not
	// judged further: its cells are not what they seem. A formula cell
	// is its column's one problem.
	spoilt := make(map[int]bool)
	flagged := make(map[string]bool)
	for _, p := range file.Problems {
		v.Rows[p.Row].Problems = append(v.Rows[p.Row].Problems, problemText(p.Column, p.Message))
		if p.Column == "" {
			spoilt[p.Row] = true
		}
		flagged[fmt.Sprintf("payouts[%d].%s", p.Row, p.Column)] = true
	}
	err := h.svc.CheckPayoutBatch(payoutkit.CreatePayoutBatchRequest{BatchID: v.BatchID, Payouts: file.Payouts, AllOrNothing: v.AllOrNothing})
	if e, ok := errors.AsType[*payoutkit.Error](err); ok && errors.Is(err, payoutkit.ErrInvalidInput) {
		for _, fe := range e.Fields {
			row, column, ok := itemField(fe.Field, len(v.Rows))
			switch {
			case !ok:
				v.Fields.add("form", sentenceOf(fe.Field+" "+fe.Message))
			case spoilt[row] || flagged[fe.Field]:
			default:
				msg := itemRef.ReplaceAllStringFunc(fe.Message, func(ref string) string {
					if i, _, ok := itemField(ref+".", len(v.Rows)); ok {
						return "line " + strconv.Itoa(v.Rows[i].Line)
					}
					return ref
				})
				v.Rows[row].Problems = append(v.Rows[row].Problems, problemText(column, msg))
			}
		}
		if len(e.Fields) == 0 {
			v.Fields.add("form", sentenceOf(e.Message))
		}
	} else if err != nil {
		v.Fields.add("form", "The batch could not be checked: "+sentenceOf(err.Error()))
	}
	for _, row := range v.Rows {
		if len(row.Problems) > 0 {
			v.Invalid++
		}
		if a, err := payoutkit.ParseAmount(row.Amount); err == nil {
			v.Total += a
		}
	}
	if v.Invalid > 0 || v.Fields.failed() {
		return false
	}
	var buf strings.Builder
	if err := batchcsv.Encode(&buf, file.Payouts); err != nil {
		v.Fields.add("form", "The rows could not be carried to the confirm.")
		return false
	}
	v.CSV = buf.String()
	return true
}

// itemRef is an engine message's reference to another item
// ("is also payouts[0]'s"), which the preview names by its line.
var itemRef = regexp.MustCompile(`payouts\[\d+\]`)

// itemField splits an engine field path "payouts[3].address" into the
// item's index (below n) and its field.
func itemField(path string, n int) (int, string, bool) {
	rest, ok := strings.CutPrefix(path, "payouts[")
	if !ok {
		return 0, "", false
	}
	num, field, ok := strings.Cut(rest, "].")
	if !ok {
		return 0, "", false
	}
	i, err := strconv.Atoi(num)
	if err != nil || i < 0 || i >= n {
		return 0, "", false
	}
	return i, field, true
}

// problemText is a row's problem as the preview prints it: the column,
// then the message as a sentence.
func problemText(column, msg string) string {
	if column == "" {
		return sentenceOf(msg)
	}
	return column + ": " + strings.TrimSuffix(msg, ".") + "."
}

// checked reads a checkbox or a hidden true.
func checked(v string) bool { return v == "on" || v == "true" }

// newBatchID is the ID a preview chooses for its batch: the day, for staff
// reading it, and 50 random bits, so that two previews never share one. It
// follows the payout_id rules.
func newBatchID(now time.Time) string {
	return "batch-" + now.UTC().Format("20060102") + "-" + strings.ToLower(rand.Text()[:10])
}

// batchResultView is a batch's result page.
type batchResultView struct {
	Batch payoutkit.PayoutBatch
}

// batchResult shows a stored batch, each accepted payout as it is now.
func (h *Handler) batchResult(w http.ResponseWriter, r *request) {
	id := r.PathValue("batch_id")
	b, err := h.svc.PayoutBatch(r.Context(), r.session.WorkspaceID, id)
	if errors.Is(err, payoutkit.ErrNotFound) || errors.Is(err, payoutkit.ErrInvalidInput) {
		h.renderError(w, r.Request, http.StatusNotFound, "No batch has the ID “"+id+"” in this workspace.")
		return
	}
	if err != nil {
		h.engineError(w, r.Request, err)
		return
	}
	h.renderBatchResult(w, r, b, "")
}

func (h *Handler) renderBatchResult(w http.ResponseWriter, r *request, b payoutkit.PayoutBatch, notice string) {
	h.renderPage(w, r, http.StatusOK, "batchresult", page{
		Title: "Batch " + b.BatchID, Section: "withdrawals", Notice: notice, Data: batchResultView{Batch: b},
	})
}
