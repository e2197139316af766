package address

import (
	"strings"
)

// xrpAlphabet is the XRP Ledger's base58 alphabet: the same 58 characters as
// Bitcoin's, in another order, so that account addresses start with "r".
const xrpAlphabet = "rpshnaf39wBUDNEGHJKLM4PQRST7VWXYZ2bcdeCg65jkm8oFqi1tuvAxyz"

// xrpAccountVersion is the version byte of a classic account address.
const xrpAccountVersion = 0x00

// XRP validates a classic XRP Ledger account address: "r...", base58 in the
// XRP alphabet, version 0x00, a 20-byte account ID and a double-SHA256
// checksum. X-addresses, seeds and public keys are refused, as are the
// black-hole accounts ACCOUNT_ZERO (rrrrrrrrrrrrrrrrrrrrrhoLvTp, account ID
// 0) and ACCOUNT_ONE (rrrrrrrrrrrrrrrrrrrrBZbvji, account ID 1), which no one
// holds the keys to.
func XRP(addr string) error {
	if err := precheck(addr); err != nil {
		return err
	}
	if addr[0] != 'r' {
		return invalid(`must start with "r"`)
	}
	// A 25-byte payload encodes to at most 35 characters; at least 25 since
	// every decoded byte needs a character or more.
	if len(addr) < 25 || len(addr) > 35 {
		return invalid("want 25 to 35 characters, got %d", len(addr))
	}
	if err := checkAlphabet(addr, xrpAlphabet); err != nil {
		return err
	}
	version, payload, err := decodeBase58Check(xrpToBitcoinAlphabet(addr))
	if err != nil {
		return err
	}
	if len(payload) != 20 {
		return invalid("decodes to %d bytes, want 25", len(payload)+5)
	}
	if version != xrpAccountVersion {
		return invalid("unsupported version byte 0x%02x", version)
	}
	return checkXRPBlackHole(payload)
}

// xrpToBitcoinAlphabet rewrites an XRP-alphabet string digit for digit into
// the Bitcoin alphabet. Both are positional base 58 with the zero digit first,
// so the result decodes to the same bytes with btcutil's decoder and the same
// double-SHA256 checksum applies.
func xrpToBitcoinAlphabet(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		j := strings.IndexByte(xrpAlphabet, s[i])
		if j < 0 {
			// Unreachable for checked input; '0' is outside the Bitcoin
			// alphabet, so the decoder refuses the result instead of us
			// indexing out of range.
			b.WriteByte('0')
			continue
		}
		b.WriteByte(bitcoinAlphabet[j])
	}
	return b.String()
}

// checkXRPBlackHole refuses the well-known accounts whose keys no one holds:
// funds sent there are gone.
func checkXRPBlackHole(accountID []byte) error {
	for _, b := range accountID[:19] {
		if b != 0 {
			return nil
		}
	}
	switch accountID[19] {
	case 0:
		return invalid("black-hole account ACCOUNT_ZERO")
	case 1:
		return invalid("black-hole account ACCOUNT_ONE")
	}
	return nil
}
