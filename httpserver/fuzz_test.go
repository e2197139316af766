package httpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/httpserver"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/v1/payouts"},
	{"POST", "/v1/payouts/info"},
	{"POST", "/v1/orders"},
	{"POST", "/v1/orders/info"},
	{"POST", "/v1/sandbox/orders/pay"},
	{"POST", "/v1/sandbox/payouts/complete"},
	{"POST", "/v1/sandbox/payouts/fail"},
	{"GET", "/v1/balance"},
	{"GET", "/v1/coins"},
	{"PUT", "/v1/payouts"},
	{"POST", "/v1/nope"},
	{"POST", "/v1/payouts/list"},
	{"POST", "/v1/orders/list"},
	{"POST", "/v1/payouts/batch"},
	{"POST", "/v1/payouts/batch/info"},
}

// FuzzHandler feeds raw bodies to the endpoints of a real engine and checks
// that every answer is a contract envelope, never a 50000, and that the money
// invariants hold after each request.
func FuzzHandler(f *testing.F) {
	seeds := []string{
		`{"payout_id":"po-1","amount":"1.00","asset":"USDT","network":"TRON","address":"` + tronAddr + `","payer_id":"p"}`,
		`{"payout_id":"po-1","amount":"1.00","asset":"usdt","network":"tron","address":"` + tronAddr + `","payer_id":"q"}`,
		`{"payout_id":"po-1"}`,
		`{"order_id":"or-1","amount":"5.5"}`,
		`{"order_id":"or-1"}`,
		`{"payout_id":"po-1","txid":"t"}`,
		`{"payout_id":"po-1","reason":null}`,
		`{"amount":1e3}`,
		`{"payout_id":"a","payout_id":"b"}`,
		`[]`, `null`, ``, `{`, `{"a":"\ud800"}`, "{\"payout_id\":\"\xff\"}",
		`{"order_id":"or-2","amount":"1000000000.00","description":"` + "\u2028" + `"}`,
		`{"status":"submitted","payer_id":"p","created_from":"2026-11-22T10:00:00Z","created_to":"2126-01-01T00:00:00.5+01:00","limit":1}`,
		`{"limit":500,"cursor":"AQ"}`, `{"limit":1e400}`, `{"created_to":"0000-01-01T00:00:00Z","created_from":"9999-12-31T23:59:59.999999999Z"}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s))
	}
	store := memstore.New()
	engine, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Logger: discard()})
	if err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	nw, err := engine.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	ws := nw.Workspace.ID
	if _, _, err := engine.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "seed", Amount: "50"}); err != nil {
		f.Fatal(err)
	}
	if _, err := engine.MarkOrderPaid(ctx, ws, "seed"); err != nil {
		f.Fatal(err)
	}
	h := httpserver.New(engine, httpserver.Options{Sandbox: true, Logger: discard()})

	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		req := httptest.NewRequest(rt.method, rt.path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+nw.APIKey.Key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		var env struct {
			Code    *int            `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Code == nil {
			t.Fatalf("not an envelope: %v: %q", err, rec.Body.String())
		}
		switch *env.Code {
		case 0:
			if rec.Code != 200 || env.Message != "OK" || len(env.Data) == 0 || string(env.Data) == "null" {
				t.Fatalf("bad success: %d %s", rec.Code, rec.Body.String())
			}
		case 40000, 40400, 40500, 40900, 41300:
			if rec.Code != *env.Code/100 || string(env.Data) != "null" || env.Message == "" {
				t.Fatalf("bad error: %d %s", rec.Code, rec.Body.String())
			}
		default:
			t.Fatalf("code %d: %s", *env.Code, rec.Body.String())
		}
		if rec.Header().Get("X-Request-Id") == "" {
			t.Fatal("no X-Request-Id")
		}
		a, err := store.Audit(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
	})
}

// batchField is what a 40000 of the batch path may name: a member of the
// body, an item, or an item's field.
var batchField = regexp.MustCompile(`^(batch_id|payouts|all_or_nothing|payouts\[[0-9]+\](\.(payout_id|amount|asset|network|address|payer_id))?)$`)

