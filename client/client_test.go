package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/client"
)

// The client's behaviour against the real server is tested in package
// httpserver; here, answers that server never gives.

func stub(t *testing.T, status int, body string, check func(*http.Request)) *client.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if check != nil {
			check(r)
		}
		w.Header().Set("X-Request-Id", "rid-1")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return client.New(srv.URL+"/", "sk_key")
}

func TestErrorKinds(t *testing.T) {
	cases := []struct {
		body   string
		status int
		is     []error
		isNot  []error
	}{
		{`{"code":40000,"message":"Insufficient available balance","data":null}`, 400,
			[]error{payoutkit.ErrInsufficientBalance, payoutkit.ErrInvalidInput}, []error{payoutkit.ErrConflict}},
		{`{"code":40000,"message":"amount must be greater than 0","data":null,"errors":[{"field":"amount","message":"must be greater than 0"}]}`, 400,
			[]error{payoutkit.ErrInvalidInput}, []error{payoutkit.ErrInsufficientBalance}},
		{`{"code":40100,"message":"invalid API key","data":null}`, 401, []error{payoutkit.ErrUnauthorized}, []error{payoutkit.ErrInvalidInput}},
		{`{"code":40400,"message":"payout not found","data":null}`, 404, []error{payoutkit.ErrNotFound}, nil},
		{`{"code":40900,"message":"conflict","data":null}`, 409, []error{payoutkit.ErrConflict}, nil},
		{`{"code":42900,"message":"slow down","data":null}`, 429, nil,
			[]error{payoutkit.ErrInvalidInput, payoutkit.ErrConflict, payoutkit.ErrNotFound, payoutkit.ErrUnauthorized}},
		{`{"code":50000,"message":"internal error","data":null}`, 500, nil, []error{payoutkit.ErrInvalidInput}},
	}
	for _, c := range cases {
		_, _, err := stub(t, c.status, c.body, nil).CreatePayout(context.Background(), payoutkit.CreatePayoutRequest{})
		var perr *payoutkit.Error
		if !errors.As(err, &perr) {
			t.Fatalf("%s: %T %v", c.body, err, err)
		}
		for _, want := range c.is {
			if !errors.Is(err, want) {
				t.Errorf("%s: does not match %v", c.body, want)
			}
		}
		for _, not := range c.isNot {
			if errors.Is(err, not) {
				t.Errorf("%s: matches %v", c.body, not)
			}
		}
	}
	_, _, err := stub(t, 400, `{"code":40000,"message":"m","data":null,"errors":[{"field":"amount","message":"bad"}]}`, nil).
		CreateOrder(context.Background(), payoutkit.CreateOrderRequest{})
	var perr *payoutkit.Error
	if !errors.As(err, &perr) || len(perr.Fields) != 1 || perr.Fields[0].Field != "amount" || perr.Code != payoutkit.CodeInvalidInput {
		t.Fatalf("fields: %+v", perr)
	}
}

func TestNotAnEnvelope(t *testing.T) {
	for _, body := range []string{`<html>bad gateway</html>`, `{"message":"no code"}`, ``} {
		_, err := stub(t, 502, body, nil).Balance(context.Background())
		var rerr *client.ResponseError
		if !errors.As(err, &rerr) || rerr.StatusCode != 502 || rerr.RequestID != "rid-1" {
			t.Fatalf("%q: %T %v", body, err, err)
		}
	}
}

func TestRequestShape(t *testing.T) {
	c := stub(t, 200, `{"code":0,"message":"OK","data":{"currency":"USD","available":"1.50","in_progress":"0.00"}}`, func(r *http.Request) {
		if r.URL.Path != "/v1/balance" || r.Method != "GET" || r.Header.Get("Authorization") != "Bearer sk_key" {
			t.Errorf("request %s %s %q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		}
	})
	b, err := c.Balance(context.Background())
	if err != nil || b.Available != 150 || b.InProgress != 0 {
		t.Fatalf("%+v %v", b, err)
	}
}

func TestBatchRequestAndAnswer(t *testing.T) {
	const data = `{"batch_id":"b-1","created_at":"2026-11-22T10:00:00Z","all_or_nothing":false,"accepted":1,"refused":1,"accepted_amount":"25.00","results":[` +
		`{"payout_id":"po-1","code":0,"message":"OK","payout":{"payout_id":"po-1","status":"submitted","amount":"25.00","currency":"USD","asset":"USDT","network":"TRON","address":"T1","payer_id":"p","txid":null,"asset_amount":null,"network_fee":null,"failure_reason":null,"created_at":"2026-11-22T10:00:00Z","updated_at":"2026-11-22T10:00:00Z","approval":"none"}},` +
		`{"payout_id":"po-2","code":40000,"message":"Insufficient available balance","payout":null}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/v1/payouts/batch":
			want := `{"batch_id":"b-1","payouts":[{"payout_id":"po-1","amount":"25","asset":"USDT","network":"TRON","address":"T1","payer_id":"p"}],"all_or_nothing":true}`
			if r.Method != "POST" || string(body) != want {
				t.Errorf("%s %s", r.Method, body)
			}
			w.Header().Set("Idempotent-Replayed", "true")
		case "/v1/payouts/batch/info":
			if string(body) != `{"batch_id":"b-1"}` {
				t.Errorf("info body %s", body)
			}
		default:
			t.Errorf("path %s", r.URL.Path)
		}
		io.WriteString(w, `{"code":0,"message":"OK","data":`+data+`}`)
	}))
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, "sk_key")
	b, replayed, err := c.CreatePayoutBatch(context.Background(), payoutkit.CreatePayoutBatchRequest{
		BatchID: "b-1", AllOrNothing: true,
		Payouts: []payoutkit.CreatePayoutRequest{{PayoutID: "po-1", Amount: "25", Asset: "USDT", Network: "TRON", Address: "T1", PayerID: "p"}},
	})
	if err != nil || !replayed || b.Accepted != 1 || b.AcceptedAmount != 25_00 || len(b.Results) != 2 ||
		b.Results[0].Payout.Status != payoutkit.PayoutSubmitted || b.Results[1].Payout != nil || b.Results[1].Code != payoutkit.CodeInvalidInput {
		t.Fatalf("%+v %v %v", b, replayed, err)
	}
	info, err := c.PayoutBatch(context.Background(), "b-1")
	if err != nil || info.BatchID != "b-1" || info.Results[1].Message != "Insufficient available balance" {
		t.Fatalf("info %+v %v", info, err)
	}
	// A refused all-or-nothing batch is an error naming the item.
	_, _, err = stub(t, 400, `{"code":40000,"message":"payouts[7]: Insufficient available balance","data":null}`, nil).
		CreatePayoutBatch(context.Background(), payoutkit.CreatePayoutBatchRequest{})
	var perr *payoutkit.Error
	if !errors.As(err, &perr) || perr.Code != payoutkit.CodeInvalidInput || perr.Message != "payouts[7]: Insufficient available balance" {
		t.Fatalf("refusal: %v", err)
	}
}
