package payoutkit

import (
	"context"
	"errors"
	"fmt"

	"github.com/payoutkit/payoutkit/address"
)

// Coin is one payout option: a ticker on a network. A payout's asset and
// network must name one row of the coin list.
type Coin struct {
	Ticker  string `json:"ticker"`
	Network string `json:"network"`
	Name    string `json:"name"`
}

// DefaultCoins returns the contract's default payout coin list.
func DefaultCoins() []Coin {
	return []Coin{
		{"BTC", "BTC", "Bitcoin"},
		{"LTC", "LTC", "Litecoin"},
		{"DOGE", "DOGE", "Dogecoin"},
		{"ETH", "ETH", "Ether"},
		{"USDT", "ETH", "Tether USD on Ethereum"},
		{"USDC", "ETH", "USD Coin on Ethereum"},
		{"BNB", "BSC", "BNB"},
		{"USDT", "BSC", "Tether USD on BNB Smart Chain"},
		{"POL", "POLYGON", "Polygon"},
		{"USDT", "POLYGON", "Tether USD on Polygon"},
		{"TRX", "TRON", "TRON"},
		{"USDT", "TRON", "Tether USD on TRON"},
		{"SOL", "SOL", "Solana"},
		{"USDC", "SOL", "USD Coin on Solana"},
		{"TON", "TON", "Toncoin"},
		{"USDT", "TON", "Tether USD on TON"},
		{"XRP", "XRP", "XRP"},
	}
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
		list:       append([]Coin(nil), coins...),
		byPair:     make(map[string]Coin, len(coins)),
		tickers:    make(map[string]bool, len(coins)),
		validators: make(map[string]func(string) error),
	}
	for n, f := range extra {
		t.validators[upperASCII(n)] = f
	}
	var errs []error
	for _, c := range coins {
		net := upperASCII(c.Network)
		if c.Ticker == "" || c.Network == "" {
			errs = append(errs, fmt.Errorf("payoutkit: coin %+v needs a ticker and a network", c))
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
		t.byPair[upperASCII(c.Ticker)+"/"+net] = c
		t.tickers[upperASCII(c.Ticker)] = true
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
	case !t.tickers[upperASCII(asset)]:
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
	c, ok := t.byPair[upperASCII(asset)+"/"+upperASCII(network)]
	if !ok {
		v.add("network", fmt.Sprintf("is not offered for asset %s (see GET /v1/coins)", upperASCII(asset)))
		return Coin{}
	}
	if err := t.validators[upperASCII(c.Network)](addr); err != nil {
		v.add("address", "is not a valid "+c.Network+" address")
	}
	return c
}

// upperASCII upper-cases the ASCII letters of s and nothing else: tickers
// and networks match case-insensitively in ASCII only, so that no Unicode
// look-alike ("Uſdt", whose ſ folds to s) names a coin.
func upperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
