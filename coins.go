package payoutkit

import (
	"context"
	"errors"
	"fmt"

	"github.com/payoutkit/payoutkit/address"
	"github.com/payoutkit/payoutkit/internal/textcheck"
)

// Coin is one payout option: a ticker on a network. A payout names one, and
// its amount must lie between MinAmount (zero: DefaultMinAmount) and
// MaxAmount (zero: the constant MaxAmount).
type Coin struct {
	Ticker  string `json:"ticker"`
	Network string `json:"network"`
	Name    string `json:"name"`
	// Decimals is the asset's decimal places on chain, 0 to MaxDecimals,
	// and the most a payout's AssetAmount and NetworkFee may have.
	Decimals  int    `json:"decimals"`
	MinAmount Amount `json:"min_amount"`
	MaxAmount Amount `json:"max_amount"`
}

// DefaultMinAmount is 0.01 USD, the smallest amount there is.
const DefaultMinAmount Amount = 1

// MaxDecimals is the largest Coin.Decimals accepted.
const MaxDecimals = 30

// DefaultCoins returns the contract's default coin list, with no limits
// beyond the contract's own.
func DefaultCoins() []Coin {
	coins := []Coin{
		{Ticker: "BTC", Network: "BTC", Name: "Bitcoin", Decimals: 8},
		{Ticker: "LTC", Network: "LTC", Name: "Litecoin", Decimals: 8},
		{Ticker: "DOGE", Network: "DOGE", Name: "Dogecoin", Decimals: 8},
		{Ticker: "ETH", Network: "ETH", Name: "Ether", Decimals: 18},
		{Ticker: "USDT", Network: "ETH", Name: "Tether USD on Ethereum", Decimals: 6},
		{Ticker: "USDC", Network: "ETH", Name: "USD Coin on Ethereum", Decimals: 6},
		{Ticker: "BNB", Network: "BSC", Name: "BNB", Decimals: 18},
		{Ticker: "USDT", Network: "BSC", Name: "Tether USD on BNB Smart Chain", Decimals: 18},
		{Ticker: "POL", Network: "POLYGON", Name: "Polygon", Decimals: 18},
		{Ticker: "USDT", Network: "POLYGON", Name: "Tether USD on Polygon", Decimals: 6},
		{Ticker: "TRX", Network: "TRON", Name: "TRON", Decimals: 6},
		{Ticker: "USDT", Network: "TRON", Name: "Tether USD on TRON", Decimals: 6},
		{Ticker: "SOL", Network: "SOL", Name: "Solana", Decimals: 9},
		{Ticker: "USDC", Network: "SOL", Name: "USD Coin on Solana", Decimals: 6},
		{Ticker: "TON", Network: "TON", Name: "Toncoin", Decimals: 9},
		{Ticker: "USDT", Network: "TON", Name: "Tether USD on TON", Decimals: 6},
		{Ticker: "XRP", Network: "XRP", Name: "XRP", Decimals: 6},
	}
	for i := range coins {
		coins[i].MinAmount, coins[i].MaxAmount = DefaultMinAmount, MaxAmount
	}
	return coins
}

// Coins returns the payout coins offered to the workspace.
func (e *Engine) Coins(ctx context.Context, workspaceID string) ([]Coin, error) {
	return append([]Coin(nil), e.coins.list...), nil
}

// coinTable finds coins case-insensitively and knows each network's address rule.
type coinTable struct {
	list       []Coin
	byPair     map[string]Coin // "TICKER/NETWORK", upper-cased
	tickers    map[string]bool // upper-cased
	validators map[string]func(string) error
}

