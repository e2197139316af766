package httpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/httpserver"
)

func TestPayoutObjectAndLifecycle(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	ws, key := e.workspace()
	e.fund(ws, "100.00")

	body := payoutBody("po-1001", "25")
	body["asset"], body["network"] = "usdt", "Tron"
	r := e.do("POST", "/v1/payouts", key, body).wantCode(t, 0)
	if r.header.Get("Idempotent-Replayed") != "" {
		t.Fatal("a first create is marked replayed")
	}
	var p map[string]any
	if err := json.Unmarshal(r.env.Data, &p); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"payout_id": "po-1001", "status": "submitted", "amount": "25.00", "currency": "USD",
		"asset": "USDT", "network": "TRON", "address": tronAddr, "payer_id": "cust-42",
		"txid": nil, "failure_reason": nil, "asset_amount": nil, "network_fee": nil, "approval": "none",
	} {
		if got, ok := p[k]; !ok || got != want {
			t.Fatalf("%s = %v, want %v (%s)", k, got, want, r.env.Data)
		}
	}
	for _, k := range []string{"created_at", "updated_at"} {
		ts, _ := p[k].(string)
		if tm, err := time.Parse(time.RFC3339, ts); err != nil || tm.Location() != time.UTC || ts[len(ts)-1] != 'Z' {
			t.Fatalf("%s = %q", k, ts)
		}
	}
	if len(p) != 15 {
		t.Fatalf("payout object has %d members: %s", len(p), r.env.Data)
	}
	balance := func(avail, inProgress string) {
		t.Helper()
		r := e.do("GET", "/v1/balance", key, nil).wantCode(t, 0)
		want := fmt.Sprintf(`{"currency":"USD","available":%q,"in_progress":%q}`, avail, inProgress)
		if string(r.env.Data) != want {
			t.Fatalf("balance %s, want %s", r.env.Data, want)
		}
	}
	balance("75.00", "25.00")

	// Info.
	r = e.do("POST", "/v1/payouts/info", key, `{"payout_id":"po-1001"}`).wantCode(t, 0)
	var info payoutkit.Payout
	if err := json.Unmarshal(r.env.Data, &info); err != nil || info.Status != payoutkit.PayoutSubmitted || info.Amount != 25_00 {
		t.Fatalf("info %+v %v", info, err)
	}

	// Replay: numerically equal amount, any case of asset and network.
	body["amount"], body["asset"], body["network"] = "25.0", "USDT", "tron"
	r = e.do("POST", "/v1/payouts", key, body).wantCode(t, 0)
	if r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("replay not marked")
	}
	balance("75.00", "25.00")

	// Complete; a replay still returns the stored payout, now completed.
	r = e.do("POST", "/v1/sandbox/payouts/complete", key, `{"payout_id":"po-1001","txid":"0xabc"}`).wantCode(t, 0)
	var done payoutkit.Payout
	if err := json.Unmarshal(r.env.Data, &done); err != nil || done.Status != payoutkit.PayoutCompleted || done.TxID != "0xabc" {
		t.Fatalf("completed %+v %v", done, err)
	}
	// The sandbox reports the settlement from its rate table: USDT at 1.00,
	// a fee of 1 USDT.
	if !jsonHas(r.env.Data, "asset_amount", "25") || !jsonHas(r.env.Data, "network_fee", "1") {
		t.Fatalf("completed without the sandbox's settlement: %s", r.env.Data)
	}
	balance("75.00", "0.00")
	r = e.do("POST", "/v1/payouts", key, body).wantCode(t, 0)
	if r.header.Get("Idempotent-Replayed") != "true" || !jsonHas(r.env.Data, "status", "completed") {
		t.Fatalf("replay after completion: %s", r.env.Data)
	}
	balance("75.00", "0.00")

	// Fail credits back.
	e.do("POST", "/v1/payouts", key, payoutBody("po-1002", "30.50")).wantCode(t, 0)
	balance("44.50", "30.50")
	r = e.do("POST", "/v1/sandbox/payouts/fail", key, `{"payout_id":"po-1002","reason":"address frozen"}`).wantCode(t, 0)
	if !jsonHas(r.env.Data, "failure_reason", "address frozen") || !jsonHas(r.env.Data, "status", "failed") {
		t.Fatalf("failed: %s", r.env.Data)
	}
	balance("75.00", "0.00")

	// Complete without a txid still shows one; fail without a reason shows one.
	e.do("POST", "/v1/payouts", key, payoutBody("po-1003", "1")).wantCode(t, 0)
	e.do("POST", "/v1/payouts", key, payoutBody("po-1004", "1")).wantCode(t, 0)
	c := e.client(key)
	ctx := context.Background()
	if p, err := c.CompletePayout(ctx, "po-1003", ""); err != nil || p.TxID == "" {
		t.Fatalf("complete without txid: %+v %v", p, err)
	}
	if p, err := c.FailPayout(ctx, "po-1004", ""); err != nil || p.FailureReason == "" {
		t.Fatalf("fail without reason: %+v %v", p, err)
	}
	balance("74.00", "0.00")
	e.audit(ws)
}

