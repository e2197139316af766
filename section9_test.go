package payoutkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

const tronAddress = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"

// fundedWorkspace creates a workspace with amount available.
func fundedWorkspace(t *testing.T, eng *payoutkit.Engine, amount string) string {
	t.Helper()
	ctx := context.Background()
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	ws := nw.Workspace.ID
	if _, _, err := eng.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "fund", Amount: amount}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.MarkOrderPaid(ctx, ws, "fund"); err != nil {
		t.Fatal(err)
	}
	return ws
}

func TestCoinConfig(t *testing.T) {
	for _, c := range payoutkit.DefaultCoins() {
		if c.MinAmount != payoutkit.DefaultMinAmount || c.MaxAmount != payoutkit.MaxAmount || c.Decimals <= 0 {
			t.Errorf("default coin %+v", c)
		}
	}
	eng := newEngine(t, &payoutkit.Config{Coins: []payoutkit.Coin{{Ticker: "USDT", Network: "TRON", Decimals: 6}}})
	coins, _ := eng.Coins(context.Background(), "ws")
	if len(coins) != 1 || coins[0].MinAmount != 1 || coins[0].MaxAmount != payoutkit.MaxAmount {
		t.Fatalf("zero limits are not the defaults: %+v", coins)
	}
	b, _ := json.Marshal(coins[0])
	if string(b) != `{"ticker":"USDT","network":"TRON","name":"","decimals":6,"min_amount":"0.01","max_amount":"1000000000.00"}` {
		t.Fatalf("coin JSON %s", b)
	}
	for name, c := range map[string]payoutkit.Coin{
		"min above max":      {Ticker: "USDT", Network: "TRON", MinAmount: 5_00, MaxAmount: 4_00},
		"negative min":       {Ticker: "USDT", Network: "TRON", MinAmount: -1},
		"max over the limit": {Ticker: "USDT", Network: "TRON", MaxAmount: payoutkit.MaxAmount + 1},
		"decimals":           {Ticker: "USDT", Network: "TRON", Decimals: 31},
		"negative decimals":  {Ticker: "USDT", Network: "TRON", Decimals: -1},
	} {
		_, err := payoutkit.New(memstore.New(), &payoutkit.Config{Coins: []payoutkit.Coin{c}})
		if err == nil || !strings.Contains(err.Error(), "USDT on TRON") {
			t.Errorf("%s: %v", name, err)
		}
	}
	dup := []payoutkit.Coin{{Ticker: "USDT", Network: "TRON"}, {Ticker: "usdt", Network: "tron"}}
	if _, err := payoutkit.New(memstore.New(), &payoutkit.Config{Coins: dup}); err == nil {
		t.Error("a coin listed twice was accepted")
	}
}

func TestCoinLimits(t *testing.T) {
	coins := payoutkit.DefaultCoins()
	for i := range coins {
		if coins[i].Ticker == "USDT" && coins[i].Network == "TRON" {
			coins[i].MinAmount, coins[i].MaxAmount = 1_00, 250_00
		}
	}
	eng := newEngine(t, &payoutkit.Config{Coins: coins})
	ws := fundedWorkspace(t, eng, "1000.00")
	ctx := context.Background()
	req := func(id, amount string) payoutkit.CreatePayoutRequest {
		return payoutkit.CreatePayoutRequest{PayoutID: id, Amount: amount, Asset: "usdt", Network: "Tron", Address: tronAddress, PayerID: "c"}
	}
	for amount, msg := range map[string]string{
		"0.99":   "amount must be at least 1.00 for USDT on TRON",
		"0.01":   "amount must be at least 1.00 for USDT on TRON",
		"250.01": "amount must be at most 250.00 for USDT on TRON",
		"999":    "amount must be at most 250.00 for USDT on TRON",
	} {
		_, _, err := eng.CreatePayout(ctx, ws, req("p-"+amount, amount))
		var perr *payoutkit.Error
		if !errors.As(err, &perr) || !errors.Is(err, payoutkit.ErrInvalidInput) || err.Error() != msg ||
			len(perr.Fields) != 1 || perr.Fields[0].Field != "amount" {
			t.Errorf("%s: %v", amount, err)
		}
	}
	// The limits are inclusive; another field's error is reported beside it.
	for _, amount := range []string{"1", "250.00"} {
		if _, _, err := eng.CreatePayout(ctx, ws, req("ok-"+amount, amount)); err != nil {
			t.Errorf("%s: %v", amount, err)
		}
	}
	bad := req("p-x", "0.50")
	bad.PayerID = ""
	if _, _, err := eng.CreatePayout(ctx, ws, bad); err == nil || err.Error() != "amount must be at least 1.00 for USDT on TRON; payer_id is required" {
		t.Errorf("two errors: %v", err)
	}
	b, _ := eng.Balance(ctx, ws)
	if b.Available != 1000_00-251_00 || b.InProgress != 251_00 {
		t.Fatalf("refused payouts moved money: %+v", b)
	}
}

