package httpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/httpserver"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// testClock is a settable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// newClockedEnv is newEnv with an engine whose clock c sets, and cfg's
// coins.
func newClockedEnv(t *testing.T, c *testClock, coins []payoutkit.Coin, opts httpserver.Options) *env {
	t.Helper()
	store := memstore.New()
	cfg := &payoutkit.Config{PasswordCost: bcrypt.MinCost, Logger: discard(), Coins: coins}
	if c != nil {
		cfg.Now = c.now
	}
	engine, err := payoutkit.New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, store, engine, engine, opts)
}

// listData is the data of a list answer.
type listData struct {
	Items      []map[string]any `json:"items"`
	NextCursor *string          `json:"next_cursor"`
}

func (e *env) list(t *testing.T, path, key string, body map[string]any) listData {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	r := e.do(http.MethodPost, path, key, body).wantCode(t, 0)
	var d listData
	if err := json.Unmarshal(r.env.Data, &d); err != nil {
		t.Fatal(err)
	}
	if d.Items == nil {
		t.Fatalf("items is not an array: %s", r.env.Data)
	}
	return d
}

// listAll follows next_cursor to the end and returns the values of member
// idKey, checking page sizes.
func (e *env) listAll(t *testing.T, path, key, idKey string, body map[string]any, limit int) []string {
	t.Helper()
	b := map[string]any{}
	for k, v := range body {
		b[k] = v
	}
	if limit > 0 {
		b["limit"] = limit
	}
	var out []string
	for range 100 {
		d := e.list(t, path, key, b)
		if limit > 0 && len(d.Items) > limit {
			t.Fatalf("%d items with limit %d", len(d.Items), limit)
		}
		for _, it := range d.Items {
			out = append(out, it[idKey].(string))
		}
		if d.NextCursor == nil {
			return out
		}
		if len(d.Items) == 0 || *d.NextCursor == "" {
			t.Fatalf("an empty page or cursor before the end: %+v", d)
		}
		b["cursor"] = *d.NextCursor
	}
	t.Fatal("the listing never ended")
	return nil
}