func jsonHas(data json.RawMessage, key string, want any) bool {
	var m map[string]any
	return json.Unmarshal(data, &m) == nil && m[key] == want
}

func TestClientReplayFlag(t *testing.T) {
	e := newEnv(t, httpserver.Options{})
	ws, key := e.workspace()
	e.fund(ws, "10.00")
	c := e.client(key)
	ctx := context.Background()
	req := payoutkit.CreatePayoutRequest{PayoutID: "po-r", Amount: "2.50", Asset: "TRX", Network: "TRON", Address: tronAddr, PayerID: "p"}
	p1, replayed, err := c.CreatePayout(ctx, req)
	if err != nil || replayed {
		t.Fatalf("first: %v %v", replayed, err)
	}
	p2, replayed, err := c.CreatePayout(ctx, req)
	if err != nil || !replayed || p2 != p1 {
		t.Fatalf("second: %+v %v %v", p2, replayed, err)
	}
	o1, replayed, err := c.CreateOrder(ctx, payoutkit.CreateOrderRequest{OrderID: "or-r", Amount: "3", PayerID: "p", Description: "d"})
	if err != nil || replayed {
		t.Fatalf("order: %v %v", replayed, err)
	}
	o2, replayed, err := c.CreateOrder(ctx, payoutkit.CreateOrderRequest{OrderID: "or-r", Amount: "3.00", PayerID: "p", Description: "d"})
	if err != nil || !replayed || o2 != o1 {
		t.Fatalf("order replay: %+v %v %v", o2, replayed, err)
	}
	r := e.do("POST", "/v1/orders", key, `{"order_id":"or-r","amount":"3","payer_id":"p","description":"d"}`).wantCode(t, 0)
	if r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("raw order replay not marked")
	}
}

func TestCoins(t *testing.T) {
	e := newEnv(t, httpserver.Options{})
	_, key := e.workspace()
	r := e.do("GET", "/v1/coins", key, nil).wantCode(t, 0)
	var data struct {
		PayoutCoins []map[string]any `json:"payout_coins"`
	}
	if err := json.Unmarshal(r.env.Data, &data); err != nil {
		t.Fatal(err)
	}
	if len(data.PayoutCoins) != len(payoutkit.DefaultCoins()) {
		t.Fatalf("%d coins", len(data.PayoutCoins))
	}
	found := false
	for _, c := range data.PayoutCoins {
		if c["ticker"] == "USDT" && c["network"] == "TRON" && c["name"] == "Tether USD on TRON" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no USDT/TRON row: %s", r.env.Data)
	}
	coins, err := e.client(key).Coins(context.Background())
	if err != nil || len(coins) != len(payoutkit.DefaultCoins()) {
		t.Fatalf("client coins %v %v", coins, err)
	}
}

