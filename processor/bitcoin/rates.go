package bitcoin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit"
)

// Quote is a USD price of BTC and when it was taken.
type Quote struct {
	// Price is the USD price of one BTC, greater than 0.
	Price decimal.Decimal
	// At is when the price was observed (by the feed, not when it was
	// asked for).
	At time.Time
	// Source names where the price came from, stored with the transaction.
	Source string
}

// Rates prices BTC in USD, to turn a payout's USD amount into satoshis. A
// live price feed implements it (an exchange's ticker, an index such as
// a volume-weighted average across exchanges); FixedRates is a fixed
// table for tests and sandboxes.
type Rates interface {
	// Quote is the latest USD price of ticker ("BTC").
	Quote(ctx context.Context, ticker string) (Quote, error)
}

// FixedRates is a fixed table of USD prices by upper-case ticker, quoted as
// of the moment it is asked: a fixed price never ages.
type FixedRates map[string]decimal.Decimal

// Quote implements Rates.
func (r FixedRates) Quote(_ context.Context, ticker string) (Quote, error) {
	t := strings.ToUpper(ticker)
	v, ok := r[t]
	if !ok || v.Sign() <= 0 {
		return Quote{}, fmt.Errorf("bitcoin: no USD price for %s", t)
	}
	return Quote{Price: v, At: time.Now(), Source: "fixed"}, nil
}

// Errors of Satoshis.
var (
	// ErrStaleQuote is a quote older than the configured maximum age (or
	// from the future, beyond a minute of clock skew).
	ErrStaleQuote = errors.New("bitcoin: the USD quote is too old")
	// ErrBadQuote is a quote whose price is not positive.
	ErrBadQuote = errors.New("bitcoin: the USD quote's price is not positive")
)

// SatoshisPerBTC is one bitcoin in satoshis.
const SatoshisPerBTC = 100_000_000

// Satoshis converts a USD amount into satoshis at q's price, rounded down:
// never more is sent than was debited. A quote older than maxAge at now,
// or more than a minute ahead of now, is refused with ErrStaleQuote.
func Satoshis(usd payoutkit.Amount, q Quote, now time.Time, maxAge time.Duration) (int64, error) {
	if q.Price.Sign() <= 0 {
		return 0, ErrBadQuote
	}
	if age := now.Sub(q.At); age > maxAge || age < -time.Minute {
		return 0, fmt.Errorf("%w: quoted at %s, %s ago, at most %s", ErrStaleQuote, q.At.UTC().Format(time.RFC3339), age.Round(time.Second), maxAge)
	}
	// cents * 10^6 / price = USD * 10^8 / price, in satoshis.
	// QuoRem at precision 0 truncates exactly (Div would round at its
	// 16th decimal first, which could round up to the next satoshi).
	sats, _ := decimal.New(int64(usd), 6).QuoRem(q.Price, 0)
	if usd < 0 || sats.Cmp(decimal.NewFromInt(MaxSatoshis)) > 0 {
		return 0, fmt.Errorf("bitcoin: %s USD at %s is more bitcoin than there is", usd, q.Price)
	}
	return sats.IntPart(), nil
}

// BTC is satoshis as a BTC amount (8 decimals), for a payout's
// asset_amount and network_fee.
func BTC(sats int64) decimal.Decimal { return decimal.New(sats, -8) }