func TestPayoutJSONSettlement(t *testing.T) {
	p := payoutkit.Payout{PayoutID: "p", Status: payoutkit.PayoutCompleted, Amount: 1_00,
		AssetAmount: decimal.NewNullDecimal(decimal.RequireFromString("0.00000001")),
		NetworkFee:  decimal.NewNullDecimal(decimal.New(5, -4)),
	}
	b, err := json.Marshal(p)
	if err != nil || !strings.Contains(string(b), `"asset_amount":"0.00000001","network_fee":"0.0005"`) {
		t.Fatalf("%s, %v", b, err)
	}
	var back payoutkit.Payout
	if err := json.Unmarshal(b, &back); err != nil || !back.AssetAmount.Decimal.Equal(p.AssetAmount.Decimal) || !back.NetworkFee.Valid {
		t.Fatalf("%+v, %v", back, err)
	}
	b, _ = json.Marshal(payoutkit.Payout{})
	if !strings.Contains(string(b), `"asset_amount":null,"network_fee":null`) {
		t.Fatalf("unset: %s", b)
	}
	for _, bad := range []string{`"-1"`, `"1e5"`, `" 1"`, `1.5`, `"1."`, `""`} {
		if err := json.Unmarshal([]byte(`{"asset_amount":`+bad+`}`), &back); err == nil {
			t.Errorf("asset_amount %s was read", bad)
		}
	}
}

func TestListRequestValidation(t *testing.T) {
	eng := newEngine(t, nil)
	ws := fundedWorkspace(t, eng, "1.00")
	ctx := context.Background()
	for _, c := range []struct {
		field string
		req   payoutkit.ListPayoutsRequest
	}{
		{"status", payoutkit.ListPayoutsRequest{Status: "paid"}},
		{"limit", payoutkit.ListPayoutsRequest{Limit: 501}},
		{"limit", payoutkit.ListPayoutsRequest{Limit: -1}},
		{"payer_id", payoutkit.ListPayoutsRequest{PayerID: "a\x00"}},
		{"cursor", payoutkit.ListPayoutsRequest{Cursor: "nope"}},
	} {
		_, err := eng.ListPayouts(ctx, ws, c.req)
		var perr *payoutkit.Error
		if !errors.Is(err, payoutkit.ErrInvalidInput) || !errors.As(err, &perr) || len(perr.Fields) != 1 || perr.Fields[0].Field != c.field {
			t.Errorf("%+v: %v", c.req, err)
		}
	}
	_, err := eng.ListOrders(ctx, ws, payoutkit.ListOrdersRequest{Status: "failed"})
	if !errors.Is(err, payoutkit.ErrInvalidInput) {
		t.Errorf("orders status: %v", err)
	}
	l, err := eng.ListPayouts(ctx, ws, payoutkit.ListPayoutsRequest{})
	if err != nil || l.Items == nil || len(l.Items) != 0 || l.NextCursor != "" {
		t.Fatalf("empty list: %+v, %v", l, err)
	}
	b, _ := json.Marshal(l)
	if string(b) != `{"items":[],"next_cursor":null}` {
		t.Fatalf("empty list JSON %s", b)
	}
}
