package address

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// bech32Charset is the bech32 data alphabet (BIP-173), lower case.
const bech32Charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

// validVector is a real, valid address. alphabet is the set of characters a
// single-character substitution draws from; "" means the format carries no
// checksum a substitution must break (Solana, TON raw) or needs its own
// mutation rule (EVM, tested in evm_test.go).
type validVector struct {
	network     string
	addr        string
	alphabet    string
	alsoValidOn []string // other networks whose rules accept the same string
}

// validVectors are well-known real addresses, each checked against its
// published decoding in the per-family tests.
var validVectors = []validVector{
	// Bitcoin: genesis coinbase P2PKH, the bitcoin wiki's P2SH example, the
	// BIP-173/350 mainnet vectors that our witness rules accept, and the
	// BIP-341 wallet test vector's first taproot output.
	{network: "BTC", addr: "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", alphabet: bitcoinAlphabet},
	{network: "BTC", addr: "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy", alphabet: bitcoinAlphabet, alsoValidOn: []string{"LTC"}},
	{network: "BTC", addr: "BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4", alphabet: strings.ToUpper(bech32Charset)},
	{network: "BTC", addr: "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", alphabet: bech32Charset},
	{network: "BTC", addr: "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0", alphabet: bech32Charset},
	{network: "BTC", addr: "bc1p2wsldez5mud2yam29q22wgfh9439spgduvct83k3pm50fcxa5dps59h4z5", alphabet: bech32Charset},
	// Litecoin.
	{network: "LTC", addr: "LM2WMpR1Rp6j3Sa59cMXMs1SPzj9eXpGc1", alphabet: bitcoinAlphabet},
	{network: "LTC", addr: "LKKHMBjCU89fyFNgSRprDoD8Jb25N8uWvd", alphabet: bitcoinAlphabet},
	{network: "LTC", addr: "M7zVKQKmtV5Rc7erVGVVC3khZbXxsS5HEX", alphabet: bitcoinAlphabet},
	{network: "LTC", addr: "ltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9", alphabet: bech32Charset},
	{network: "LTC", addr: "LTC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KGMN4N9", alphabet: strings.ToUpper(bech32Charset)},
	// Dogecoin.
	{network: "DOGE", addr: "DH5yaieqoZN36fDVciNyRueRGvGLR3mr7L", alphabet: bitcoinAlphabet},
	{network: "DOGE", addr: "D8osUgxgU4J2yEhCzN5xQQ42tuuG7qBdri", alphabet: bitcoinAlphabet},
	{network: "DOGE", addr: "A6T5s5B1Saja9yAJWxQN8SNXvNzxaoFdcy", alphabet: bitcoinAlphabet},
	{network: "DOGE", addr: "9xqCpm3DpUYSzcoQSPb5SEGDwn9NRqwZnH", alphabet: bitcoinAlphabet},
	// EVM: EIP-55's published examples.
	{network: "ETH", addr: "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"},
	{network: "BSC", addr: "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"},
	{network: "POLYGON", addr: "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB"},
	{network: "ETH", addr: "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb"},
	{network: "ETH", addr: "0x52908400098527886E0F7030069857D2E4169EE7"},
	{network: "ETH", addr: "0xde709f2102306220921060314715629080e2fb77"},
	// TRON: the USDT contract and two accounts with published hex forms.
	{network: "TRON", addr: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", alphabet: bitcoinAlphabet},
	{network: "TRON", addr: "TLrPF5aTqtqLxFo1Y69jpQvZ2T4ydkX9pC", alphabet: bitcoinAlphabet},
	{network: "TRON", addr: "THPvaUhoh2Qn2y9THCZML3H815hhFhn5YC", alphabet: bitcoinAlphabet},
	// Solana: system program, SPL token program, USDC mint.
	{network: "SOL", addr: "11111111111111111111111111111111"},
	{network: "SOL", addr: "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"},
	{network: "SOL", addr: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"},
	// TON: the docs' cookbook address, the elector contract, and a
	// non-bounceable form.
	{network: "TON", addr: "EQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPrHF", alphabet: base64URLAlphabet},
	{network: "TON", addr: "0:ca6e321c7cce9ecedf0a8ca2492ec8592494aa5fb5ce0387dff96ef6af982a3e"},
	{network: "TON", addr: "Ef8zMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzM0vF", alphabet: base64URLAlphabet},
	{network: "TON", addr: "-1:3333333333333333333333333333333333333333333333333333333333333333"},
	{network: "TON", addr: "UQC6YL-9UnwM0tcMY5ZjDFCkmK8BW5h62q0dSp4of2BFNqQF", alphabet: base64URLAlphabet},
	// XRP: genesis account and xrpl.js address-codec examples.
	{network: "XRP", addr: "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh", alphabet: xrpAlphabet},
	{network: "XRP", addr: "r9cZA1mLK5R5Am25ArfXFmqgNwjZgnfk59", alphabet: xrpAlphabet},
	{network: "XRP", addr: "rGWrZyQqhTp9Xu7G5Pkayo7bXjH4k4QYpf", alphabet: xrpAlphabet},
}

// base64URLAlphabet is the base64url alphabet (RFC 4648 §5).
const base64URLAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// family groups networks that share one address format.
func family(network string) string {
	switch network {
	case "ETH", "BSC", "POLYGON":
		return "EVM"
	}
	return network
}

func TestValidVectors(t *testing.T) {
	for _, v := range validVectors {
		if err := Validate(v.network, v.addr); err != nil {
			t.Errorf("Validate(%s, %s) = %v, want nil", v.network, v.addr, err)
		}
	}
}

// TestWrongNetwork checks that each valid address is refused on every
// network whose format differs.
func TestWrongNetwork(t *testing.T) {
	for _, v := range validVectors {
		for _, n := range Networks() {
			if family(n) == family(v.network) || slices.Contains(v.alsoValidOn, n) {
				if err := Validate(n, v.addr); err != nil {
					t.Errorf("Validate(%s, %s) = %v, want nil (same format as %s)", n, v.addr, err, v.network)
				}
				continue
			}
			err := Validate(n, v.addr)
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("Validate(%s, %s) = %v, want ErrInvalid (a %s address)", n, v.addr, err, v.network)
			}
		}
	}
}

// TestSingleSubstitution checks that replacing any one character of a
// checksummed address with any other character of its alphabet is refused,
// and that changing the last character is reported as a bad checksum.
func TestSingleSubstitution(t *testing.T) {
	for _, v := range validVectors {
		if v.alphabet == "" {
			continue
		}
		tried := 0
		for i := 0; i < len(v.addr); i++ {
			for j := 0; j < len(v.alphabet); j++ {
				c := v.alphabet[j]
				if c == v.addr[i] {
					continue
				}
				m := v.addr[:i] + string(c) + v.addr[i+1:]
				tried++
				if err := Validate(v.network, m); !errors.Is(err, ErrInvalid) {
					t.Fatalf("Validate(%s, %s) (from %s) = %v, want ErrInvalid", v.network, m, v.addr, err)
				}
			}
		}
		if tried == 0 {
			t.Fatalf("%s: no substitutions tried", v.addr)
		}
		last := len(v.addr) - 1
		c := v.alphabet[0]
		if c == v.addr[last] {
			c = v.alphabet[1]
		}
		m := v.addr[:last] + string(c)
		if err := Validate(v.network, m); err == nil || err.Error() != "invalid address: bad checksum" {
			t.Errorf("Validate(%s, %s) = %v, want %q", v.network, m, err, "invalid address: bad checksum")
		}
	}
}
