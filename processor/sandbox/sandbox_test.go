package sandbox_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/processortest"
	"github.com/payoutkit/payoutkit/processor/sandbox"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

const ethAddress = "0x52908400098527886E0F7030069857D2E4169EE7"

// fundedEngine returns an engine on a clock fixed at now, and a workspace
// with amount available.
func fundedEngine(t *testing.T, store payoutkit.Store, now time.Time, amount string) (*payoutkit.Engine, string) {
	t.Helper()
	return processortest.FundedEngine(t, store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Now: func() time.Time { return now }}, "Acme", amount)
}

func str(d decimal.NullDecimal) string {
	if !d.Valid {
		return "null"
	}
	return d.Decimal.String()
}

func TestCompletion(t *testing.T) {
	coin := func(ticker, network string) payoutkit.Coin {
		for _, c := range payoutkit.DefaultCoins() {
			if c.Ticker == ticker && c.Network == network {
				return c
			}
		}
		t.Fatalf("no %s on %s", ticker, network)
		return payoutkit.Coin{}
	}
	for _, c := range []struct {
		coin       payoutkit.Coin
		amount     payoutkit.Amount
		asset, fee string
	}{
		{coin("USDT", "TRON"), 25_00, "25", "1"},
		{coin("USDC", "SOL"), 10_05, "10.05", "1"},
		{coin("BTC", "BTC"), 100_00, "0.00166666", "0.00002"}, // 0.0016666… rounded down to 8 places
		{coin("ETH", "ETH"), 10_00, "0.003333333333333333", "0.0005"},
		{coin("TRX", "TRON"), 1_00, "4", "1"},
		{coin("DOGE", "DOGE"), 0_01, "0.1", "1"},
		{coin("XRP", "XRP"), 1_00, "2", "0.00001"},
		{coin("BTC", "BTC"), 0_01, "0.00000016", "0.00002"},
		{payoutkit.Coin{Ticker: "BTC", Network: "BTC", Decimals: 2}, 1_00, "null", "0"}, // rounds to nothing
		{payoutkit.Coin{Ticker: "XYZ", Network: "BTC", Decimals: 8}, 1_00, "null", "null"},
	} {
		p := payoutkit.Payout{Asset: c.coin.Ticker, Network: c.coin.Network, Amount: c.amount}
		got := sandbox.Completion(p, c.coin, "tx")
		if got.TxID != "tx" || str(got.AssetAmount) != c.asset || str(got.NetworkFee) != c.fee {
			t.Errorf("%s %s on %s: %s, %s; want %s, %s", c.amount, c.coin.Ticker, c.coin.Network, str(got.AssetAmount), str(got.NetworkFee), c.asset, c.fee)
		}
	}
	if len(sandbox.Rates()) != 12 {
		t.Errorf("the rate table has %d rows; the README prints 12", len(sandbox.Rates()))
	}
}

// The processor completes a payout with the rate table's amounts once
// SettleAfter has passed since its creation, and the payout.completed event
// carries them; before, the payout is not due.
func TestProcessorReportsSettlement(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	store := memstore.New()
	eng, ws := fundedEngine(t, store, now, "100.00")
	ctx := context.Background()
	p, _, err := eng.CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{
		PayoutID: "po-1", Amount: "30.00", Asset: "ETH", Network: "ETH", Address: ethAddress, PayerID: "c",
	})
	if err != nil {
		t.Fatal(err)
	}
	coins, _ := eng.Coins(ctx, ws)
	sub := payoutkit.Submission{Payout: p, IdempotencyKey: payoutkit.IdempotencyKey(ws, p.PayoutID)}
	for _, c := range coins {
		if c.Ticker == "ETH" && c.Network == "ETH" {
			sub.Coin = c
		}
	}
	early := &sandbox.Processor{SettleAfter: time.Minute, Now: func() time.Time { return now.Add(59 * time.Second) }}
	var nd *payoutkit.NotDueError
	if err := early.Submit(ctx, sub, eng); !errors.As(err, &nd) || !nd.At.Equal(now.Add(time.Minute)) {
		t.Fatalf("before SettleAfter: %v; want not due until a minute after creation", err)
	}
	rail := &sandbox.Processor{SettleAfter: time.Minute, Now: func() time.Time { return now.Add(time.Hour) }}
	if err := rail.Submit(ctx, sub, eng); err != nil {
		t.Fatal(err)
	}
	p, err = eng.Payout(ctx, ws, "po-1")
	if err != nil || p.Status != payoutkit.PayoutCompleted || !strings.HasPrefix(p.TxID, "sandbox-") || str(p.AssetAmount) != "0.01" || str(p.NetworkFee) != "0.0005" {
		t.Fatalf("settled: %+v, %v", p, err)
	}
	evs, err := store.SubjectEvents(ctx, ws, "payout:po-1")
	if err != nil || len(evs) != 2 || !strings.Contains(string(evs[1].Body), `"asset_amount":"0.01","network_fee":"0.0005"`) {
		t.Fatalf("events %v, %v", evs, err)
	}
	if err := rail.Submit(ctx, sub, eng); err != nil { // settled already: nothing to do
		t.Fatalf("a second Submit: %v", err)
	}
	if err := (&sandbox.Processor{}).Submit(ctx, sub, eng); err != nil {
		t.Fatalf("without SettleAfter: %v", err)
	}
}

// Complete checks the txid as CompletePayout does, before it reads the
// payout, then completes the payout with the rate table's amounts.
func TestComplete(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	eng, ws := fundedEngine(t, memstore.New(), now, "100.00")
	ctx := context.Background()
	for _, txid := range []string{"", "tab\there", strings.Repeat("x", 129), "bad \xff", "rtl \u202e"} {
		_, got := sandbox.Complete(ctx, eng, ws, "po-nope", txid)
		_, want := eng.CompletePayout(ctx, ws, "po-nope", payoutkit.Completion{TxID: txid})
		if payoutkit.CodeOf(got) != payoutkit.CodeInvalidInput || !errors.Is(got, payoutkit.ErrInvalidInput) || !reflect.DeepEqual(got, want) {
			t.Errorf("txid %q: %#v; want %#v", txid, got, want)
		}
	}
	if _, err := sandbox.Complete(ctx, eng, ws, "po-nope", "0xabc"); !errors.Is(err, payoutkit.ErrNotFound) {
		t.Fatalf("an unknown payout: %v", err)
	}
	if _, _, err := eng.CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{
		PayoutID: "po-1", Amount: "30.00", Asset: "eth", Network: "eth", Address: ethAddress, PayerID: "c",
	}); err != nil {
		t.Fatal(err)
	}
	p, err := sandbox.Complete(ctx, eng, ws, "po-1", "0xabc")
	if err != nil || p.Status != payoutkit.PayoutCompleted || p.TxID != "0xabc" || str(p.AssetAmount) != "0.01" || str(p.NetworkFee) != "0.0005" {
		t.Fatalf("completed: %+v, %v", p, err)
	}
	if _, err := sandbox.Complete(ctx, eng, ws, "po-1", "0xabc"); !errors.Is(err, payoutkit.ErrConflict) {
		t.Fatalf("completing twice: %v", err)
	}
}
