package httpserver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/httpserver"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// BenchmarkAPI: what one request costs above the store, through a real
// listener with keep-alive clients: routing, authentication, the body's
// parsing, the engine, the JSON answer and the request's log line (JSON,
// written to a discarding writer, as a server logs to a pipe). The store is
// memstore, so that the figures are the HTTP layer's and the engine's own;
// examples/load measures the whole server on a real database.
//
//	go test -run XXX -bench API -benchmem ./httpserver
func BenchmarkAPI(b *testing.B) {
	ctx := context.Background()
	store := memstore.New()
	engine, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	nw, err := engine.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	ws := nw.Workspace.ID
	o, _, err := engine.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "fund", Amount: "100000000.00"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := engine.MarkOrderPaid(ctx, ws, o.OrderID); err != nil {
		b.Fatal(err)
	}
	if _, _, err := engine.CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{PayoutID: "po-known", Amount: "1.00", Asset: "USDT", Network: "TRON", Address: tronAddr, PayerID: "p"}); err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	srv := httptest.NewServer(httpserver.New(engine, httpserver.Options{Logger: log}))
	defer srv.Close()
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	hc := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()

	var seq atomic.Int64
	for _, c := range []struct {
		name, method, path string
		body               func() []byte
	}{
		{"balance", "GET", "/v1/balance", nil},
		{"payout-info", "POST", "/v1/payouts/info", func() []byte { return []byte(`{"payout_id":"po-known"}`) }},
		{"create-payout", "POST", "/v1/payouts", func() []byte {
			return fmt.Appendf(nil, `{"payout_id":"po-%d","amount":"1.00","asset":"USDT","network":"TRON","address":%q,"payer_id":"payer-%d"}`,
				seq.Add(1), tronAddr, seq.Load()%1000)
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					var body io.Reader
					if c.body != nil {
						body = bytes.NewReader(c.body())
					}
					req, err := http.NewRequest(c.method, srv.URL+c.path, body)
					if err != nil {
						b.Fatal(err)
					}
					req.Header.Set("Authorization", "Bearer "+nw.APIKey.Key)
					resp, err := hc.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					answer, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if !bytes.HasPrefix(answer, []byte(`{"code":0,`)) {
						b.Fatalf("%s %s: %s", c.method, c.path, answer)
					}
				}
			})
		})
	}
}
