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
