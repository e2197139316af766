package httpserver_test

import (
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/httpserver"
)

// observation is one call of Options.ObserveRequest.
type observation struct {
	route string
	code  payoutkit.Code
	d     time.Duration
}

// TestObserveRequest checks that every request is observed once, under its
// route pattern (never a raw path), with its envelope code.
func TestObserveRequest(t *testing.T) {
	seen := make(chan observation, 16)
	e := newEnv(t, httpserver.Options{
		Sandbox: true, AuthFailureLimit: -1,
		ObserveRequest: func(route string, code payoutkit.Code, d time.Duration) {
			seen <- observation{route, code, d}
		},
	})
	ws, key := e.workspace()
	e.fund(ws, "100.00")
	// The hook runs after the answer is written, so the client may see the
	// answer first: wait for each observation before the next request.
	next := func() observation {
		t.Helper()
		select {
		case o := <-seen:
			return o
		case <-time.After(30 * time.Second):
			t.Fatal("no observation")
			return observation{}
		}
	}
	payout := map[string]any{"payout_id": "po-obs", "amount": "10.00", "asset": "USDT", "network": "TRON", "address": tronAddr, "payer_id": "cust-1"}
	for _, c := range []struct {
		method, path, key string
		body              any
		route             string
		code              payoutkit.Code
	}{
		{"POST", "/v1/payouts", key, payout, "POST /v1/payouts", 0},
		{"POST", "/v1/payouts", key, payout, "POST /v1/payouts", 0}, // a replay
		{"POST", "/v1/payouts/info", key, map[string]any{"payout_id": "po-none"}, "POST /v1/payouts/info", payoutkit.CodeNotFound},
		{"POST", "/v1/payouts/batch", key, map[string]any{"batch_id": "b-obs", "payouts": []any{payout}}, "POST /v1/payouts/batch", 0},
		{"POST", "/v1/payouts/batch/info", key, map[string]any{"batch_id": "b-none"}, "POST /v1/payouts/batch/info", payoutkit.CodeNotFound},
		{"GET", "/v1/balance", "sk_wrong", nil, "GET /v1/balance", payoutkit.CodeUnauthorized},
		{"HEAD", "/v1/balance", key, nil, "GET /v1/balance", 0},
		{"GET", "/v1/payouts/po-obs", key, nil, "", payoutkit.CodeNotFound},     // no such path: no raw path as a route
		{"DELETE", "/v1/payouts", key, nil, "", payoutkit.CodeMethodNotAllowed}, // no route for the method
		{"GET", "/v1/openapi.yaml", "", nil, "GET /v1/openapi.yaml", 0},
	} {
		e.do(c.method, c.path, c.key, c.body)
		o := next()
		if o.route != c.route || o.code != c.code || o.d <= 0 {
			t.Errorf("%s %s: observed %+v, want route %q code %d and a duration", c.method, c.path, o, c.route, c.code)
		}
	}
	select {
	case o := <-seen:
		t.Errorf("an extra observation: %+v", o)
	default:
	}
}