// itemRefusal begins the message of a refused all-or-nothing batch.
var itemRefusal = regexp.MustCompile(`^payouts\[[0-9]+\]: `)

// FuzzBatchBody feeds raw bodies to POST /v1/payouts/batch of a real
// engine: every answer is an envelope, never a 50000; a 40000 names each
// bad field by its path (in errors and the message), is about the body as
// a whole, or names the refused item of an all-or-nothing batch; a success
// is a batch whose counts agree with its results; the money invariants
// hold.
func FuzzBatchBody(f *testing.F) {
	item := func(id, amount string) string {
		return `{"payout_id":"` + id + `","amount":"` + amount + `","asset":"USDT","network":"TRON","address":"` + tronAddr + `","payer_id":"p"}`
	}
	for _, s := range []string{
		`{"batch_id":"b-1","payouts":[` + item("po-1", "1.00") + `,` + item("po-2", "2") + `]}`,
		`{"batch_id":"b-1","payouts":[` + item("po-1", "1.00") + `,` + item("po-2", "3") + `]}`,
		`{"batch_id":"b-2","payouts":[` + item("po-3", "40") + `,` + item("po-4", "20") + `],"all_or_nothing":true}`,
		`{"batch_id":"b-3","payouts":[` + item("po-1", "1.00") + `,` + item("po-1", "1.00") + `]}`,
		`{"batch_id":"b-4","payouts":[{"amount":1},null,[],"x",{"payout_id":"a","payout_id":"b"}],"all_or_nothing":"yes"}`,
		`{"batch_id":"b-5","payouts":[]}`, `{"batch_id":"b-6","payouts":{}}`, `{"payouts":[1,2,3]}`,
		`{"batch_id":"b-7","payouts":[` + item("bad id!", "0") + `],"all_or_nothing":null,"x":1}`,
		`{"batch_id":"b-8","payouts":[` + item("po-9", "1e3") + `]}`,
		`[]`, `null`, ``, `{`, `{"batch_id":"\ud800"}`, "{\"batch_id\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	store := memstore.New()
	engine, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Logger: discard()})
	if err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	nw, err := engine.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	ws := nw.Workspace.ID
	if _, _, err := engine.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "seed", Amount: "50"}); err != nil {
		f.Fatal(err)
	}
	if _, err := engine.MarkOrderPaid(ctx, ws, "seed"); err != nil {
		f.Fatal(err)
	}
	h := httpserver.New(engine, httpserver.Options{Logger: discard()})

	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "/v1/payouts/batch", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+nw.APIKey.Key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		var env struct {
			Code    *int                   `json:"code"`
			Message string                 `json:"message"`
			Data    json.RawMessage        `json:"data"`
			Errors  []payoutkit.FieldError `json:"errors"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Code == nil {
			t.Fatalf("not an envelope: %v: %q", err, rec.Body.String())
		}
		switch *env.Code {
		case 0:
			var b payoutkit.PayoutBatch
			if err := json.Unmarshal(env.Data, &b); err != nil || rec.Code != 200 || env.Message != "OK" ||
				len(b.Results) == 0 || b.Accepted+b.Refused != len(b.Results) {
				t.Fatalf("bad success (%v): %d %s", err, rec.Code, rec.Body.String())
			}
		case 40000, 40900, 41300:
			if rec.Code != *env.Code/100 || string(env.Data) != "null" || env.Message == "" {
				t.Fatalf("bad error: %d %s", rec.Code, rec.Body.String())
			}
		default:
			t.Fatalf("code %d: %s", *env.Code, rec.Body.String())
		}
		if *env.Code == 40000 {
			for _, fe := range env.Errors {
				if !batchField.MatchString(fe.Field) || !strings.Contains(env.Message, fe.Field+" "+fe.Message) {
					t.Fatalf("field %q (%q) in %s", fe.Field, fe.Message, rec.Body.String())
				}
			}
			if len(env.Errors) == 0 && !strings.HasPrefix(env.Message, "request body ") && !itemRefusal.MatchString(env.Message) {
				t.Fatalf("a 40000 that names no field: %s", rec.Body.String())
			}
		}
		a, err := store.Audit(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
	})
}
