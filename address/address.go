// Package address validates payout destination addresses for the networks
// payoutkit supports.
//
// Every check verifies the address's checksum, not just its shape, so a
// mistyped or truncated address is refused before money is sent to it:
//
//   - BTC: base58check P2PKH (version 0x00) and P2SH (0x05); bech32 "bc1"
//     witness v0 with a 20- or 32-byte program (BIP-173) and bech32m "bc1"
//     witness v1 with a 32-byte program (taproot, BIP-350).
//   - LTC: base58check versions 0x30, 0x32 and 0x05; "ltc1" with the BTC
//     witness rules.
//   - DOGE: base58check versions 0x1e and 0x16.
//   - ETH, BSC, POLYGON: "0x" and 40 hex digits, all lower case, all upper
//     case, or mixed case with a valid EIP-55 checksum.
//   - TRON: base58check of 21 bytes with version 0x41 ("T...", 34 characters).
//   - SOL: base58 decoding to exactly 32 bytes (the format has no checksum).
//   - TON: 48-character user-friendly form (base64 or base64url, bounceable
//     or not, no test-only flag, workchain 0 or -1, valid CRC16) or the raw
//     "0:"/"-1:" form with 64 hex digits.
//   - XRP: classic "r..." address in the XRP Ledger base58 alphabet with a
//     20-byte account ID, except the black-hole accounts ACCOUNT_ZERO and
//     ACCOUNT_ONE.
//
// Testnet forms, X-addresses, keys and secrets are refused. Addresses are
// never trimmed or normalised: surrounding or inner whitespace is an error,
// because the caller should store exactly the string that was validated.
//
// Every failure wraps ErrInvalid, so a caller can both test for it and show
// the message, which reads like "invalid address: bad checksum".
package address

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrInvalid is wrapped by every validation failure (errors.Is(err, address.ErrInvalid)).
var ErrInvalid = errors.New("invalid address")

// ErrUnknownNetwork is returned by Validate for a network it has no rules for.
var ErrUnknownNetwork = errors.New("unknown network")

// MaxLen is the longest input any validator decodes. The longest address
// accepted (a bech32 P2WSH or taproot address with the "ltc" prefix) is 63
// bytes, so anything over MaxLen is refused before decoding as a cheap guard
// against huge inputs.
const MaxLen = 128

// Validator checks one address for one network; nil means valid.
type Validator func(addr string) error

// The supported network names, as returned by Networks.
const (
	NetworkBTC     = "BTC"
	NetworkLTC     = "LTC"
	NetworkDOGE    = "DOGE"
	NetworkETH     = "ETH"
	NetworkBSC     = "BSC"
	NetworkPOLYGON = "POLYGON"
	NetworkTRON    = "TRON"
	NetworkSOL     = "SOL"
	NetworkTON     = "TON"
	NetworkXRP     = "XRP"
)

// Networks lists the supported network names in a stable order.
func Networks() []string {
	return []string{
		NetworkBTC, NetworkLTC, NetworkDOGE,
		NetworkETH, NetworkBSC, NetworkPOLYGON,
		NetworkTRON, NetworkSOL, NetworkTON, NetworkXRP,
	}
}

// For returns the validator for a network and whether one exists. The
// network name is matched case-insensitively (ASCII only, so look-alike
// Unicode letters never select a network).
func For(network string) (Validator, bool) {
	switch asciiUpper(network) {
	case NetworkBTC:
		return Bitcoin, true
	case NetworkLTC:
		return Litecoin, true
	case NetworkDOGE:
		return Dogecoin, true
	case NetworkETH, NetworkBSC, NetworkPOLYGON:
		return EVM, true
	case NetworkTRON:
		return Tron, true
	case NetworkSOL:
		return Solana, true
	case NetworkTON:
		return TON, true
	case NetworkXRP:
		return XRP, true
	}
	return nil, false
}

// Validate checks addr for network (see Networks for the names, matched
// case-insensitively). It returns an error wrapping ErrUnknownNetwork for a
// network it has no rules for, and one wrapping ErrInvalid for a bad address.
func Validate(network, addr string) error {
	v, ok := For(network)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownNetwork, clip(network, 32))
	}
	return v(addr)
}

// asciiUpper upper-cases a short ASCII network name. It returns "" for
// anything that cannot be a network name, so For never allocates for junk.
func asciiUpper(s string) string {
	if len(s) == 0 || len(s) > 16 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return ""
		}
	}
	return strings.ToUpper(s)
}

// clip shortens s to at most n bytes so that error messages stay short even
// for huge inputs. It may cut a UTF-8 sequence; %q escapes the remainder.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// invalid builds a validation error that wraps ErrInvalid.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// precheck applies the rules shared by every format: not empty, at most
// MaxLen bytes, and printable ASCII only (every supported format is ASCII, so
// this also rules out invalid UTF-8, NUL and control bytes).
func precheck(addr string) error {
	if addr == "" {
		return invalid("empty")
	}
	if len(addr) > MaxLen {
		return invalid("too long")
	}
	for _, r := range addr {
		switch {
		case unicode.IsSpace(r):
			return invalid("contains whitespace")
		case r < '!' || r > '~':
			// Includes utf8.RuneError for invalid UTF-8.
			return invalid("contains a non-printable or non-ASCII character")
		}
	}
	return nil
}