func TestOrders(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	ws, key := e.workspace()
	r := e.do("POST", "/v1/orders", key, `{"order_id":"or-1","amount":"12.5","payer_id":null,"description":null,"extra":{"x":[1]}}`).wantCode(t, 0)
	var o map[string]any
	if err := json.Unmarshal(r.env.Data, &o); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"order_id": "or-1", "status": "pending", "amount": "12.50", "currency": "USD",
		"payer_id": nil, "description": nil, "paid_at": nil,
	} {
		if got, ok := o[k]; !ok || got != want {
			t.Fatalf("%s = %v, want %v (%s)", k, got, want, r.env.Data)
		}
	}
	// Optional fields of the wrong type are named.
	e.do("POST", "/v1/orders", key, `{"order_id":"or-2","amount":"1","payer_id":5}`).wantCode(t, 40000).wantField(t, "payer_id")
	e.do("POST", "/v1/orders", key, `{"order_id":"or-2","amount":"1","description":[]}`).wantCode(t, 40000).wantField(t, "description")
	e.do("POST", "/v1/orders", key, `{"order_id":"or-2","amount":1}`).wantCode(t, 40000).wantField(t, "amount")
	e.do("POST", "/v1/orders", key, `{"order_id":"or-2"}`).wantCode(t, 40000).wantField(t, "amount")
	e.do("POST", "/v1/orders", key, `{"amount":"1"}`).wantCode(t, 40000).wantField(t, "order_id")
	e.do("POST", "/v1/orders/info", key, `{"order_id":null}`).wantCode(t, 40000).wantField(t, "order_id")
	e.do("POST", "/v1/payouts/info", key, `{"payout_id":12}`).wantCode(t, 40000).wantField(t, "payout_id")
	e.do("POST", "/v1/payouts/info", key, `{}`).wantCode(t, 40000).wantField(t, "payout_id")

	c := e.client(key)
	ctx := context.Background()
	paid, err := c.PayOrder(ctx, "or-1")
	if err != nil || paid.Status != payoutkit.OrderPaid || paid.PaidAt.IsZero() {
		t.Fatalf("pay: %+v %v", paid, err)
	}
	again, err := c.PayOrder(ctx, "or-1")
	if err != nil || again != paid {
		t.Fatalf("pay again: %+v %v", again, err)
	}
	if b, _ := c.Balance(ctx); b.Available != 12_50 {
		t.Fatalf("credited %v", b.Available)
	}
	got, err := c.Order(ctx, "or-1")
	if err != nil || got != paid {
		t.Fatalf("info %+v %v", got, err)
	}
	// A paid order replays too.
	if _, replayed, err := c.CreateOrder(ctx, payoutkit.CreateOrderRequest{OrderID: "or-1", Amount: "12.50"}); err != nil || !replayed {
		t.Fatalf("replay of paid order: %v %v", replayed, err)
	}
	e.audit(ws)
}

