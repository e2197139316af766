// Package client is a typed Go client of the payoutkit /v1 HTTP API, for
// CRMs and other merchant systems.
//
// Errors the server reports come back as *payoutkit.Error with the code,
// message and fields of the response, so they match the engine's sentinels:
//
//	p, replayed, err := c.CreatePayout(ctx, req)
//	switch {
//	case errors.Is(err, payoutkit.ErrInsufficientBalance): // top the balance up
//	case errors.Is(err, payoutkit.ErrConflict):            // payout_id used with other values
//	case errors.Is(err, payoutkit.ErrInvalidInput):        // see err.(*payoutkit.Error).Fields
//	case errors.Is(err, payoutkit.ErrForbidden):           // the key lacks the scope, or its allowlist refuses this address
//	}
//
// Creates are idempotent by payout_id, order_id and batch_id, so a create whose outcome
// is unknown (a timeout, a lost connection) may be sent again as it was.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit"
)

// maxResponse bounds how much of a response is read.
const maxResponse = 4 << 20

// Client calls one payoutkit server with one API key. It is safe for
// concurrent use.
type Client struct {
	base      string
	key       string
	http      *http.Client
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends requests through hc. Defaults to a client with a 30 s
// timeout.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithUserAgent sets the User-Agent header. Defaults to "payoutkit-go-client".
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the server at baseURL (scheme, host and any path
// prefix before /v1, such as "http://localhost:8080") using apiKey.
func New(baseURL, apiKey string, opts ...Option) *Client {
	c := &Client{
		base:      strings.TrimRight(baseURL, "/"),
		key:       apiKey,
		http:      &http.Client{Timeout: 30 * time.Second},
		userAgent: "payoutkit-go-client",
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// CreatePayout asks for a payout. replayed is true when the server returned a
// payout created earlier with the same payout_id and parameters.
func (c *Client) CreatePayout(ctx context.Context, req payoutkit.CreatePayoutRequest) (p payoutkit.Payout, replayed bool, err error) {
	replayed, err = c.call(ctx, http.MethodPost, "/v1/payouts", req, &p)
	return p, replayed, err
}

// Payout looks a payout up by its payout_id.
func (c *Client) Payout(ctx context.Context, payoutID string) (payoutkit.Payout, error) {
	var p payoutkit.Payout
	_, err := c.call(ctx, http.MethodPost, "/v1/payouts/info", map[string]string{"payout_id": payoutID}, &p)
	return p, err
}

// CreatePayoutBatch asks for a mass payout: up to payoutkit.MaxBatchItems
// payouts applied in order under one batch_id. Each item is accepted or
// refused on its own (see the batch's Results), unless req.AllOrNothing,
// when a refused item refuses the whole batch with an error whose message
// begins with the item's path ("payouts[7]: ..."). replayed is true when
// the server returned a batch created earlier with the same batch_id and
// request.
func (c *Client) CreatePayoutBatch(ctx context.Context, req payoutkit.CreatePayoutBatchRequest) (b payoutkit.PayoutBatch, replayed bool, err error) {
	replayed, err = c.call(ctx, http.MethodPost, "/v1/payouts/batch", req, &b)
	return b, replayed, err
}

// PayoutBatch looks a batch up by its batch_id: each result as first
// answered, each accepted item's payout as it is now.
func (c *Client) PayoutBatch(ctx context.Context, batchID string) (payoutkit.PayoutBatch, error) {
	var b payoutkit.PayoutBatch
	_, err := c.call(ctx, http.MethodPost, "/v1/payouts/batch/info", map[string]string{"batch_id": batchID}, &b)
	return b, err
}

// ListPayouts reads one page of the workspace's payouts that match req,
// newest first. Pass the page's NextCursor as req.Cursor, with the same
// filters, for the next page; it is empty on the last page. A cursor used
// with other filters, or changed, is ErrInvalidInput.
func (c *Client) ListPayouts(ctx context.Context, req payoutkit.ListPayoutsRequest) (payoutkit.List[payoutkit.Payout], error) {
	var l payoutkit.List[payoutkit.Payout]
	_, err := c.call(ctx, http.MethodPost, "/v1/payouts/list", req, &l)
	return l, err
}

// AllPayouts iterates over every payout that matches req, newest first,
// reading page after page (of req.Limit payouts, 0 for the server's
// default) from req.Cursor on. It stops at the first error, which it yields
// with a zero payout.
func (c *Client) AllPayouts(ctx context.Context, req payoutkit.ListPayoutsRequest) iter.Seq2[payoutkit.Payout, error] {
	return all(func() (payoutkit.List[payoutkit.Payout], error) {
		l, err := c.ListPayouts(ctx, req)
		req.Cursor = l.NextCursor
		return l, err
	})
}

// ListOrders reads one page of the workspace's orders that match req,
// newest first, paged as ListPayouts is.
func (c *Client) ListOrders(ctx context.Context, req payoutkit.ListOrdersRequest) (payoutkit.List[payoutkit.Order], error) {
	var l payoutkit.List[payoutkit.Order]
	_, err := c.call(ctx, http.MethodPost, "/v1/orders/list", req, &l)
	return l, err
}

// AllOrders iterates over every order that matches req, newest first, as
// AllPayouts does.
func (c *Client) AllOrders(ctx context.Context, req payoutkit.ListOrdersRequest) iter.Seq2[payoutkit.Order, error] {
	return all(func() (payoutkit.List[payoutkit.Order], error) {
		l, err := c.ListOrders(ctx, req)
		req.Cursor = l.NextCursor
		return l, err
	})
}

// all yields the items of the pages next reads, until a page without a
// next cursor or an error.
func all[T any](next func() (payoutkit.List[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			page, err := next()
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range page.Items {
				if !yield(it, nil) {
					return
				}
			}
			if page.NextCursor == "" {
				return
			}
		}
	}
}

// Balance reads the workspace's balance.
func (c *Client) Balance(ctx context.Context) (payoutkit.Balance, error) {
	var b payoutkit.Balance
	_, err := c.call(ctx, http.MethodGet, "/v1/balance", nil, &b)
	return b, err
}

// Coins lists the payout coins: the ticker and network pairs a payout may use.
func (c *Client) Coins(ctx context.Context) ([]payoutkit.Coin, error) {
	var data struct {
		PayoutCoins []payoutkit.Coin `json:"payout_coins"`
	}
	_, err := c.call(ctx, http.MethodGet, "/v1/coins", nil, &data)
	return data.PayoutCoins, err
}

// CreateOrder creates a pending order. replayed is true when the server
// returned an order created earlier with the same order_id and parameters.
func (c *Client) CreateOrder(ctx context.Context, req payoutkit.CreateOrderRequest) (o payoutkit.Order, replayed bool, err error) {
	replayed, err = c.call(ctx, http.MethodPost, "/v1/orders", req, &o)
	return o, replayed, err
}

// Order looks an order up by its order_id.
func (c *Client) Order(ctx context.Context, orderID string) (payoutkit.Order, error) {
	var o payoutkit.Order
	_, err := c.call(ctx, http.MethodPost, "/v1/orders/info", map[string]string{"order_id": orderID}, &o)
	return o, err
}

// PayOrder marks an order paid (sandbox servers only), crediting its amount.
func (c *Client) PayOrder(ctx context.Context, orderID string) (payoutkit.Order, error) {
	var o payoutkit.Order
	_, err := c.call(ctx, http.MethodPost, "/v1/sandbox/orders/pay", map[string]string{"order_id": orderID}, &o)
	return o, err
}

// CompletePayout completes a submitted payout (sandbox servers only). An
// empty txid lets the server make one up.
func (c *Client) CompletePayout(ctx context.Context, payoutID, txid string) (payoutkit.Payout, error) {
	body := map[string]string{"payout_id": payoutID}
	if txid != "" {
		body["txid"] = txid
	}
	var p payoutkit.Payout
	_, err := c.call(ctx, http.MethodPost, "/v1/sandbox/payouts/complete", body, &p)
	return p, err
}

// FailPayout fails a submitted payout (sandbox servers only), crediting its
// amount back. An empty reason lets the server use its default.
func (c *Client) FailPayout(ctx context.Context, payoutID, reason string) (payoutkit.Payout, error) {
	body := map[string]string{"payout_id": payoutID}
	if reason != "" {
		body["reason"] = reason
	}
	var p payoutkit.Payout
	_, err := c.call(ctx, http.MethodPost, "/v1/sandbox/payouts/fail", body, &p)
	return p, err
}

// envelope is every API response.
type envelope struct {
	Code    *payoutkit.Code        `json:"code"`
	Message string                 `json:"message"`
	Data    json.RawMessage        `json:"data"`
	Errors  []payoutkit.FieldError `json:"errors"`
}

// ResponseError is a response that is not the API's envelope, such as an
// HTML error page of a proxy in front of the server.
type ResponseError struct {
	StatusCode int
	RequestID  string
	// Body is the beginning of the response body.
	Body string
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("payoutkit client: unexpected HTTP %d response (request id %q): %.200q", e.StatusCode, e.RequestID, e.Body)
}

// call sends one request and decodes the envelope's data into out. It
// returns whether the server marked the answer as a replay.
func (c *Client) call(ctx context.Context, method, path string, in, out any) (bool, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return false, fmt.Errorf("payoutkit client: encoding request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return false, fmt.Errorf("payoutkit client: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return false, fmt.Errorf("payoutkit client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return false, fmt.Errorf("payoutkit client: %s %s: reading response: %w", method, path, err)
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil || env.Code == nil {
		return false, &ResponseError{StatusCode: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id"), Body: string(raw[:min(len(raw), 512)])}
	}
	if *env.Code != 0 {
		return false, payoutkit.NewError(*env.Code, env.Message, env.Errors)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return false, fmt.Errorf("payoutkit client: %s %s: decoding data: %w", method, path, err)
	}
	return resp.Header.Get("Idempotent-Replayed") == "true", nil
}