func newCoinTable(coins []Coin, extra map[string]func(string) error) (coinTable, error) {
	t := coinTable{
		list:       make([]Coin, 0, len(coins)),
		byPair:     make(map[string]Coin, len(coins)),
		tickers:    make(map[string]bool, len(coins)),
		validators: make(map[string]func(string) error),
	}
	for n, f := range extra {
		t.validators[textcheck.UpperASCII(n)] = f
	}
	var errs []error
	for _, c := range coins {
		net := textcheck.UpperASCII(c.Network)
		if c.Ticker == "" || c.Network == "" {
			errs = append(errs, fmt.Errorf("payoutkit: coin %+v needs a ticker and a network", c))
			continue
		}
		if c.MinAmount == 0 {
			c.MinAmount = DefaultMinAmount
		}
		if c.MaxAmount == 0 {
			c.MaxAmount = MaxAmount
		}
		switch {
		case c.Decimals < 0 || c.Decimals > MaxDecimals:
			errs = append(errs, fmt.Errorf("payoutkit: coin %s on %s: decimals must be between 0 and %d", c.Ticker, c.Network, MaxDecimals))
			continue
		case c.MinAmount < 0 || c.MinAmount > MaxAmount:
			errs = append(errs, fmt.Errorf("payoutkit: coin %s on %s: min_amount must be between 0.01 and %s", c.Ticker, c.Network, MaxAmount))
			continue
		case c.MaxAmount < 0 || c.MaxAmount > MaxAmount:
			errs = append(errs, fmt.Errorf("payoutkit: coin %s on %s: max_amount must be between 0.01 and %s", c.Ticker, c.Network, MaxAmount))
			continue
		case c.MinAmount > c.MaxAmount:
			errs = append(errs, fmt.Errorf("payoutkit: coin %s on %s: min_amount %s is above max_amount %s", c.Ticker, c.Network, c.MinAmount, c.MaxAmount))
			continue
		}
		if _, dup := t.byPair[textcheck.UpperASCII(c.Ticker)+"/"+net]; dup {
			errs = append(errs, fmt.Errorf("payoutkit: coin %s on %s is listed twice", c.Ticker, c.Network))
			continue
		}
		if _, ok := t.validators[net]; !ok {
			v, ok := address.For(net)
			if !ok {
				errs = append(errs, fmt.Errorf("payoutkit: no address validator for network %q (set Config.AddressValidators)", c.Network))
				continue
			}
			t.validators[net] = v
		}
		t.byPair[textcheck.UpperASCII(c.Ticker)+"/"+net] = c
		t.tickers[textcheck.UpperASCII(c.Ticker)] = true
		t.list = append(t.list, c)
	}
	return t, errors.Join(errs...)
}

// check validates asset, network and address together and returns the coin
// row, whose spelling the payout stores.
func (t coinTable) check(v *validation, asset, network, addr string) Coin {
	bad := len(v.fields)
	switch {
	case asset == "":
		v.add("asset", "is required")
	case !t.tickers[textcheck.UpperASCII(asset)]:
		v.add("asset", "is not a payout coin (see GET /v1/coins)")
	}
	if network == "" {
		v.add("network", "is required")
	}
	if addr == "" {
		v.add("address", "is required")
	}
	if len(v.fields) > bad {
		return Coin{}
	}
	c, ok := t.byPair[textcheck.UpperASCII(asset)+"/"+textcheck.UpperASCII(network)]
	if !ok {
		v.add("network", fmt.Sprintf("is not offered for asset %s (see GET /v1/coins)", textcheck.UpperASCII(asset)))
		return Coin{}
	}
	if err := t.validators[textcheck.UpperASCII(c.Network)](addr); err != nil {
		v.add("address", "is not a valid "+c.Network+" address")
	}
	return c
}

// network returns the spelling of the coins' network named name (matched
// case-insensitively) and its address rule.
func (t coinTable) network(name string) (string, func(string) error, bool) {
	for _, c := range t.list {
		if textcheck.UpperASCII(c.Network) == textcheck.UpperASCII(name) {
			return c.Network, t.validators[textcheck.UpperASCII(c.Network)], true
		}
	}
	return "", nil, false
}

// checkLimits refuses an amount outside the coin's limits, naming the limit:
// "amount must be at least 1.00 for USDT on TRON".
func checkLimits(v *validation, c Coin, amount Amount) {
	switch {
	case amount < c.MinAmount:
		v.add("amount", fmt.Sprintf("must be at least %s for %s on %s", c.MinAmount, c.Ticker, c.Network))
	case amount > c.MaxAmount:
		v.add("amount", fmt.Sprintf("must be at most %s for %s on %s", c.MaxAmount, c.Ticker, c.Network))
	}
}

// coin returns the row of a stored payout's asset and network.
func (t coinTable) coin(asset, network string) (Coin, bool) {
	c, ok := t.byPair[textcheck.UpperASCII(asset)+"/"+textcheck.UpperASCII(network)]
	return c, ok
}