func TestWorkspaceIsolation(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	ws1, key1 := e.workspace()
	ws2, key2 := e.workspace()
	e.fund(ws1, "10.00")
	c1, c2 := e.client(key1), e.client(key2)
	ctx := context.Background()
	req := payoutkit.CreatePayoutRequest{PayoutID: "same", Amount: "4", Asset: "USDT", Network: "TRON", Address: tronAddr, PayerID: "p"}
	if _, _, err := c1.CreatePayout(ctx, req); err != nil {
		t.Fatal(err)
	}
	// The same id in another workspace is a different payout, judged on that balance.
	if _, _, err := c2.CreatePayout(ctx, req); !errors.Is(err, payoutkit.ErrInsufficientBalance) {
		t.Fatalf("other workspace: %v", err)
	}
	e.fund(ws2, "4.00")
	if _, replayed, err := c2.CreatePayout(ctx, req); err != nil || replayed {
		t.Fatalf("other workspace after funding: %v %v", replayed, err)
	}
	// Sandbox settlement and orders see only their own workspace.
	if _, err := c2.CompletePayout(ctx, "same", ""); err != nil {
		t.Fatal(err)
	}
	if p, err := c1.Payout(ctx, "same"); err != nil || p.Status != payoutkit.PayoutSubmitted {
		t.Fatalf("workspace 1's payout moved: %+v %v", p, err)
	}
	if _, _, err := c1.CreateOrder(ctx, payoutkit.CreateOrderRequest{OrderID: "o", Amount: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.PayOrder(ctx, "o"); !errors.Is(err, payoutkit.ErrNotFound) {
		t.Fatalf("paying another workspace's order: %v", err)
	}
	b1, _ := c1.Balance(ctx)
	b2, _ := c2.Balance(ctx)
	if b1.Available != 6_00 || b1.InProgress != 4_00 || b2.Available != 0 || b2.InProgress != 0 {
		t.Fatalf("balances %+v %+v", b1, b2)
	}
	e.audit(ws1)
	e.audit(ws2)
}

// 200 payouts of 1.00 race one balance of 100.00 through HTTP: exactly 100
// are accepted, the rest are overdrafts, and the balance ends at 0.00.
func TestConcurrentPayoutsRaceOneBalance(t *testing.T) {
	e := newEnv(t, httpserver.Options{})
	ws, key := e.workspace()
	e.fund(ws, "100.00")
	c := e.client(key)
	ctx := context.Background()
	var (
		wg                  sync.WaitGroup
		mu                  sync.Mutex
		accepted, overdrawn int
		other               []error
	)
	start := make(chan struct{})
	for i := range 200 {
		wg.Go(func() {
			<-start
			_, _, err := c.CreatePayout(ctx, payoutkit.CreatePayoutRequest{
				PayoutID: fmt.Sprintf("race-%d", i), Amount: "1.00", Asset: "USDT", Network: "TRON", Address: tronAddr, PayerID: "p",
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				accepted++
			case errors.Is(err, payoutkit.ErrInsufficientBalance):
				overdrawn++
			default:
				other = append(other, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if accepted != 100 || overdrawn != 100 || len(other) != 0 {
		t.Fatalf("accepted %d, overdrawn %d, other %v", accepted, overdrawn, other)
	}
	b, err := c.Balance(ctx)
	if err != nil || b.Available != 0 || b.InProgress != 100_00 {
		t.Fatalf("balance %+v %v", b, err)
	}
	e.audit(ws)
}

// Concurrent identical creates make one payout; the others are replays.
func TestConcurrentIdenticalCreates(t *testing.T) {
	e := newEnv(t, httpserver.Options{})
	ws, key := e.workspace()
	e.fund(ws, "10.00")
	c := e.client(key)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		created  int
		replayed int
	)
	start := make(chan struct{})
	for range 30 {
		wg.Go(func() {
			<-start
			_, rep, err := c.CreatePayout(context.Background(), payoutkit.CreatePayoutRequest{
				PayoutID: "dup", Amount: "3", Asset: "USDT", Network: "TRON", Address: tronAddr, PayerID: "p",
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Error(err)
			case rep:
				replayed++
			default:
				created++
			}
		})
	}
	close(start)
	wg.Wait()
	if created != 1 || replayed != 29 {
		t.Fatalf("created %d, replayed %d", created, replayed)
	}
	if b, _ := c.Balance(context.Background()); b.Available != 7_00 {
		t.Fatalf("balance %v", b.Available)
	}
	e.audit(ws)
}

func TestHeaderAbuseNever500(t *testing.T) {
	// Many failures from one address: the failure limit is off.
	e := newEnv(t, httpserver.Options{Sandbox: true, RateLimit: 1000, AuthFailureLimit: -1})
	_, key := e.workspace()
	headers := [][]string{
		{"Authorization", "Bearer " + key, "Authorization", "x"},
		{"Authorization", "Bearer    " + key},
		{"Authorization", " Bearer " + key},
		{"Authorization", "Bearer " + key + "\xff"},
		{"Authorization", "Bearer sk_" + string([]byte{0xe2, 0x80, 0xae}) + "AAAAAAA_" + key[12:]},
		{"X-Request-Id", string([]byte{0xff, 0xfe})},
		{"X-Request-Id", "../../etc/passwd"},
		{"Content-Type", "text/plain"},
		{"Content-Length-Junk", "1"},
		{"Cookie", "s=" + strings.Repeat("a", 8<<10)},
		{"Transfer-Encoding", "identity"},
	}
	for _, h := range headers {
		for _, ep := range []struct{ method, path string }{
			{"GET", "/v1/balance"}, {"POST", "/v1/payouts"}, {"POST", "/v1/orders/info"}, {"GET", "/v1/nope"},
		} {
			var body any
			if ep.method == "POST" {
				body = `{"order_id":"x"}`
			}
			r := e.do(ep.method, ep.path, "", body, h...)
			if r.status >= 500 || r.env.Code == 50000 || r.env.Code == 0 && r.status != 200 {
				t.Fatalf("%s %s with %q: %d %s", ep.method, ep.path, h, r.status, r.body)
			}
		}
	}
	// A valid key with an odd X-Request-Id still works.
	e.do("GET", "/v1/balance", key, nil, "X-Request-Id", "\xff\xfe").wantCode(t, 0)
	if http.StatusText(e.do("GET", "/v1/balance", key, nil, "Content-Type", "application/xml").status) == "" {
		t.Fatal("no status")
	}
}
