package httpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/client"
	"github.com/payoutkit/payoutkit/httpserver"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// tronAddr is a valid TRON address.
const tronAddr = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"

// env is one server over a real engine on memstore, behind a real listener.
type env struct {
	t      *testing.T
	store  *memstore.Store
	engine *payoutkit.Engine
	srv    *httptest.Server
	http   *http.Client // validates every exchange against the OpenAPI document
	logs   *syncBuffer
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newEnv(t *testing.T, opts httpserver.Options) *env {
	t.Helper()
	store := memstore.New()
	engine, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, store, engine, engine, opts)
}

func newEnvWith(t *testing.T, store *memstore.Store, engine *payoutkit.Engine, svc payoutkit.Service, opts httpserver.Options) *env {
	t.Helper()
	logs := &syncBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	}
	srv := httptest.NewServer(httpserver.New(svc, opts))
	t.Cleanup(srv.Close)
	e := &env{t: t, store: store, engine: engine, srv: srv, logs: logs}
	e.http = &http.Client{Transport: &validatingTransport{t: t, next: srv.Client().Transport}}
	return e
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// workspace creates a workspace and returns its id and API key.
func (e *env) workspace() (string, string) {
	e.t.Helper()
	nw, err := e.engine.CreateWorkspace(context.Background(), payoutkit.CreateWorkspaceRequest{Name: "test"})
	if err != nil {
		e.t.Fatal(err)
	}
	return nw.Workspace.ID, nw.APIKey.Key
}

// client returns a typed client for key over the validating transport.
func (e *env) client(key string) *client.Client {
	return client.New(e.srv.URL, key, client.WithHTTPClient(e.http))
}

// fund credits amount to the workspace of key through an order paid by the engine.
func (e *env) fund(wsID, amount string) {
	e.t.Helper()
	ctx := context.Background()
	id := "fund-" + randomSuffix()
	if _, _, err := e.engine.CreateOrder(ctx, wsID, payoutkit.CreateOrderRequest{OrderID: id, Amount: amount}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.engine.MarkOrderPaid(ctx, wsID, id); err != nil {
		e.t.Fatal(err)
	}
}

var suffixMu sync.Mutex
var suffixN int

func randomSuffix() string {
	suffixMu.Lock()
	defer suffixMu.Unlock()
	suffixN++
	return fmt.Sprint(suffixN)
}

func (e *env) audit(wsID string) {
	e.t.Helper()
	a, err := e.store.Audit(context.Background(), wsID)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := a.Check(); err != nil {
		e.t.Fatal(err)
	}
}

// response is a raw exchange's outcome.
type response struct {
	status int
	header http.Header
	body   []byte
	env    struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
		Errors  []struct {
			Field   string `json:"field"`
			Message string `json:"message"`
		} `json:"errors"`
	}
}

// do sends a raw request. body may be a string, []byte or nil; headers are
// name, value pairs (a name may repeat).
func (e *env) do(method, path, key string, body any, headers ...string) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case nil:
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := e.http.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	r := response{status: resp.StatusCode, header: resp.Header}
	r.body, err = io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if method != http.MethodHead && resp.Header.Get("Content-Type") == "application/json" {
		if err := json.Unmarshal(r.body, &r.env); err != nil {
			e.t.Fatalf("%s %s: body is not an envelope: %v: %q", method, path, err, r.body)
		}
	}
	return r
}

// wantCode checks a response's code, HTTP status and envelope.
func (r response) wantCode(t *testing.T, code int) response {
	t.Helper()
	wantStatus := code / 100
	if code == 0 {
		wantStatus = 200
	}
	if r.status != wantStatus || r.env.Code != code {
		t.Fatalf("got HTTP %d code %d, want HTTP %d code %d; body %s", r.status, r.env.Code, wantStatus, code, r.body)
	}
	if code != 0 && string(r.env.Data) != "null" {
		t.Fatalf("error data = %s, want null", r.env.Data)
	}
	if r.header.Get("X-Request-Id") == "" {
		t.Fatalf("no X-Request-Id")
	}
	return r
}

// wantMessage checks that the message contains each part.
func (r response) wantMessage(t *testing.T, parts ...string) response {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(r.env.Message, p) {
			t.Fatalf("message %q does not contain %q", r.env.Message, p)
		}
	}
	return r
}

// wantField checks that the errors list names field.
func (r response) wantField(t *testing.T, field string) response {
	t.Helper()
	for _, f := range r.env.Errors {
		if f.Field == field {
			return r
		}
	}
	t.Fatalf("errors %+v do not name %q (message %q)", r.env.Errors, field, r.env.Message)
	return r
}

// --- OpenAPI validation of every exchange ---

var (
	specOnce   sync.Once
	specDoc    *openapi3.T
	specRouter routers.Router
	specErr    error
)

func loadSpec() (*openapi3.T, routers.Router, error) {
	specOnce.Do(func() {
		loader := openapi3.NewLoader()
		specDoc, specErr = loader.LoadFromData(httpserver.OpenAPI)
		if specErr != nil {
			return
		}
		if specErr = specDoc.Validate(loader.Context); specErr != nil {
			return
		}
		specDoc.Servers = nil // match any host
		specRouter, specErr = legacy.NewRouter(specDoc)
	})
	return specDoc, specRouter, specErr
}

// validatingTransport checks every response against the OpenAPI document:
// the operation's declared statuses, headers and bodies; an exchange with no
// operation (unknown path, wrong method) against the Error schema.
type validatingTransport struct {
	t    *testing.T
	next http.RoundTripper
}

func (vt *validatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body.Close()
		reqBody = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := vt.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err := validateExchange(req, reqBody, resp, body); err != nil {
		vt.t.Errorf("OpenAPI: %s %s → %d: %v\nbody: %.500s", req.Method, req.URL.Path, resp.StatusCode, err, body)
	}
	return resp, nil
}

func validateExchange(req *http.Request, reqBody []byte, resp *http.Response, body []byte) error {
	doc, router, err := loadSpec()
	if err != nil {
		return err
	}
	if resp.Header.Get("X-Request-Id") == "" {
		return errors.New("no X-Request-Id header")
	}
	if req.Method == http.MethodHead {
		return nil
	}
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := router.FindRoute(vreq)
	if err == nil && route.Path != req.URL.EscapedPath() {
		err = errors.New("the router matched loosely") // the API's paths are exact
	}
	if err != nil {
		// No operation: the body must be an Error envelope with a matching code.
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return fmt.Errorf("body is not JSON: %w", err)
		}
		if err := doc.Components.Schemas["Error"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			return err
		}
		code := int(v.(map[string]any)["code"].(float64))
		if code/100 != resp.StatusCode {
			return fmt.Errorf("code %d with HTTP %d", code, resp.StatusCode)
		}
		if resp.StatusCode == http.StatusMethodNotAllowed && resp.Header.Get("Allow") == "" {
			return errors.New("405 without Allow")
		}
		return nil
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: vreq, PathParams: params, Route: route,
		},
		Status: resp.StatusCode,
		Header: resp.Header,
		Body:   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
		},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		return err
	}
	if ct := resp.Header.Get("Content-Type"); ct == "application/json" {
		var v struct {
			Code int `json:"code"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return err
		}
		if v.Code != 0 && v.Code/100 != resp.StatusCode {
			return fmt.Errorf("code %d with HTTP %d", v.Code, resp.StatusCode)
		}
	}
	return nil
}
