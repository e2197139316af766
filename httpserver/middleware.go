package httpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"time"

	"github.com/payoutkit/payoutkit"
)

// requestInfo is what the request log line needs; handlers fill in the
// principal once the key is known.
type requestInfo struct {
	id        string
	start     time.Time
	log       *slog.Logger
	principal payoutkit.Principal
	route     string // the matched path, or "" for an unknown one
	// pattern is the route that serves the request, "METHOD /path", or ""
	// when none does.
	pattern string
}

type ctxKey struct{}

func info(r *http.Request) *requestInfo {
	if ri, ok := r.Context().Value(ctxKey{}).(*requestInfo); ok {
		return ri
	}
	return &requestInfo{log: slog.Default()}
}

// RequestID returns the request id of a request served by the handler, as
// sent in its X-Request-Id response header ("" outside the handler). A
// wrapped Service can log it.
func RequestID(ctx context.Context) string {
	if ri, ok := ctx.Value(ctxKey{}).(*requestInfo); ok {
		return ri.id
	}
	return ""
}

// recorder remembers the status and the envelope code written.
type recorder struct {
	http.ResponseWriter
	status int
	code   payoutkit.Code
	bytes  int64
}

func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
	rec.ResponseWriter.WriteHeader(status)
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	n, err := rec.ResponseWriter.Write(b)
	rec.bytes += int64(n)
	return n, err
}

func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// begin assigns the request id, sets the headers every response carries and
// attaches the request info to the context.
func (h *Handler) begin(w http.ResponseWriter, r *http.Request) (*recorder, *http.Request) {
	ri := &requestInfo{id: requestID(r.Header.Values("X-Request-Id")), start: time.Now(), log: h.log}
	if _, known := h.allow[r.URL.Path]; known {
		ri.route = r.URL.Path
	}
	hdr := w.Header()
	hdr.Set("X-Request-Id", ri.id)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Cache-Control", "no-store")
	return &recorder{ResponseWriter: w}, r.WithContext(context.WithValue(r.Context(), ctxKey{}, ri))
}

// finish writes the request's log line. It never logs a header, a key or a
// body: the path of an unknown route is logged with anything that looks like
// a key or a secret masked.
func (h *Handler) finish(rec *recorder, r *http.Request) {
	ri := info(r)
	path := ri.route
	if path == "" {
		path = maskPath(r.URL.Path)
	}
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	end := time.Now()
	d := end.Sub(ri.start)
	if h.observe != nil {
		h.observe(ri.pattern, rec.code, d)
	}
	ctx := r.Context()
	level := slog.LevelInfo
	if status >= 500 && ctx.Err() == nil { // not a client that went away
		level = slog.LevelError
	}
	handler := ri.log.Handler()
	if !handler.Enabled(ctx, level) {
		return
	}
	// The record is made here rather than by Logger.LogAttrs, which would
	// also look up its caller's program counter: for a line that always
	// comes from here, a cost per request that tells nothing.
	line := slog.NewRecord(end, level, "request", 0)
	line.AddAttrs(
		slog.String("request_id", ri.id),
		slog.String("method", safeMethod(r.Method)),
		slog.String("path", path),
		slog.Int("status", status),
		slog.Int("code", int(rec.code)),
		slog.Duration("duration", d),
		slog.Int64("bytes", rec.bytes),
	)
	if ri.principal.WorkspaceID != "" {
		line.AddAttrs(slog.String("workspace_id", ri.principal.WorkspaceID), slog.String("key_prefix", ri.principal.KeyPrefix))
	}
	handler.Handle(ctx, line) // a failed write of a log line has nowhere to be reported
}

// recoverPanic turns a panic in an endpoint into a 50000.
func recoverPanic(rec *recorder, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler { //nolint:errorlint // the sentinel is compared by identity
		panic(v)
	}
	ri := info(r)
	ri.log.ErrorContext(r.Context(), "panic serving request", "request_id", ri.id, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	if rec.status == 0 {
		writeError(rec, r, errors.New("panic")) // an internal error: 50000, no details
	}
}

// requestID returns a valid incoming X-Request-Id (exactly one header of 1
// to 128 characters of [A-Za-z0-9._-], not shaped like a key or a secret,
// since it is logged and echoed) or a new random one.
func requestID(values []string) string {
	if len(values) == 1 && validRequestID(values[0]) {
		return values[0]
	}
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func validRequestID(s string) bool {
	if len(s) == 0 || len(s) > 128 || secretLike.MatchString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// secretLike matches what looks like an API key or a webhook secret, in any
// case, at the start of a word ("task_1" is not one): such a string is
// never logged.
var secretLike = regexp.MustCompile(`(?i)(^|[^a-z0-9])(sk|whsec)_[a-z0-9_]*`)

// maskPath makes an unknown path safe to log: secrets masked, length bounded.
func maskPath(p string) string {
	if len(p) > 256 {
		p = p[:256] + "…"
	}
	return secretLike.ReplaceAllString(p, "${1}${2}_***")
}
