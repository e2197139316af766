// Package sandbox is the sandbox's payout rail: a payoutkit.Processor that
// moves no money, the fixed rate table it settles with, and Complete, which
// settles a payout by hand as it would (the /v1/sandbox/payouts/complete
// endpoint).
//
//	engine, err := payoutkit.New(store, &payoutkit.Config{
//		Processor: &sandbox.Processor{SettleAfter: 30 * time.Second},
//	})
package sandbox

import (
	"context"
	"errors"
	"time"

	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/random"
	"github.com/payoutkit/payoutkit/internal/textcheck"
)

// Processor is a processor for testing and demos: it moves no money. With
// SettleAfter zero, it accepts every payout at once and payouts stay
// submitted until settled by hand (Complete, Engine.CompletePayout,
// Engine.FailPayout). Otherwise it answers payoutkit.ErrNotDue until
// SettleAfter has passed since the payout was created, then completes the
// payout with a fake txid and the asset amount and network fee of the rate
// table (Completion). The delay lives in the payout's stored creation time,
// not in a timer, so a restart in the middle of it still settles the payout
// on time.
type Processor struct {
	// SettleAfter is how long after creation a payout completes. Defaults to
	// zero: never by itself.
	SettleAfter time.Duration
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

var _ payoutkit.Processor = (*Processor)(nil)

// Submit implements payoutkit.Processor.
func (s *Processor) Submit(ctx context.Context, sub payoutkit.Submission, settler payoutkit.Settler) error {
	p := sub.Payout
	if s.SettleAfter <= 0 {
		return nil
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	if due := p.CreatedAt.Add(s.SettleAfter); now().Before(due) {
		return &payoutkit.NotDueError{At: due}
	}
	c := Completion(p, sub.Coin, "sandbox-"+random.Base62(16))
	_, err := settler.CompletePayout(ctx, p.WorkspaceID, p.PayoutID, c)
	if errors.Is(err, payoutkit.ErrConflict) { // settled by hand meanwhile
		return nil
	}
	return err
}

// Rate is one asset's row of the sandbox rate table: its price in USD and
// the network fee the sandbox charges per payout, in the asset's units.
type Rate struct {
	Ticker string
	// USD is the price of one unit of the asset.
	USD decimal.Decimal
	// Fee is the network fee of one payout, in the asset's units.
	Fee decimal.Decimal
}

// rates is the fixed rate table of the sandbox. README.md prints it: keep
// the two the same.
var rates = []Rate{
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

// Rates returns the sandbox's fixed rate table, one row per ticker. A
// ticker's rate is the same on every network.
func Rates() []Rate { return append([]Rate(nil), rates...) }

// Completion is what the sandbox reports when it completes p: the txid,
// the USD amount converted at the rate table's price (rounded down to the
// coin's Decimals places, so that no more is sent than was debited) and the
// table's network fee (also at most Decimals places). A ticker outside the
// table gets neither: both stay null.
func Completion(p payoutkit.Payout, coin payoutkit.Coin, txid string) payoutkit.Completion {
	c := payoutkit.Completion{TxID: txid}
	places := int32(max(0, min(coin.Decimals, payoutkit.MaxDecimals)))
	for _, r := range rates {
		if r.Ticker != textcheck.UpperASCII(p.Asset) {
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

// Engine is what Complete needs of the engine: *payoutkit.Engine and every
// payoutkit.Service are one.
type Engine interface {
	Payout(ctx context.Context, workspaceID, payoutID string) (payoutkit.Payout, error)
	Coins(ctx context.Context, workspaceID string) ([]payoutkit.Coin, error)
	CompletePayout(ctx context.Context, workspaceID, payoutID string, c payoutkit.Completion) (payoutkit.Payout, error)
}

var (
	_ Engine = (*payoutkit.Engine)(nil)
	_ Engine = payoutkit.Service(nil)
)

// Complete completes a submitted payout by hand as the sandbox processor
// would: with txid and the rate table's asset amount and network fee
// (Completion). The /v1/sandbox/payouts/complete endpoint calls it. A
// missing or invalid txid is a 40000 naming the field, before the payout is
// read; other errors are those of e's Payout and CompletePayout.
func Complete(ctx context.Context, e Engine, workspaceID, payoutID, txid string) (payoutkit.Payout, error) {
	if problem := textcheck.Problem(txid, true, textcheck.MaxText); problem != "" {
		return payoutkit.Payout{}, payoutkit.NewError(payoutkit.CodeInvalidInput, "", []payoutkit.FieldError{{Field: "txid", Message: problem}})
	}
	p, err := e.Payout(ctx, workspaceID, payoutID)
	if err != nil {
		return payoutkit.Payout{}, err
	}
	coins, err := e.Coins(ctx, workspaceID)
	if err != nil {
		return payoutkit.Payout{}, err
	}
	var coin payoutkit.Coin // the zero Coin when the row is no longer configured
	for _, c := range coins {
		if textcheck.UpperASCII(c.Ticker) == textcheck.UpperASCII(p.Asset) && textcheck.UpperASCII(c.Network) == textcheck.UpperASCII(p.Network) {
			coin = c
			break
		}
	}
	return e.CompletePayout(ctx, workspaceID, payoutID, Completion(p, coin, txid))
}