func TestListPayouts(t *testing.T) {
	c := &testClock{}
	e := newClockedEnv(t, c, nil, httpserver.Options{Sandbox: true})
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	at := func(minute int) time.Time { return base.Add(time.Duration(minute) * time.Minute) }
	c.set(at(-5))
	ws, key := e.workspace()
	otherWS, otherKey := e.workspace()
	e.fund(ws, "100.00")
	e.fund(otherWS, "100.00")
	for i := range 7 {
		c.set(at(i))
		b := payoutBody(fmt.Sprintf("po-%d", i), "1.00")
		b["payer_id"] = []string{"alice", "bob"}[i%2]
		e.do(http.MethodPost, "/v1/payouts", key, b).wantCode(t, 0)
		e.do(http.MethodPost, "/v1/payouts", otherKey, payoutBody(fmt.Sprintf("x-%d", i), "1.00")).wantCode(t, 0)
	}
	c.set(at(10))
	e.do(http.MethodPost, "/v1/sandbox/payouts/complete", key, `{"payout_id":"po-1"}`).wantCode(t, 0)
	e.do(http.MethodPost, "/v1/sandbox/payouts/fail", key, `{"payout_id":"po-2"}`).wantCode(t, 0)

	for _, tc := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"All", nil, "po-6 po-5 po-4 po-3 po-2 po-1 po-0"},
		{"Status", map[string]any{"status": "completed"}, "po-1"},
		{"Payer", map[string]any{"payer_id": "bob"}, "po-5 po-3 po-1"},
		{"PayerAndStatus", map[string]any{"payer_id": "alice", "status": "submitted"}, "po-6 po-4 po-0"},
		{"From", map[string]any{"created_from": "2026-11-22T10:05:00Z"}, "po-6 po-5"},
		{"FromWithOffset", map[string]any{"created_from": "2026-11-22T11:05:00+01:00"}, "po-6 po-5"},
		{"To", map[string]any{"created_to": "2026-11-22T10:02:00Z"}, "po-1 po-0"},
		{"ToJustAfter", map[string]any{"created_to": "2026-11-22T10:02:00.000000001Z"}, "po-2 po-1 po-0"},
		{"Range", map[string]any{"created_from": "2026-11-22T10:02:00Z", "created_to": "2026-11-22T10:04:00Z"}, "po-3 po-2"},
		{"FromJustAfter", map[string]any{"created_from": "2026-11-22T10:05:00.5Z"}, "po-6"},
		{"Nulls", map[string]any{"status": nil, "payer_id": nil, "created_from": nil, "created_to": nil, "limit": nil, "cursor": nil}, "po-6 po-5 po-4 po-3 po-2 po-1 po-0"},
		{"EmptyCursor", map[string]any{"cursor": ""}, "po-6 po-5 po-4 po-3 po-2 po-1 po-0"},
		{"UnknownMembers", map[string]any{"page": 3}, "po-6 po-5 po-4 po-3 po-2 po-1 po-0"},
		{"NoMatch", map[string]any{"payer_id": "carol"}, ""},
		{"BeforeEverything", map[string]any{"created_to": "0001-01-01T00:00:00Z"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, limit := range []int{0, 1, 2, 500} {
				got := e.listAll(t, "/v1/payouts/list", key, "payout_id", tc.body, limit)
				if diff := cmp.Diff(ids(tc.want), got); diff != "" {
					t.Fatalf("limit %d (-want +got):\n%s", limit, diff)
				}
			}
		})
	}

	t.Run("DefaultLimit", func(t *testing.T) {
		c.set(at(20))
		e.fund(ws, "100.00")
		for i := range 55 {
			e.do(http.MethodPost, "/v1/payouts", key, payoutBody(fmt.Sprintf("bulk-%d", i), "0.01")).wantCode(t, 0)
		}
		d := e.list(t, "/v1/payouts/list", key, nil)
		if len(d.Items) != 50 || d.NextCursor == nil {
			t.Fatalf("first page: %d items, next %v", len(d.Items), d.NextCursor)
		}
		d = e.list(t, "/v1/payouts/list", key, map[string]any{"cursor": *d.NextCursor})
		if len(d.Items) != 12 || d.NextCursor != nil {
			t.Fatalf("second page: %d items, next %v", len(d.Items), d.NextCursor)
		}
		if got := len(e.listAll(t, "/v1/payouts/list", key, "payout_id", nil, 500)); got != 62 {
			t.Fatalf("limit 500: %d payouts", got)
		}
	})

	t.Run("PayoutObjects", func(t *testing.T) {
		d := e.list(t, "/v1/payouts/list", key, map[string]any{"status": "completed"})
		info := e.do(http.MethodPost, "/v1/payouts/info", key, `{"payout_id":"po-1"}`).wantCode(t, 0)
		got, _ := json.Marshal(d.Items[0])
		var want map[string]any
		json.Unmarshal(info.env.Data, &want)
		wantJSON, _ := json.Marshal(want)
		if string(got) != string(wantJSON) {
			t.Fatalf("listed %s\ninfo   %s", got, wantJSON)
		}
	})

	t.Run("Cursors", func(t *testing.T) {
		filter := map[string]any{"payer_id": "alice", "limit": 1}
		d := e.list(t, "/v1/payouts/list", key, filter)
		cur := *d.NextCursor
		with := func(changes map[string]any) map[string]any {
			b := map[string]any{"payer_id": "alice", "limit": 1, "cursor": cur}
			for k, v := range changes {
				if v == nil {
					delete(b, k)
				} else {
					b[k] = v
				}
			}
			return b
		}
		// The cursor works with its filter, and with another limit.
		e.list(t, "/v1/payouts/list", key, with(nil))
		e.list(t, "/v1/payouts/list", key, with(map[string]any{"limit": 3}))

		tampered := []byte(cur)
		tampered[len(tampered)/2] ^= 1
		for name, c := range map[string]struct {
			key  string
			path string
			body any
		}{
			"tampered":        {key, "/v1/payouts/list", with(map[string]any{"cursor": string(tampered)})},
			"truncated":       {key, "/v1/payouts/list", with(map[string]any{"cursor": cur[:len(cur)-2]})},
			"extended":        {key, "/v1/payouts/list", with(map[string]any{"cursor": cur + "A"})},
			"garbage":         {key, "/v1/payouts/list", with(map[string]any{"cursor": "not a cursor"})},
			"store position":  {key, "/v1/payouts/list", with(map[string]any{"cursor": "1763805600000000.3"})},
			"other payer":     {key, "/v1/payouts/list", with(map[string]any{"payer_id": "bob"})},
			"no filter":       {key, "/v1/payouts/list", with(map[string]any{"payer_id": nil})},
			"added status":    {key, "/v1/payouts/list", with(map[string]any{"status": "submitted"})},
			"added range":     {key, "/v1/payouts/list", with(map[string]any{"created_from": "2026-01-01T00:00:00Z"})},
			"foreign":         {otherKey, "/v1/payouts/list", with(nil)},
			"orders listing":  {key, "/v1/orders/list", with(nil)},
			"cursor a number": {key, "/v1/payouts/list", with(map[string]any{"cursor": 12})},
		} {
			t.Run(name, func(t *testing.T) {
				e.do(http.MethodPost, c.path, c.key, c.body).wantCode(t, 40000).wantField(t, "cursor").wantMessage(t, "cursor")
			})
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		for _, c := range []struct {
			body  string
			field string
		}{
			{`{"limit":0}`, "limit"},
			{`{"limit":501}`, "limit"},
			{`{"limit":-1}`, "limit"},
			{`{"limit":2.5}`, "limit"},
			{`{"limit":1e1}`, "limit"},
			{`{"limit":"10"}`, "limit"},
			{`{"limit":true}`, "limit"},
			{`{"limit":99999999999999999999999}`, "limit"},
			{`{"status":"done"}`, "status"},
			{`{"status":"pending"}`, "status"},
			{`{"status":""}`, "status"},
			{`{"status":1}`, "status"},
			{`{"payer_id":""}`, "payer_id"},
			{`{"payer_id":"a\u0001b"}`, "payer_id"},
			{`{"payer_id":"` + strings.Repeat("p", 129) + `"}`, "payer_id"},
			{`{"created_from":"yesterday"}`, "created_from"},
			{`{"created_from":"2026-11-22"}`, "created_from"},
			{`{"created_from":"2026-11-22 10:00:00Z"}`, "created_from"},
			{`{"created_from":""}`, "created_from"},
			{`{"created_to":1763805600}`, "created_to"},
			{`{"created_to":"2026-11-22T10:00:00"}`, "created_to"},
		} {
			t.Run(c.body, func(t *testing.T) {
				e.do(http.MethodPost, "/v1/payouts/list", key, c.body).wantCode(t, 40000).wantField(t, c.field).wantMessage(t, c.field)
			})
		}
		e.do(http.MethodPost, "/v1/payouts/list", key, `[]`).wantCode(t, 40000)
		e.do(http.MethodPost, "/v1/payouts/list", key, ``).wantCode(t, 40000)
		e.do(http.MethodPost, "/v1/payouts/list", "", `{}`).wantCode(t, 40100)
		e.do(http.MethodGet, "/v1/payouts/list", key, nil).wantCode(t, 40500)
		e.do(http.MethodPost, "/v1/payouts/list", key, `{}`).wantCode(t, 0)
	})
	e.audit(ws)
}

