package httpserver

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"github.com/payoutkit/payoutkit"
)

// envelope is every response body but the OpenAPI document.
type envelope struct {
	Code    payoutkit.Code         `json:"code"`
	Message string                 `json:"message"`
	Data    any                    `json:"data"`
	Errors  []payoutkit.FieldError `json:"errors,omitempty"`
}

// errWritten tells writeError that the response is already (partly) written.
var errWritten = errors.New("response already written")

// errorf is a transport error with a contract code.
func errorf(code payoutkit.Code, message string) *payoutkit.Error {
	return payoutkit.NewError(code, message, nil)
}

// rateLimited is a 42900 that knows its Retry-After.
type rateLimited struct {
	retryAfter time.Duration
	message    string // defaults to "rate limit exceeded; retry later"
}

func (e *rateLimited) Error() string { return "rate limit exceeded" }

// writeError is the one place where an error becomes a response: a
// *payoutkit.Error shows its code, message and fields; anything else is a
// 50000 "internal error", logged here with the request id and never detailed
// to the caller.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errWritten) {
		return
	}
	env := envelope{Code: payoutkit.CodeInternal, Message: "internal error"}
	var (
		perr *payoutkit.Error
		rl   *rateLimited
		mbe  *http.MaxBytesError
	)
	switch {
	case errors.As(err, &rl):
		secs := int64((rl.retryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
		env.Code, env.Message = payoutkit.CodeRateLimited, cmp.Or(rl.message, "rate limit exceeded; retry later")
	case errors.As(err, &mbe):
		env.Code, env.Message = payoutkit.CodeTooLarge, "request body is larger than "+sizeText(mbe.Limit)
	case errors.As(err, &perr) && validCode(perr.Code):
		env.Code, env.Message, env.Errors = perr.Code, perr.Message, perr.Fields
		if perr.Code == payoutkit.CodeUnavailable {
			ri := info(r)
			ri.log.WarnContext(r.Context(), "database unavailable", "request_id", ri.id, "err", err)
			w.Header().Set("Retry-After", "1")
		}
	case r.Context().Err() != nil && errors.Is(err, r.Context().Err()):
		// The client went away (or the server is shutting down) before the
		// answer: nobody reads it, and nothing is wrong with the server. A
		// payout's outcome is then unknown to the client, which asks again
		// with the same payout_id.
		ri := info(r)
		ri.log.InfoContext(r.Context(), "request cancelled before its answer", "request_id", ri.id, "err", err)
	default:
		ri := info(r)
		ri.log.ErrorContext(r.Context(), "internal error", "request_id", ri.id, "err", err)
	}
	writeJSON(w, int(env.Code)/100, env)
}

// sizeText renders a body limit as the contract states it ("64 KiB",
// "1 MiB").
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// validCode reports whether c is one of the contract's error codes.
func validCode(c payoutkit.Code) bool {
	switch c {
	case payoutkit.CodeInvalidInput, payoutkit.CodeUnauthorized, payoutkit.CodeForbidden, payoutkit.CodeNotFound,
		payoutkit.CodeMethodNotAllowed, payoutkit.CodeConflict, payoutkit.CodeTooLarge,
		payoutkit.CodeRateLimited, payoutkit.CodeInternal, payoutkit.CodeUnavailable:
		return true
	}
	return false
}

// writeOK writes the success envelope around data. When data cannot be
// encoded nothing is written and the error is returned (a 50000).
func writeOK(w http.ResponseWriter, data any) error {
	return writeJSON(w, http.StatusOK, envelope{Code: 0, Message: "OK", Data: data})
}

// marshalEnvelope renders env. The data of a success envelope that renders
// itself (every payoutkit type does) is joined as it renders: the encoder
// would re-scan all of it, the largest part of a list's answer.
func marshalEnvelope(env envelope) ([]byte, error) {
	m, ok := env.Data.(json.Marshaler)
	if !ok || env.Errors != nil {
		return json.Marshal(env)
	}
	if v := reflect.ValueOf(m); v.Kind() == reflect.Pointer && v.IsNil() {
		return json.Marshal(env)
	}
	data, err := m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	head := []byte(`{"code":0,"message":"OK"}`) // writeOK's, the most common
	if env.Code != 0 || env.Message != "OK" {
		var err error
		head, err = json.Marshal(struct {
			Code    payoutkit.Code `json:"code"`
			Message string         `json:"message"`
		}{env.Code, env.Message})
		if err != nil {
			return nil, err
		}
	}
	body := append(make([]byte, 0, len(head)+len(data)+10), head[:len(head)-1]...)
	body = append(append(append(body, `,"data":`...), data...), '}')
	return body, nil
}

func writeJSON(w http.ResponseWriter, status int, env envelope) error {
	body, err := marshalEnvelope(env)
	if err != nil {
		if env.Code == 0 {
			return err
		}
		// An error envelope holds only strings: this cannot happen.
		status, env.Code = http.StatusInternalServerError, payoutkit.CodeInternal
		body = []byte(`{"code":50000,"message":"internal error","data":null}`)
	}
	if rec, ok := w.(*recorder); ok {
		rec.code = env.Code
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body) // a failed write means the client went away
	return nil
}
