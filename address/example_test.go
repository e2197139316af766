package address_test

import (
	"errors"
	"fmt"

	"github.com/payoutkit/payoutkit/address"
)

func ExampleValidate() {
	for _, c := range []struct{ network, addr string }{
		{"BTC", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa"},
		{"btc", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNb"},
		{"ETH", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"},
		{"ETH", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD"},
		{"BTC", "bc1zw508d6qejxtdg4y5r3zarvaryvaxxpcs"},
		{"TRON", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"},
		{"XRP", " rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh"},
		{"ADA", "addr1..."},
	} {
		err := address.Validate(c.network, c.addr)
		switch {
		case err == nil:
			fmt.Printf("%s ok\n", c.network)
		case errors.Is(err, address.ErrInvalid):
			fmt.Printf("%s address: %v\n", c.network, err)
		default:
			fmt.Printf("%s: %v\n", c.network, err)
		}
	}
	// Output:
	// BTC ok
	// btc address: invalid address: bad checksum
	// ETH ok
	// ETH address: invalid address: bad checksum
	// BTC address: invalid address: unsupported witness version 2
	// TRON ok
	// XRP address: invalid address: contains whitespace
	// ADA: unknown network "ADA"
}
