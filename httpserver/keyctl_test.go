package httpserver_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/httpserver"
)

// key makes an API key of the workspace with the given controls.
func (e *env) key(wsID string, req payoutkit.CreateAPIKeyRequest) string {
	e.t.Helper()
	k, err := e.engine.CreateAPIKey(context.Background(), wsID, req, payoutkit.ActorCLI)
	if err != nil {
		e.t.Fatal(err)
	}
	return k.Key
}

// snapshot is what a refused request must leave as it was: the balance,
// the payouts and the orders of the workspace.
func (e *env) snapshot(wsID string) string {
	e.t.Helper()
	ctx := context.Background()
	b, err := e.engine.Balance(ctx, wsID)
	if err != nil {
		e.t.Fatal(err)
	}
	ps, err := e.engine.ListPayouts(ctx, wsID, payoutkit.ListPayoutsRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	os, err := e.engine.ListOrders(ctx, wsID, payoutkit.ListOrdersRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	s := b.Available.String() + "/" + b.InProgress.String()
	for _, p := range ps.Items {
		s += " " + p.PayoutID + ":" + string(p.Status)
	}
	for _, o := range os.Items {
		s += " " + o.OrderID + ":" + string(o.Status)
	}
	return s
}

const scopePayoutBody = `{"payout_id":"po-scope","amount":"5.00","asset":"USDT","network":"TRON","address":"` + tronAddr + `","payer_id":"c1"}`

// Each write outside the key's scopes is 40300 naming the scope, before its
// body is read, and changes nothing; reads need no scope.
func TestKeyScopes(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	ws, full := e.workspace()
	e.fund(ws, "100.00")
	e.do("POST", "/v1/payouts", full, `{"payout_id":"po-1","amount":"10.00","asset":"USDT","network":"TRON","address":"`+tronAddr+`","payer_id":"c1"}`).wantCode(t, 0)
	e.do("POST", "/v1/orders", full, `{"order_id":"ord-1","amount":"3.00"}`).wantCode(t, 0)

	readOnly := e.key(ws, payoutkit.CreateAPIKeyRequest{Scopes: []payoutkit.Scope{}})
	ordersOnly := e.key(ws, payoutkit.CreateAPIKeyRequest{Scopes: []payoutkit.Scope{payoutkit.ScopeOrdersWrite}})
	payoutsOnly := e.key(ws, payoutkit.CreateAPIKeyRequest{Scopes: []payoutkit.Scope{payoutkit.ScopePayoutsWrite}})

	writes := []struct {
		path, body string
		scope      payoutkit.Scope
	}{
		{"/v1/orders", `{"order_id":"ord-scope","amount":"1.00"}`, payoutkit.ScopeOrdersWrite},
		{"/v1/sandbox/orders/pay", `{"order_id":"ord-1"}`, payoutkit.ScopeOrdersWrite},
		{"/v1/payouts", scopePayoutBody, payoutkit.ScopePayoutsWrite},
		{"/v1/sandbox/payouts/complete", `{"payout_id":"po-1","txid":"0xabc"}`, payoutkit.ScopePayoutsWrite},
		{"/v1/sandbox/payouts/fail", `{"payout_id":"po-1"}`, payoutkit.ScopePayoutsWrite},
	}
	before := e.snapshot(ws)
	for _, w := range writes {
		for _, c := range []struct {
			name, key string
			has       bool
		}{{"read-only", readOnly, false}, {"orders-only", ordersOnly, w.scope == payoutkit.ScopeOrdersWrite}, {"payouts-only", payoutsOnly, w.scope == payoutkit.ScopePayoutsWrite}} {
			if c.has {
				continue
			}
			e.do("POST", w.path, c.key, w.body).wantCode(t, 40300).wantMessage(t, "this API key lacks the "+string(w.scope)+" scope")
			// The scope is judged before the body: a malformed one is 40300 too.
			e.do("POST", w.path, c.key, `{"amount":`).wantCode(t, 40300)
			e.do("POST", w.path, c.key, nil).wantCode(t, 40300)
		}
	}
	if after := e.snapshot(ws); after != before {
		t.Fatalf("refused writes changed the workspace: %s, then %s", before, after)
	}
	e.audit(ws)

	// Reading needs no scope.
	for _, k := range []string{readOnly, ordersOnly, payoutsOnly} {
		e.do("GET", "/v1/balance", k, nil).wantCode(t, 0)
		e.do("GET", "/v1/coins", k, nil).wantCode(t, 0)
		e.do("POST", "/v1/payouts/info", k, `{"payout_id":"po-1"}`).wantCode(t, 0)
		e.do("POST", "/v1/payouts/list", k, `{}`).wantCode(t, 0)
		e.do("POST", "/v1/orders/info", k, `{"order_id":"ord-1"}`).wantCode(t, 0)
		e.do("POST", "/v1/orders/list", k, `{}`).wantCode(t, 0)
	}
	if b, err := e.client(readOnly).Balance(context.Background()); err != nil || b.Available.String() != "90.00" {
		t.Fatalf("read-only client: balance %+v, %v", b, err)
	}

	// Within its scope each key writes.
	e.do("POST", "/v1/orders", ordersOnly, `{"order_id":"ord-2","amount":"1.00"}`).wantCode(t, 0)
	e.do("POST", "/v1/sandbox/orders/pay", ordersOnly, `{"order_id":"ord-2"}`).wantCode(t, 0)
	e.do("POST", "/v1/payouts", payoutsOnly, scopePayoutBody).wantCode(t, 0)
	e.do("POST", "/v1/sandbox/payouts/complete", payoutsOnly, `{"payout_id":"po-scope","txid":"0xabc"}`).wantCode(t, 0)
	e.do("POST", "/v1/sandbox/payouts/fail", payoutsOnly, `{"payout_id":"po-1"}`).wantCode(t, 0)
	e.audit(ws)

	// The typed client sees the refusal as ErrForbidden.
	_, _, err := e.client(readOnly).CreatePayout(context.Background(), payoutkit.CreatePayoutRequest{
		PayoutID: "po-client", Amount: "1.00", Asset: "USDT", Network: "TRON", Address: tronAddr, PayerID: "c1",
	})
	if payoutkit.CodeOf(err) != payoutkit.CodeForbidden || !errors.Is(err, payoutkit.ErrForbidden) {
		t.Fatalf("client CreatePayout with a read-only key: %v", err)
	}
}

// A bad key is 40100 whatever its scopes or allowlist would have been: the
// key is checked first.
func TestKeyControlsBadKeyIs401(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	ws, _ := e.workspace()
	narrow := e.key(ws, payoutkit.CreateAPIKeyRequest{Scopes: []payoutkit.Scope{}, AllowIPs: []string{"10.0.0.0/8"}})
	bad := narrow[:len(narrow)-1] + flipChar(narrow[len(narrow)-1])
	for _, path := range []string{"/v1/payouts", "/v1/orders", "/v1/sandbox/payouts/fail"} {
		e.do("POST", path, bad, `{"amount":`).wantCode(t, 40100)
	}
	e.do("GET", "/v1/balance", bad, nil).wantCode(t, 40100)
	if _, err := e.engine.RevokeAPIKey(context.Background(), ws, narrow[3:11], payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	e.do("POST", "/v1/payouts", narrow, scopePayoutBody).wantCode(t, 40100)
}

func flipChar(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

// A key allowed only from 10.0.0.0/8 is refused from the loopback address
// the test connects from, on every endpoint, whatever X-Forwarded-For an
// untrusted peer sends; behind a trusted proxy the right-most entry that is
// not a trusted proxy is the client.
func TestKeyAllowIPs(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	ws, full := e.workspace()
	e.fund(ws, "50.00")
	key := e.key(ws, payoutkit.CreateAPIKeyRequest{AllowIPs: []string{"10.0.0.0/8"}})
	before := e.snapshot(ws)
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/balance", ""}, {"GET", "/v1/coins", ""},
		{"POST", "/v1/payouts", scopePayoutBody}, {"POST", "/v1/payouts/list", `{}`},
		{"POST", "/v1/orders", `{"order_id":"ord-ip","amount":"1.00"}`},
	} {
		var body any
		if r.body != "" {
			body = r.body
		}
		e.do(r.method, r.path, key, body).wantCode(t, 40300).wantMessage(t, "not allowed from the address 127.0.0.1")
		e.do(r.method, r.path, key, body, "X-Forwarded-For", "10.1.2.3").wantCode(t, 40300).wantMessage(t, "127.0.0.1")
	}
	if after := e.snapshot(ws); after != before {
		t.Fatalf("refused requests changed the workspace: %s, then %s", before, after)
	}
	e.do("GET", "/v1/balance", full, nil, "X-Forwarded-For", "10.1.2.3").wantCode(t, 0)

	// Behind a proxy on loopback.
	p := newEnvWith(t, e.store, e.engine, e.engine, httpserver.Options{
		Sandbox: true, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	})
	p.do("GET", "/v1/balance", key, nil).wantCode(t, 40300)
	p.do("GET", "/v1/balance", key, nil, "X-Forwarded-For", "10.1.2.3").wantCode(t, 0)
	p.do("GET", "/v1/balance", key, nil, "X-Forwarded-For", "10.1.2.3, 127.0.0.2").wantCode(t, 0)
	p.do("GET", "/v1/balance", key, nil, "X-Forwarded-For", "203.0.113.9, 10.1.2.3").wantCode(t, 0)
	p.do("GET", "/v1/balance", key, nil, "X-Forwarded-For", "10.1.2.3, 203.0.113.9").wantCode(t, 40300).wantMessage(t, "203.0.113.9")
	p.do("GET", "/v1/balance", key, nil, "X-Forwarded-For", "10.1.2.3", "X-Forwarded-For", "203.0.113.9").wantCode(t, 40300)
	p.do("GET", "/v1/balance", key, nil, "X-Forwarded-For", "10.1.2.3, garbage").wantCode(t, 40300).wantMessage(t, "unknown address")
	p.do("POST", "/v1/payouts", key, scopePayoutBody, "X-Forwarded-For", "[::ffff:10.1.2.3]:5000").wantCode(t, 0)
	// A bad key from an allowed or refused address is still 40100.
	bad := key[:len(key)-1] + flipChar(key[len(key)-1])
	p.do("GET", "/v1/balance", bad, nil, "X-Forwarded-For", "10.1.2.3").wantCode(t, 40100)
	p.do("GET", "/v1/balance", bad, nil).wantCode(t, 40100)
	e.audit(ws)
}
