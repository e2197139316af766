package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/jsonstrict"
)

// coinFileRow is one row of a -coins file. Every member but min_amount and
// max_amount is required; amounts are USD strings as the API writes them.
type coinFileRow struct {
	Ticker    *string `json:"ticker"`
	Network   *string `json:"network"`
	Name      *string `json:"name"`
	Decimals  *int    `json:"decimals"`
	MinAmount *string `json:"min_amount"`
	MaxAmount *string `json:"max_amount"`
}

// maxCoinsFile bounds a -coins file.
const maxCoinsFile = 1 << 20

// loadCoins reads the -coins file at path: a JSON array of coin rows,
//
//	[{"ticker": "USDT", "network": "TRON", "name": "Tether USD on TRON",
//	  "decimals": 6, "min_amount": "1.00", "max_amount": "50000.00"}]
//
// which replaces the default coin list. min_amount defaults to 0.01 and
// max_amount to 1000000000.00. Unknown members, a missing one, an empty
// list or a malformed amount are errors, so that a typo never passes for
// a limit. An empty path returns nil: the default list. payoutkit.New
// checks the rest (a network without an address rule, min above max, a row
// listed twice).
func loadCoins(path string) ([]payoutkit.Coin, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("-coins: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCoinsFile+1))
	if err != nil {
		return nil, usagef("-coins: %v", err)
	}
	if len(data) > maxCoinsFile {
		return nil, usagef("-coins: %s is over %d bytes", path, maxCoinsFile)
	}
	coins, err := parseCoins(data)
	if err != nil {
		return nil, usagef("-coins %s: %v", path, err)
	}
	return coins, nil
}

// parseCoins decodes a -coins file's content.
func parseCoins(data []byte) ([]payoutkit.Coin, error) {
	var rows []coinFileRow
	switch err := jsonstrict.Decode(data, &rows); {
	case errors.Is(err, jsonstrict.ErrTrailing):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("not a JSON array of coin rows: %w", err)
	}
	if len(rows) == 0 {
		return nil, errors.New("the list is empty: a server without coins could pay nothing out")
	}
	coins := make([]payoutkit.Coin, len(rows))
	for i, r := range rows {
		at := fmt.Sprintf("row %d", i+1)
		switch {
		case r.Ticker == nil || *r.Ticker == "":
			return nil, fmt.Errorf("%s: ticker is required", at)
		case r.Network == nil || *r.Network == "":
			return nil, fmt.Errorf("%s: network is required", at)
		case r.Name == nil:
			return nil, fmt.Errorf("%s (%s on %s): name is required", at, *r.Ticker, *r.Network)
		case r.Decimals == nil:
			return nil, fmt.Errorf("%s (%s on %s): decimals is required", at, *r.Ticker, *r.Network)
		}
		c := payoutkit.Coin{Ticker: *r.Ticker, Network: *r.Network, Name: *r.Name, Decimals: *r.Decimals}
		for _, lim := range []struct {
			name string
			s    *string
			dst  *payoutkit.Amount
		}{{"min_amount", r.MinAmount, &c.MinAmount}, {"max_amount", r.MaxAmount, &c.MaxAmount}} {
			if lim.s == nil {
				continue
			}
			a, err := payoutkit.ParseAmount(*lim.s)
			if err != nil {
				return nil, fmt.Errorf("%s (%s on %s): %s %v", at, c.Ticker, c.Network, lim.name, err)
			}
			*lim.dst = a
		}
		coins[i] = c
	}
	return coins, nil
}
