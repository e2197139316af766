package bitcoin

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit"
)

func TestSatoshis(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	q := func(price string, age time.Duration) Quote {
		return Quote{Price: decimal.RequireFromString(price), At: now.Add(-age)}
	}
	for _, c := range []struct {
		usd   payoutkit.Amount
		price string
		want  int64
	}{
		{100_00, "50000", 200_000},        // 100 USD at 50,000: 0.002 BTC
		{1, "65000", 15},                  // one cent: 15.38... rounded down
		{25_00, "3", 833_333_333},         // 8.33333333(3) BTC
		{1_000_000_000_00, "0.01", -1},    // more bitcoin than there is
		{33_33, "99999.99999999", 33_330}, // 0.000333300000003... BTC
		{10_00, "100000000", 10},          // a satoshi is a cent
		{9_99, "100000000", 9},
	} {
		got, err := Satoshis(c.usd, q(c.price, time.Minute), now, 5*time.Minute)
		if c.want < 0 {
			if err == nil {
				t.Errorf("%s at %s: %d, want an error", c.usd, c.price, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s at %s: %d %v, want %d", c.usd, c.price, got, err, c.want)
		}
	}
	if _, err := Satoshis(100, q("50000", 6*time.Minute), now, 5*time.Minute); !errors.Is(err, ErrStaleQuote) {
		t.Fatalf("an old quote: %v", err)
	}
	if _, err := Satoshis(100, q("50000", -2*time.Minute), now, 5*time.Minute); !errors.Is(err, ErrStaleQuote) {
		t.Fatalf("a quote from the future: %v", err)
	}
	if _, err := Satoshis(100, q("0", 0), now, 5*time.Minute); !errors.Is(err, ErrBadQuote) {
		t.Fatalf("a zero price: %v", err)
	}
	if got := BTC(123_456_789).String(); got != "1.23456789" {
		t.Fatalf("BTC %s", got)
	}
}

func TestFixedRates(t *testing.T) {
	r := FixedRates{"BTC": decimal.NewFromInt(60000)}
	q, err := r.Quote(context.Background(), "btc")
	if err != nil || !q.Price.Equal(decimal.NewFromInt(60000)) || time.Since(q.At) > time.Minute || q.Source != "fixed" {
		t.Fatalf("%+v %v", q, err)
	}
	if _, err := r.Quote(context.Background(), "ETH"); err == nil {
		t.Fatal("a price for ETH")
	}
}
