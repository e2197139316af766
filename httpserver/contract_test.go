package httpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/httpserver"
)

func payoutBody(id, amount string) map[string]any {
	return map[string]any{
		"payout_id": id, "amount": amount, "asset": "USDT", "network": "TRON",
		"address": tronAddr, "payer_id": "cust-42",
	}
}

func TestOpenAPIDocument(t *testing.T) {
	if _, _, err := loadSpec(); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, httpserver.Options{Sandbox: true})
	r := e.do(http.MethodGet, "/v1/openapi.yaml", "", nil)
	if r.status != 200 || !strings.HasPrefix(string(r.body), "openapi: 3.1") {
		t.Fatalf("GET /v1/openapi.yaml: %d %.80s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/yaml" {
		t.Fatalf("Content-Type %q", ct)
	}
}

// Every operation of the OpenAPI document is a route of the handler (with
// the sandbox on), answering without a key 40100 rather than 40400 or
// 40500. The other way, a route missing from the document fails every
// test that calls it: the harness validates each exchange against it.
func TestOpenAPIOperationsAreRoutes(t *testing.T) {
	doc, _, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, httpserver.Options{Sandbox: true, AuthFailureLimit: -1})
	n := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			n++
			r := e.do(method, path, "", nil)
			want := 40100
			if op.Security != nil && len(*op.Security) == 0 { // no key needed
				want = 0
			}
			if r.status == 404 || r.status == 405 || (want != 0 && r.env.Code != want) {
				t.Errorf("%s %s (%s): %d %s", method, path, op.OperationID, r.status, r.body)
			}
		}
	}
	if n < 13 {
		t.Fatalf("only %d operations in the document", n)
	}
}