func TestListOrders(t *testing.T) {
	c := &testClock{}
	e := newClockedEnv(t, c, nil, httpserver.Options{Sandbox: true})
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	c.set(base)
	ws, key := e.workspace()
	_, otherKey := e.workspace()
	for i := range 5 {
		c.set(base.Add(time.Duration(i) * time.Hour))
		body := map[string]any{"order_id": fmt.Sprintf("ord-%d", i), "amount": "5.00"}
		if i%2 == 0 {
			body["payer_id"] = "carol"
		}
		e.do(http.MethodPost, "/v1/orders", key, body).wantCode(t, 0)
	}
	e.do(http.MethodPost, "/v1/orders", otherKey, `{"order_id":"ord-x","amount":"1"}`).wantCode(t, 0)
	e.do(http.MethodPost, "/v1/sandbox/orders/pay", key, `{"order_id":"ord-3"}`).wantCode(t, 0)

	for _, tc := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"All", nil, "ord-4 ord-3 ord-2 ord-1 ord-0"},
		{"Pending", map[string]any{"status": "pending"}, "ord-4 ord-2 ord-1 ord-0"},
		{"Paid", map[string]any{"status": "paid"}, "ord-3"},
		{"Payer", map[string]any{"payer_id": "carol"}, "ord-4 ord-2 ord-0"},
		{"Range", map[string]any{"created_from": "2026-11-22T11:00:00Z", "created_to": "2026-11-22T13:00:00Z"}, "ord-2 ord-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, limit := range []int{0, 1, 2} {
				if diff := cmp.Diff(ids(tc.want), e.listAll(t, "/v1/orders/list", key, "order_id", tc.body, limit)); diff != "" {
					t.Fatalf("limit %d (-want +got):\n%s", limit, diff)
				}
			}
		})
	}
	e.do(http.MethodPost, "/v1/orders/list", key, `{"status":"submitted"}`).wantCode(t, 40000).wantField(t, "status")
	d := e.list(t, "/v1/orders/list", key, map[string]any{"limit": 2})
	e.do(http.MethodPost, "/v1/orders/list", otherKey, map[string]any{"limit": 2, "cursor": *d.NextCursor}).wantCode(t, 40000).wantField(t, "cursor")
	e.do(http.MethodPost, "/v1/payouts/list", key, map[string]any{"limit": 2, "cursor": *d.NextCursor}).wantCode(t, 40000).wantField(t, "cursor")
	e.audit(ws)
}

