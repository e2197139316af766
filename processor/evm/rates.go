package evm

import (
	"context"
	"fmt"
	"strings"

	"github.com/shopspring/decimal"
)

// Rates prices assets in USD, to turn a payout's USD amount into the
// asset's. A live price feed implements it; FixedRates is a fixed table.
type Rates interface {
	// USDPrice is the price of one unit of ticker in USD, greater than 0.
	USDPrice(ctx context.Context, ticker string) (decimal.Decimal, error)
}

// FixedRates is a fixed table of USD prices by upper-case ticker. USDT,
// USDC and DAI are 1 unless the table says otherwise.
type FixedRates map[string]decimal.Decimal

// USDPrice implements Rates.
func (r FixedRates) USDPrice(_ context.Context, ticker string) (decimal.Decimal, error) {
	t := strings.ToUpper(ticker)
	if v, ok := r[t]; ok && v.Sign() > 0 {
		return v, nil
	}
	switch t {
	case "USDT", "USDC", "DAI":
		return decimal.NewFromInt(1), nil
	}
	return decimal.Decimal{}, fmt.Errorf("evm: no USD price for %s", t)
}

// assetAmount converts a USD amount in cents into the asset at price,
// rounded down to places: never more is sent than was debited.
func assetAmount(cents int64, price decimal.Decimal, places int32) decimal.Decimal {
	q, _ := decimal.New(cents, -2).QuoRem(price, places)
	return q
}

func decimalFromString(s string) (decimal.NullDecimal, error) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.NullDecimal{}, fmt.Errorf("evm: stored amount %q: %w", s, err)
	}
	return decimal.NullDecimal{Decimal: d, Valid: true}, nil
}
