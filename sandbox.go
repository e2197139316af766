package payoutkit

import (
	"context"

	"github.com/shopspring/decimal"
)

// SandboxRate is one asset's row of the sandbox rate table: its price in
// USD and the network fee the sandbox charges per payout, in the asset's
// units.
type SandboxRate struct {
	Ticker string
	// USD is the price of one unit of the asset.
	USD decimal.Decimal
	// Fee is the network fee of one payout, in the asset's units.
	Fee decimal.Decimal
}

// sandboxRates is the fixed rate table of the sandbox. README.md prints it:
// keep the two the same.
var sandboxRates = []SandboxRate{
	{"BTC", decimal.RequireFromString("60000.00"), decimal.RequireFromString("0.00002")},
	{"LTC", decimal.RequireFromString("80.00"), decimal.RequireFromString("0.0001")},
	{"DOGE", decimal.RequireFromString("0.10"), decimal.RequireFromString("1")},
	{"ETH", decimal.RequireFromString("3000.00"), decimal.RequireFromString("0.0005")},
	{"BNB", decimal.RequireFromString("600.00"), decimal.RequireFromString("0.0002")},
	{"POL", decimal.RequireFromString("0.50"), decimal.RequireFromString("0.01")},
	{"TRX", decimal.RequireFromString("0.25"), decimal.RequireFromString("1")},
	{"SOL", decimal.RequireFromString("150.00"), decimal.RequireFromString("0.000005")},
	{"TON", decimal.RequireFromString("5.00"), decimal.RequireFromString("0.01")},
	{"XRP", decimal.RequireFromString("0.50"), decimal.RequireFromString("0.00001")},
	{"USDT", decimal.RequireFromString("1.00"), decimal.RequireFromString("1")},
	{"USDC", decimal.RequireFromString("1.00"), decimal.RequireFromString("1")},
}

// SandboxRates returns the sandbox's fixed rate table, one row per ticker.
// A ticker's rate is the same on every network.
func SandboxRates() []SandboxRate { return append([]SandboxRate(nil), sandboxRates...) }

// SandboxCompletion is what the sandbox reports when it completes p: the
// txid, the USD amount converted at the rate table's price (rounded down to
// the coin's Decimals places, so that no more is sent than was debited) and
// the table's network fee (also at most Decimals places). A ticker outside
// the table gets neither: both stay null.
func SandboxCompletion(p Payout, coin Coin, txid string) Completion {
	c := Completion{TxID: txid}
	places := int32(max(0, min(coin.Decimals, MaxDecimals)))
	for _, r := range sandboxRates {
		if r.Ticker != upperASCII(p.Asset) {
			continue
		}
		usd := decimal.New(int64(p.Amount), -2)
		q, _ := usd.QuoRem(r.USD, places) // truncates toward zero
		if q.Sign() > 0 {
			c.AssetAmount = decimal.NullDecimal{Decimal: q, Valid: true}
		}
		c.NetworkFee = decimal.NullDecimal{Decimal: r.Fee.Truncate(places), Valid: true}
		break
	}
	return c
}

// SandboxCompletePayout completes a submitted payout by hand as the sandbox
// processor would: with txid and the rate table's asset amount and network
// fee (SandboxCompletion). The /v1/sandbox/payouts/complete endpoint calls
// it. Errors are CompletePayout's.
func (e *Engine) SandboxCompletePayout(ctx context.Context, workspaceID, payoutID, txid string) (Payout, error) {
	var v validation
	checkText(&v, "txid", txid, true, maxText)
	if err := v.err(); err != nil {
		return Payout{}, err
	}
	p, err := e.Payout(ctx, workspaceID, payoutID)
	if err != nil {
		return Payout{}, err
	}
	coin, _ := e.coins.coin(p.Asset, p.Network)
	return e.CompletePayout(ctx, workspaceID, payoutID, SandboxCompletion(p, coin, txid))
}
