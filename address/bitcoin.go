package address

import (
	"errors"
	"slices"
	"strings"

	"github.com/btcsuite/btcd/btcutil/bech32"
)

// utxoChain describes the mainnet address formats of one Bitcoin-family
// chain, plus its testnet markers so that a testnet address gets a clear
// message rather than a confusing one.
type utxoChain struct {
	hrp          string   // bech32 human-readable part; "" if no segwit
	versions     []byte   // accepted base58check version bytes
	testHRPs     []string // testnet/regtest bech32 prefixes
	testVersions []byte   // testnet base58check version bytes
}

// Bitcoin validates a Bitcoin mainnet address: base58check P2PKH (1...) or
// P2SH (3...), or a "bc1" segwit address of witness v0 (20- or 32-byte
// program, bech32) or v1 (32-byte taproot program, bech32m).
func Bitcoin(addr string) error {
	return validateUTXO(addr, utxoChain{
		hrp:          "bc",
		versions:     []byte{0x00, 0x05},
		testHRPs:     []string{"tb", "bcrt"},
		testVersions: []byte{0x6f, 0xc4},
	})
}

// Litecoin validates a Litecoin mainnet address: base58check L... (0x30),
// M... (0x32) or the legacy P2SH 3... (0x05), or an "ltc1" segwit address
// under the same witness rules as Bitcoin.
func Litecoin(addr string) error {
	return validateUTXO(addr, utxoChain{
		hrp:          "ltc",
		versions:     []byte{0x30, 0x32, 0x05},
		testHRPs:     []string{"tltc", "rltc"},
		testVersions: []byte{0x6f, 0x3a, 0xc4},
	})
}

// Dogecoin validates a Dogecoin mainnet address: base58check P2PKH D...
// (0x1e) or P2SH 9.../A... (0x16). Dogecoin has no segwit addresses.
func Dogecoin(addr string) error {
	return validateUTXO(addr, utxoChain{
		versions:     []byte{0x1e, 0x16},
		testVersions: []byte{0x71, 0xc4},
	})
}

// validateUTXO dispatches on the prefix: bech32 strings start with the
// chain's human-readable part and "1", which no base58 address of these
// chains does (their first characters are fixed by the version byte).
func validateUTXO(addr string, c utxoChain) error {
	if err := precheck(addr); err != nil {
		return err
	}
	if c.hrp != "" && hasPrefixFold(addr, c.hrp+"1") {
		return validateSegwit(addr, c.hrp)
	}
	for _, hrp := range c.testHRPs {
		if hasPrefixFold(addr, hrp+"1") {
			return invalid("testnet address")
		}
	}
	return validateLegacy(addr, c)
}

// validateLegacy checks a base58check address: 1 version byte, a 20-byte
// hash and 4 checksum bytes.
func validateLegacy(addr string, c utxoChain) error {
	version, payload, err := decodeBase58Check(addr)
	if err != nil {
		return err
	}
	if len(payload) != 20 {
		return invalid("decodes to %d bytes, want 25", len(payload)+5)
	}
	switch {
	case slices.Contains(c.versions, version):
		return nil
	case slices.Contains(c.testVersions, version):
		return invalid("testnet address")
	}
	return invalid("unsupported version byte 0x%02x", version)
}

// validateSegwit checks a segwit address per BIP-173 and BIP-350, then
// applies our narrower policy (see payableWitness).
func validateSegwit(addr, hrp string) error {
	gotHRP, data, checksum, err := bech32.DecodeGeneric(addr)
	if err != nil {
		return bech32Error(err)
	}
	if gotHRP != hrp {
		return invalid("wrong prefix %q", clip(gotHRP, 16))
	}
	if len(data) == 0 {
		return invalid("empty data")
	}
	program, err := bech32.ConvertBits(data[1:], 5, 8, false)
	if err != nil {
		return invalid("bad padding")
	}
	if err := checkWitness(data[0], len(program), checksum); err != nil {
		return err
	}
	return payableWitness(data[0], len(program))
}

// checkWitness applies the BIP-141/173/350 rules to a decoded witness
// version and program length, in the order of BIP-350's reference decoder
// so each published invalid vector is reported for the reason the BIP gives.
func checkWitness(witness byte, n int, checksum bech32.Version) error {
	switch {
	case n < 2 || n > 40:
		return invalid("bad witness program length %d", n)
	case witness > 16:
		return invalid("invalid witness version %d", witness)
	case witness == 0 && n != 20 && n != 32:
		return invalid("bad witness v0 program length %d", n)
	// BIP-350: v0 keeps the original bech32 checksum and v1+ must use
	// bech32m, so a string that is valid under the other one is refused.
	case witness == 0 && checksum != bech32.Version0:
		return invalid("witness v0 needs a bech32 checksum")
	case witness != 0 && checksum != bech32.VersionM:
		return invalid("witness v%d needs a bech32m checksum", witness)
	}
	return nil
}

// payableWitness is our policy on top of the BIPs: only witness v0 (20- or
// 32-byte program, already enforced by checkWitness) and v1 with a 32-byte
// program (taproot) are spendable today. Other versions are valid addresses
// reserved for future soft forks; until one defines them, an output paying
// them can be spent by anyone.
func payableWitness(witness byte, n int) error {
	switch {
	case witness == 0:
		return nil
	case witness == 1 && n == 32:
		return nil
	case witness == 1:
		return invalid("unsupported witness v1 program length %d", n)
	}
	return invalid("unsupported witness version %d", witness)
}

// bech32Error turns a bech32 decoding error into a short message.
func bech32Error(err error) error {
	var (
		mixed    bech32.ErrMixedCase
		checksum bech32.ErrInvalidChecksum
		char     bech32.ErrNonCharsetChar
		length   bech32.ErrInvalidLength
	)
	switch {
	case errors.As(err, &mixed):
		return invalid("mixed case")
	case errors.As(err, &checksum):
		return invalid("bad checksum")
	case errors.As(err, &char):
		return invalid("invalid character %q", byte(char))
	case errors.As(err, &length):
		return invalid("bad length")
	}
	return invalid("malformed bech32")
}

// hasPrefixFold is strings.HasPrefix ignoring ASCII case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
