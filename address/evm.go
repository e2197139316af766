package address

import (
	"golang.org/x/crypto/sha3"
)

// EVM validates an Ethereum-style address (ETH, BSC, POLYGON): "0x" followed
// by 40 hex digits. All-lower-case and all-upper-case digits carry no
// checksum and are accepted as they are; mixed case must match the EIP-55
// checksum, which is how a typo in a checksummed address is caught.
func EVM(addr string) error {
	if err := precheck(addr); err != nil {
		return err
	}
	if len(addr) < 2 || addr[:2] != "0x" {
		return invalid(`must start with "0x"`)
	}
	digits := addr[2:]
	if len(digits) != 40 {
		return invalid("want 40 hex digits, got %d", len(digits))
	}
	var lower, upper bool
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		switch {
		case c >= '0' && c <= '9':
		case c >= 'a' && c <= 'f':
			lower = true
		case c >= 'A' && c <= 'F':
			upper = true
		default:
			return invalid("invalid character %q", c)
		}
	}
	if lower && upper && eip55(digits) != digits {
		return invalid("bad checksum")
	}
	return nil
}

// eip55 returns the EIP-55 checksummed form of 40 hex digits (without "0x"):
// a letter is upper case when the matching nibble of Keccak-256 of the
// lower-case digits is 8 or more.
func eip55(digits string) string {
	buf := []byte(digits)
	for i, c := range buf {
		if c >= 'A' && c <= 'F' {
			buf[i] = c + ('a' - 'A')
		}
	}
	h := sha3.NewLegacyKeccak256()
	h.Write(buf)
	hash := h.Sum(nil)
	for i, c := range buf {
		nibble := hash[i/2] >> 4
		if i%2 == 1 {
			nibble = hash[i/2] & 0x0f
		}
		if c >= 'a' && c <= 'f' && nibble >= 8 {
			buf[i] = c - ('a' - 'A')
		}
	}
	return string(buf)
}