func TestClientLists(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	ws, key := e.workspace()
	e.fund(ws, "10.00")
	cl := e.client(key)
	ctx := context.Background()
	for i := range 5 {
		if _, _, err := cl.CreatePayout(ctx, payoutkit.CreatePayoutRequest{
			PayoutID: fmt.Sprintf("po-%d", i), Amount: "1", Asset: "USDT", Network: "TRON", Address: tronAddr, PayerID: "cust-42",
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.CompletePayout(ctx, "po-0", ""); err != nil {
		t.Fatal(err)
	}
	page, err := cl.ListPayouts(ctx, payoutkit.ListPayoutsRequest{Status: payoutkit.PayoutSubmitted, Limit: 3, CreatedFrom: time.Now().Add(-time.Hour)})
	if err != nil || len(page.Items) != 3 || page.NextCursor == "" || page.Items[0].Amount != 1_00 {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	var got []string
	for p, err := range cl.AllPayouts(ctx, payoutkit.ListPayoutsRequest{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.PayoutID)
	}
	if diff := cmp.Diff([]string{"po-4", "po-3", "po-2", "po-1", "po-0"}, got); diff != "" {
		t.Fatalf("AllPayouts (-want +got):\n%s", diff)
	}
	done, err := cl.ListPayouts(ctx, payoutkit.ListPayoutsRequest{Status: payoutkit.PayoutCompleted})
	if err != nil || len(done.Items) != 1 || !done.Items[0].AssetAmount.Valid || done.Items[0].AssetAmount.Decimal.String() != "1" {
		t.Fatalf("completed: %+v, %v", done, err)
	}
	_, err = cl.ListPayouts(ctx, payoutkit.ListPayoutsRequest{Cursor: page.NextCursor})
	if payoutkit.CodeOf(err) != payoutkit.CodeInvalidInput {
		t.Fatalf("a cursor with another filter: %v", err)
	}
	for _, err := range cl.AllOrders(ctx, payoutkit.ListOrdersRequest{Limit: 501}) {
		if payoutkit.CodeOf(err) != payoutkit.CodeInvalidInput {
			t.Fatalf("AllOrders with limit 501: %v", err)
		}
	}
	orders, err := cl.ListOrders(ctx, payoutkit.ListOrdersRequest{Status: payoutkit.OrderPaid})
	if err != nil || len(orders.Items) != 1 || orders.NextCursor != "" {
		t.Fatalf("orders: %+v, %v", orders, err)
	}
}

func TestCoinLimits(t *testing.T) {
	coins := payoutkit.DefaultCoins()
	for i, c := range coins {
		if c.Ticker == "USDT" && c.Network == "TRON" {
			coins[i].MinAmount, coins[i].MaxAmount = 1_00, 500_00
		}
	}
	e := newClockedEnv(t, nil, coins, httpserver.Options{Sandbox: true})
	ws, key := e.workspace()
	e.fund(ws, "1000.00")

	r := e.do(http.MethodPost, "/v1/payouts", key, payoutBody("po-low", "0.99")).wantCode(t, 40000).wantField(t, "amount")
	if r.env.Message != "amount must be at least 1.00 for USDT on TRON" {
		t.Fatalf("message %q", r.env.Message)
	}
	body := payoutBody("po-high", "500.01")
	body["asset"], body["network"] = "usdt", "tron" // the message names the row's spelling
	r = e.do(http.MethodPost, "/v1/payouts", key, body).wantCode(t, 40000).wantField(t, "amount")
	if r.env.Message != "amount must be at most 500.00 for USDT on TRON" {
		t.Fatalf("message %q", r.env.Message)
	}
	// The limits are inclusive, and other coins keep the defaults.
	e.do(http.MethodPost, "/v1/payouts", key, payoutBody("po-min", "1")).wantCode(t, 0)
	e.do(http.MethodPost, "/v1/payouts", key, payoutBody("po-max", "500.00")).wantCode(t, 0)
	trx := payoutBody("po-trx", "0.01")
	trx["asset"] = "TRX"
	e.do(http.MethodPost, "/v1/payouts", key, trx).wantCode(t, 0)
	// A refused payout changed nothing: its id is still free.
	e.do(http.MethodPost, "/v1/payouts/info", key, `{"payout_id":"po-low"}`).wantCode(t, 40400)
	b, err := e.client(key).Balance(context.Background())
	if err != nil || b.Available != 1000_00-501_01 || b.InProgress != 501_01 {
		t.Fatalf("balance %+v, %v", b, err)
	}

	r = e.do(http.MethodGet, "/v1/coins", key, nil).wantCode(t, 0)
	var data struct {
		PayoutCoins []map[string]any `json:"payout_coins"`
	}
	if err := json.Unmarshal(r.env.Data, &data); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, c := range data.PayoutCoins {
		switch fmt.Sprint(c["ticker"], "/", c["network"]) {
		case "USDT/TRON":
			found++
			if c["min_amount"] != "1.00" || c["max_amount"] != "500.00" || c["decimals"] != 6.0 {
				t.Errorf("USDT on TRON: %v", c)
			}
		case "BTC/BTC":
			found++
			if c["min_amount"] != "0.01" || c["max_amount"] != "1000000000.00" || c["decimals"] != 8.0 {
				t.Errorf("BTC: %v", c)
			}
		}
	}
	if found != 2 {
		t.Fatalf("coins %v", data.PayoutCoins)
	}
	e.audit(ws)
}

// ids splits a space-separated list of ids; "" is none.
func ids(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Fields(s)
}