// Every row of the contract's error table, over HTTP.
func TestErrorTable40000(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	ws, key := e.workspace()
	e.fund(ws, "100.00")

	with := func(field string, v any) map[string]any {
		b := payoutBody("po-x", "10.00")
		b[field] = v
		return b
	}
	without := func(field string) map[string]any {
		b := payoutBody("po-x", "10.00")
		delete(b, field)
		return b
	}
	cases := []struct {
		name  string
		body  any
		field string // the field the message and errors name, if any
		msg   string
	}{
		{"malformed JSON", `{"payout_id": "po-1",`, "", "not valid JSON"},
		{"empty body", ``, "", "JSON object"},
		{"array body", `[1,2]`, "", "JSON object"},
		{"string body", `"hello"`, "", "JSON object"},
		{"null body", `null`, "", "JSON object"},
		{"number body", `42`, "", "JSON object"},
		{"two objects", `{} {}`, "", "single JSON object"},
		{"trailing garbage", `{"payout_id":"a"}x`, "", ""},
		{"duplicate member", `{"payout_id":"a","payout_id":"b"}`, "", "repeats the member \"payout_id\""},
		{"amount as number", with("amount", 10), "amount", "amount must be a string"},
		{"amount as float", with("amount", 10.5), "amount", "amount must be a string"},
		{"payout_id as number", with("payout_id", 7), "payout_id", "payout_id must be a string"},
		{"payout_id null", with("payout_id", nil), "payout_id", "payout_id must be a string"},
		{"payout_id object", with("payout_id", map[string]any{"a": 1}), "payout_id", "payout_id must be a string"},
		{"payer_id array", with("payer_id", []string{"x"}), "payer_id", "payer_id must be a string"},
		{"address bool", with("address", true), "address", "address must be a string"},
		{"missing payout_id", without("payout_id"), "payout_id", "payout_id is required"},
		{"missing amount", without("amount"), "amount", "amount is required"},
		{"missing asset", without("asset"), "asset", "asset is required"},
		{"missing network", without("network"), "network", "network is required"},
		{"missing address", without("address"), "address", "address is required"},
		{"missing payer_id", without("payer_id"), "payer_id", "payer_id is required"},
		{"empty object", `{}`, "payout_id", "payout_id is required"},
		{"amount zero", with("amount", "0"), "amount", "amount must be greater than 0"},
		{"amount 0.00", with("amount", "0.00"), "amount", "amount must be greater than 0"},
		{"amount negative", with("amount", "-1.00"), "amount", "amount"},
		{"amount third decimal", with("amount", "1.005"), "amount", "amount"},
		{"amount exponent", with("amount", "1e2"), "amount", "amount"},
		{"amount plus sign", with("amount", "+1"), "amount", "amount"},
		{"amount blank", with("amount", " 1.00"), "amount", "amount"},
		{"amount empty", with("amount", ""), "amount", "amount"},
		{"amount too large", with("amount", "1000000000.01"), "amount", "amount"},
		{"unknown asset", with("asset", "DOGGO"), "asset", "asset"},
		{"unknown pair", with("network", "BTC"), "network", "network"},
		{"invalid address", with("address", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u"), "address", "address"},
		{"address with blanks", with("address", " "+tronAddr+" "), "address", "address"},
		{"bad payout_id chars", with("payout_id", "po 1"), "payout_id", "payout_id"},
		{"payout_id too long", with("payout_id", strings.Repeat("a", 129)), "payout_id", "payout_id"},
		{"payer_id control char", with("payer_id", "a\u0001b"), "payer_id", "payer_id"},
		{"asset through Unicode folding", with("asset", "U\u017fdt"), "asset", "asset"},
		{"network through Unicode folding", with("network", "\u212aRON"), "network", "network"},
		{"payer_id bidi override", with("payer_id", "cust-\u202e24"), "payer_id", "invisible or bidirectional"},
		{"payer_id zero-width space", with("payer_id", "cust\u200b-42"), "payer_id", "invisible or bidirectional"},
		{"payer_id byte order mark", with("payer_id", "\ufeffcust-42"), "payer_id", "invisible or bidirectional"},
		{"payer_id lone surrogate", strings.Replace(string(mustJSON(t, payoutBody("po-ls", "1.00"))), `"payer_id":"cust-42"`, `"payer_id":"cust-\ud800"`, 1), "payer_id", "U+FFFD"},
		{"invalid UTF-8", []byte("{\"payout_id\": \"po-\xff\xfe\"}"), "", "UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/v1/payouts", key, c.body).wantCode(t, 40000).wantMessage(t, c.msg)
			if c.field != "" {
				r.wantField(t, c.field)
				r.wantMessage(t, c.field)
			}
		})
	}
	// Nothing moved.
	b, err := e.client(key).Balance(context.Background())
	if err != nil || b.Available != 100_00 || b.InProgress != 0 {
		t.Fatalf("balance %+v, %v", b, err)
	}
	e.audit(ws)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOverdraft(t *testing.T) {
	e := newEnv(t, httpserver.Options{})
	ws, key := e.workspace()
	e.fund(ws, "10.00")
	r := e.do(http.MethodPost, "/v1/payouts", key, payoutBody("po-1", "10.01")).wantCode(t, 40000)
	if r.env.Message != "Insufficient available balance" {
		t.Fatalf("message %q", r.env.Message)
	}
	c := e.client(key)
	_, _, err := c.CreatePayout(context.Background(), payoutkit.CreatePayoutRequest{
		PayoutID: "po-2", Amount: "10.01", Asset: "USDT", Network: "TRON", Address: tronAddr, PayerID: "c",
	})
	if !errors.Is(err, payoutkit.ErrInsufficientBalance) || !errors.Is(err, payoutkit.ErrInvalidInput) {
		t.Fatalf("client error %v does not match ErrInsufficientBalance", err)
	}
	if b, _ := c.Balance(context.Background()); b.Available != 10_00 {
		t.Fatalf("balance changed: %+v", b)
	}
	// The exact balance is accepted.
	e.do(http.MethodPost, "/v1/payouts", key, payoutBody("po-3", "10")).wantCode(t, 0)
	e.audit(ws)
}

func TestErrorTable40100(t *testing.T) {
	// Well over 20 failures from one address: the failure limit is off.
	e := newEnv(t, httpserver.Options{Sandbox: true, AuthFailureLimit: -1})
	ws, key := e.workspace()
	other, err := e.engine.CreateAPIKey(context.Background(), ws, payoutkit.CreateAPIKeyRequest{}, payoutkit.ActorCLI)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.engine.RevokeAPIKey(context.Background(), ws, other.Prefix, payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	unknown := "sk_AAAAAAAA_" + strings.Repeat("b", 32)
	body := payoutBody("po-1", "1.00")
	cases := []struct {
		name    string
		headers []string
	}{
		{"missing", nil},
		{"empty", []string{"Authorization", ""}},
		{"malformed", []string{"Authorization", "Bearer nope"}},
		{"basic scheme", []string{"Authorization", "Basic " + key}},
		{"bearer without key", []string{"Authorization", "Bearer"}},
		{"key plus junk", []string{"Authorization", "Bearer " + key + "x"}},
		{"unknown", []string{"Authorization", "Bearer " + unknown}},
		{"revoked", []string{"Authorization", "Bearer " + other.Key}},
		{"wrong secret", []string{"Authorization", "Bearer " + key[:len(key)-1] + flip(key[len(key)-1])}},
		{"cookie only", []string{"Cookie", "session=abc; payoutkit_session=" + key}},
		{"two headers", []string{"Authorization", "Bearer " + key, "Authorization", "Bearer " + key}},
		{"huge", []string{"Authorization", "Bearer " + strings.Repeat("k", 200<<10)}},
		{"odd bytes", []string{"Authorization", "Bearer sk_\xc3\xa9\xff\xfe" + strings.Repeat("\x80", 40)}},
		{"tab inside", []string{"Authorization", "Bearer\t" + key}},
		{"key then space", []string{"Authorization", "Bearer " + key + " x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, ep := range []struct{ method, path string }{
				{"POST", "/v1/payouts"}, {"POST", "/v1/payouts/info"}, {"GET", "/v1/balance"},
				{"GET", "/v1/coins"}, {"POST", "/v1/orders"}, {"POST", "/v1/orders/info"},
				{"POST", "/v1/sandbox/orders/pay"}, {"POST", "/v1/sandbox/payouts/complete"},
				{"POST", "/v1/sandbox/payouts/fail"},
			} {
				var b any
				if ep.method == "POST" {
					b = body
				}
				e.do(ep.method, ep.path, "", b, c.headers...).wantCode(t, 40100)
			}
		})
	}
	// The accepted forms.
	for _, h := range []string{"Bearer " + key, "bearer " + key, "BEARER " + key, key} {
		e.do(http.MethodGet, "/v1/balance", "", nil, "Authorization", h).wantCode(t, 0)
	}
	// A key with a cookie still works: the cookie is ignored.
	e.do(http.MethodGet, "/v1/balance", key, nil, "Cookie", "session=x").wantCode(t, 0)
	// The key is checked before the body: a bad body with a bad key is 40100.
	e.do(http.MethodPost, "/v1/payouts", "", `not json`).wantCode(t, 40100)
	e.do(http.MethodPost, "/v1/payouts", "", strings.Repeat("x", 70<<10)).wantCode(t, 40100)
	if strings.Contains(e.logs.String(), key[12:]) || strings.Contains(e.logs.String(), other.Key[12:]) {
		t.Fatal("a key reached the logs")
	}
}

func flip(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

func TestRevocationTakesEffectOnNextRequest(t *testing.T) {
	e := newEnv(t, httpserver.Options{})
	ws, key := e.workspace()
	c := e.client(key)
	if _, err := c.Balance(context.Background()); err != nil {
		t.Fatal(err)
	}
	nk, err := e.engine.ResetAPIKeys(context.Background(), ws, payoutkit.ActorCLI)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Balance(context.Background()); !errors.Is(err, payoutkit.ErrUnauthorized) {
		t.Fatalf("old key after reset: %v", err)
	}
	if _, err := e.client(nk.Key).Balance(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.engine.RevokeAPIKey(context.Background(), ws, nk.Prefix, payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client(nk.Key).Balance(context.Background()); payoutkit.CodeOf(err) != payoutkit.CodeUnauthorized {
		t.Fatalf("revoked key: %v", err)
	}
}

func TestErrorTable40400(t *testing.T) {
	e := newEnv(t, httpserver.Options{})
	ws, key := e.workspace()
	ws2, key2 := e.workspace()
	e.fund(ws, "50.00")
	e.fund(ws2, "50.00")
	c, c2 := e.client(key), e.client(key2)
	ctx := context.Background()
	if _, _, err := c.CreatePayout(ctx, payoutkit.CreatePayoutRequest{PayoutID: "po-1", Amount: "1", Asset: "usdt", Network: "tron", Address: tronAddr, PayerID: "p"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.CreateOrder(ctx, payoutkit.CreateOrderRequest{OrderID: "or-1", Amount: "1"}); err != nil {
		t.Fatal(err)
	}
	e.do("POST", "/v1/payouts/info", key, `{"payout_id":"nope"}`).wantCode(t, 40400)
	e.do("POST", "/v1/orders/info", key, `{"order_id":"nope"}`).wantCode(t, 40400)
	// Another workspace's ids are unknown.
	e.do("POST", "/v1/payouts/info", key2, `{"payout_id":"po-1"}`).wantCode(t, 40400)
	e.do("POST", "/v1/orders/info", key2, `{"order_id":"or-1"}`).wantCode(t, 40400)
	if _, err := c2.Payout(ctx, "po-1"); !errors.Is(err, payoutkit.ErrNotFound) {
		t.Fatalf("other workspace's payout: %v", err)
	}
	// Unknown paths, with or without a key; the sandbox is off here.
	for _, p := range []string{"/", "/v1", "/v1/", "/v2/payouts", "/v1/payouts/", "/v1//payouts", "/v1/payouts/info/x",
		"/v1/PAYOUTS", "/v1/payout%73", "/v1/payouts%2Finfo", "/v1/sandbox/orders/pay", "/v1/sandbox/payouts/complete",
		"/v1/sandbox/payouts/fail", "/v1/sk_AAAAAAAA_secret", "/v1/./payouts", "/v1/x/../payouts"} {
		for _, k := range []string{"", key} {
			e.do("POST", p, k, `{}`).wantCode(t, 40400)
			e.do("GET", p, k, nil).wantCode(t, 40400)
		}
	}
	if strings.Contains(e.logs.String(), "sk_AAAAAAAA_secret") {
		t.Fatal("a key-looking path reached the logs unmasked")
	}
}

func TestErrorTable40500(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	_, key := e.workspace()
	cases := []struct{ method, path, allow string }{
		{"GET", "/v1/payouts", "POST"},
		{"PUT", "/v1/payouts", "POST"},
		{"DELETE", "/v1/payouts/info", "POST"},
		{"POST", "/v1/balance", "GET, HEAD"},
		{"PATCH", "/v1/coins", "GET, HEAD"},
		{"GET", "/v1/orders", "POST"},
		{"OPTIONS", "/v1/orders/info", "POST"},
		{"GET", "/v1/sandbox/orders/pay", "POST"},
		{"POST", "/v1/openapi.yaml", "GET, HEAD"},
		{"BREW", "/v1/payouts", "POST"},
	}
	for _, c := range cases {
		for _, k := range []string{"", key} {
			r := e.do(c.method, c.path, k, nil).wantCode(t, 40500)
			if got := r.header.Get("Allow"); got != c.allow {
				t.Fatalf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
			}
		}
	}
	// HEAD of a GET endpoint works.
	if r := e.do("HEAD", "/v1/balance", key, nil); r.status != 200 {
		t.Fatalf("HEAD /v1/balance: %d", r.status)
	}
}

func TestErrorTable40900(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	ws, key := e.workspace()
	e.fund(ws, "100.00")
	e.do("POST", "/v1/payouts", key, payoutBody("po-1", "10.00")).wantCode(t, 0)
	for field, v := range map[string]string{
		"amount": "10.01", "asset": "TRX", "address": "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW", "payer_id": "someone-else",
	} {
		b := payoutBody("po-1", "10.00")
		b[field] = v
		e.do("POST", "/v1/payouts", key, b).wantCode(t, 40900).wantMessage(t, "po-1")
	}
	b := payoutBody("po-1", "10.00")
	b["network"], b["asset"], b["address"] = "ETH", "USDT", "0x52908400098527886E0F7030069857D2E4169EE7"
	e.do("POST", "/v1/payouts", key, b).wantCode(t, 40900)

	// Order of checks: fields before uniqueness, uniqueness before balance.
	e.do("POST", "/v1/payouts", key, payoutBody("po-1", "0")).wantCode(t, 40000).wantField(t, "amount")
	e.do("POST", "/v1/payouts", key, payoutBody("po-1", "5000.00")).wantCode(t, 40900)
	e.do("POST", "/v1/payouts", key, payoutBody("po-drain", "90.00")).wantCode(t, 0)
	r := e.do("POST", "/v1/payouts", key, payoutBody("po-1", "10")).wantCode(t, 0) // a replay needs no balance
	if r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("replay not marked")
	}
	e.do("POST", "/v1/payouts", key, payoutBody("po-new", "0.01")).wantCode(t, 40000).wantMessage(t, "Insufficient available balance")
	e.fund(ws, "100.00")

	e.do("POST", "/v1/orders", key, `{"order_id":"or-1","amount":"5"}`).wantCode(t, 0)
	e.do("POST", "/v1/orders", key, `{"order_id":"or-1","amount":"6"}`).wantCode(t, 40900)
	e.do("POST", "/v1/orders", key, `{"order_id":"or-1","amount":"5","payer_id":"x"}`).wantCode(t, 40900)
	e.do("POST", "/v1/orders", key, `{"order_id":"or-1","amount":"5","description":"x"}`).wantCode(t, 40900)

	// Settling a settled payout.
	e.do("POST", "/v1/sandbox/payouts/complete", key, `{"payout_id":"po-1","txid":"abc"}`).wantCode(t, 0)
	e.do("POST", "/v1/sandbox/payouts/complete", key, `{"payout_id":"po-1","txid":"abc"}`).wantCode(t, 40900)
	e.do("POST", "/v1/sandbox/payouts/fail", key, `{"payout_id":"po-1"}`).wantCode(t, 40900)
	e.do("POST", "/v1/payouts", key, payoutBody("po-2", "5.00")).wantCode(t, 0)
	e.do("POST", "/v1/sandbox/payouts/fail", key, `{"payout_id":"po-2","reason":"no"}`).wantCode(t, 0)
	e.do("POST", "/v1/sandbox/payouts/fail", key, `{"payout_id":"po-2"}`).wantCode(t, 40900)
	e.do("POST", "/v1/sandbox/payouts/complete", key, `{"payout_id":"po-2"}`).wantCode(t, 40900)
	e.do("POST", "/v1/sandbox/payouts/complete", key, `{"payout_id":"po-nope"}`).wantCode(t, 40400)
	e.do("POST", "/v1/sandbox/orders/pay", key, `{"order_id":"or-nope"}`).wantCode(t, 40400)
	c := e.client(key)
	if _, err := c.FailPayout(context.Background(), "po-2", ""); !errors.Is(err, payoutkit.ErrConflict) {
		t.Fatalf("client: %v", err)
	}
	e.audit(ws)
}

func TestErrorTable41300(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	_, key := e.workspace()
	big := `{"payout_id":"po-1","pad":"` + strings.Repeat("x", 70<<10) + `"}`
	for _, p := range []string{"/v1/payouts", "/v1/payouts/info", "/v1/orders", "/v1/orders/info",
		"/v1/sandbox/orders/pay", "/v1/sandbox/payouts/complete", "/v1/sandbox/payouts/fail"} {
		e.do("POST", p, key, big).wantCode(t, 41300)
	}
	// Exactly 64 KiB is accepted (and then judged on its content).
	pad := MaxBodyPad(t, `{"order_id":"or-big","amount":"1","pad":""}`)
	e.do("POST", "/v1/orders", key, pad).wantCode(t, 0)
}

// MaxBodyPad pads the "pad" member of body so that the body is exactly
// httpserver.MaxBodyBytes long.
func MaxBodyPad(t *testing.T, body string) string {
	t.Helper()
	n := httpserver.MaxBodyBytes - len(body)
	out := strings.Replace(body, `"pad":""`, `"pad":"`+strings.Repeat("y", n)+`"`, 1)
	if len(out) != httpserver.MaxBodyBytes {
		t.Fatalf("padded to %d", len(out))
	}
	return out
}

func TestErrorTable42900(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var clock = func() time.Time { return now }
	e := newEnv(t, httpserver.Options{RateLimit: 0.5, RateBurst: 2, Now: clock})
	_, key := e.workspace()
	_, key2 := e.workspace()
	e.do("GET", "/v1/balance", key, nil).wantCode(t, 0)
	e.do("GET", "/v1/coins", key, nil).wantCode(t, 0)
	r := e.do("GET", "/v1/balance", key, nil).wantCode(t, 42900)
	if got := r.header.Get("Retry-After"); got != "2" {
		t.Fatalf("Retry-After %q, want 2", got)
	}
	// Another workspace has its own bucket.
	e.do("GET", "/v1/balance", key2, nil).wantCode(t, 0)
	// Unauthenticated requests are refused for the key, not counted.
	e.do("GET", "/v1/balance", "", nil).wantCode(t, 40100)
	now = now.Add(2 * time.Second)
	e.do("GET", "/v1/balance", key, nil).wantCode(t, 0)
	e.do("POST", "/v1/payouts", key, `{}`).wantCode(t, 42900)
	if _, err := e.client(key).Balance(context.Background()); payoutkit.CodeOf(err) != payoutkit.CodeRateLimited {
		t.Fatalf("client: %v", err)
	}
}

// panicky is the one Service stub: it authenticates everyone and panics or
// fails with a non-contract error on every call.
type panicky struct {
	payoutkit.Service
	secret string
}

func (panicky) Authenticate(context.Context, string, netip.Addr) (payoutkit.Principal, error) {
	return payoutkit.Principal{WorkspaceID: "ws_x", KeyPrefix: "AAAAAAAA", Scopes: payoutkit.AllScopes()}, nil
}

func (p panicky) Balance(context.Context, string) (payoutkit.Balance, error) {
	panic("boom " + p.secret)
}

func (p panicky) AuthenticateBalance(context.Context, string, netip.Addr) (payoutkit.Principal, payoutkit.Balance, error) {
	panic("boom " + p.secret)
}

func (p panicky) Coins(context.Context, string) ([]payoutkit.Coin, error) {
	return nil, errors.New("pq: relation \"coins\" does not exist at /srv/db.go:12 " + p.secret)
}

func TestErrorTable50000(t *testing.T) {
	secret := "whsec_do_not_show"
	e := newEnvWith(t, nil, nil, panicky{secret: secret}, httpserver.Options{})
	for _, path := range []string{"/v1/balance", "/v1/coins"} {
		r := e.do("GET", path, "anything", nil, "X-Request-Id", "trace-123").wantCode(t, 50000)
		if r.env.Message != "internal error" || strings.Contains(string(r.body), secret) ||
			strings.Contains(string(r.body), "pq:") || strings.Contains(string(r.body), "boom") {
			t.Fatalf("internal error leaked: %s", r.body)
		}
		if r.header.Get("X-Request-Id") != "trace-123" {
			t.Fatalf("request id %q", r.header.Get("X-Request-Id"))
		}
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "trace-123") || !strings.Contains(logs, "boom") || !strings.Contains(logs, "pq:") {
		t.Fatalf("internal errors not logged with the request id: %s", logs)
	}
}

func TestRequestID(t *testing.T) {
	e := newEnv(t, httpserver.Options{})
	_, key := e.workspace()
	ok := "abc-123_X.y"
	if got := e.do("GET", "/v1/balance", key, nil, "X-Request-Id", ok).header.Get("X-Request-Id"); got != ok {
		t.Fatalf("valid id not echoed: %q", got)
	}
	long := strings.Repeat("a", 128)
	if got := e.do("GET", "/v1/balance", key, nil, "X-Request-Id", long).header.Get("X-Request-Id"); got != long {
		t.Fatalf("128-char id not echoed")
	}
	if got := e.do("GET", "/v1/balance", key, nil, "X-Request-Id", "task_42").header.Get("X-Request-Id"); got != "task_42" {
		t.Fatalf("an id with sk_ inside a word not echoed: %q", got)
	}
	// Key-shaped ids are neither echoed nor logged.
	for _, bad := range []string{strings.Repeat("a", 129), "a b", "a/b", "<script>", "é", "a\tb", "", key, strings.ToUpper(key),
		"trace-" + key, "whsec_0123456789abcdef"} {
		r := e.do("GET", "/v1/nope", key, nil, "X-Request-Id", bad).wantCode(t, 40400)
		got := r.header.Get("X-Request-Id")
		if got == bad || got == "" || len(got) > 128 {
			t.Fatalf("bad id %q answered with %q", bad, got)
		}
	}
	if logs := e.logs.String(); strings.Contains(strings.ToLower(logs), strings.ToLower(key[3:])) || strings.Contains(logs, "whsec_0123") {
		t.Fatalf("a key-shaped request id reached the logs:\n%s", logs)
	}
	// Key-shaped paths are masked in any case.
	upper := "/v1/SK_" + strings.ToUpper(key[3:])
	e.do("GET", upper, "", nil).wantCode(t, 40400)
	if logs := e.logs.String(); strings.Contains(strings.ToLower(logs), strings.ToLower(key[3:])) {
		t.Fatalf("an upper-case key in a path reached the logs:\n%s", logs)
	}
	r := e.do("GET", "/v1/balance", key, nil, "X-Request-Id", "one", "X-Request-Id", "two")
	if got := r.header.Get("X-Request-Id"); got == "one" || got == "two" {
		t.Fatalf("two ids: answered %q", got)
	}
	if a, b := e.do("GET", "/v1/balance", key, nil).header.Get("X-Request-Id"), e.do("GET", "/v1/balance", key, nil).header.Get("X-Request-Id"); a == b {
		t.Fatal("generated ids repeat")
	}
}

func TestRequestLog(t *testing.T) {
	e := newEnv(t, httpserver.Options{})
	ws, key := e.workspace()
	e.fund(ws, "5.00")
	e.do("POST", "/v1/payouts", key, payoutBody("po-log", "1.00"), "X-Request-Id", "log-1").wantCode(t, 0)
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		if strings.Contains(l, "log-1") {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	if line == nil {
		t.Fatalf("no log line: %s", e.logs.String())
	}
	for k, want := range map[string]any{
		"method": "POST", "path": "/v1/payouts", "status": float64(200), "request_id": "log-1",
		"workspace_id": ws, "key_prefix": key[3:11],
	} {
		if line[k] != want {
			t.Fatalf("log %s = %v, want %v (%v)", k, line[k], want, line)
		}
	}
	if _, ok := line["duration"]; !ok {
		t.Fatal("no duration")
	}
	logs := e.logs.String()
	for _, secret := range []string{key, key[12:], tronAddr, "cust-42"} {
		if strings.Contains(logs, secret) {
			t.Fatalf("log holds %q: %s", secret, logs)
		}
	}
}
