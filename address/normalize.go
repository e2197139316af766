package address

import (
	"encoding/hex"
	"strings"
)

// Normalize validates addr for network and returns the one form in which
// the network reads it, so that two spellings of one destination compare
// equal: EVM addresses (ETH, BSC, POLYGON) and BTC/LTC bech32 addresses in
// lower case, since their checksums make case meaningless; a TON account in
// its raw "workchain:hex" form whichever form it was written in; every other
// address as it is, because its case is part of it. An invalid address or an
// unknown network is the error Validate returns.
func Normalize(network, addr string) (string, error) {
	if err := Validate(network, addr); err != nil {
		return "", err
	}
	switch asciiUpper(network) {
	case NetworkETH, NetworkBSC, NetworkPOLYGON:
		return strings.ToLower(addr), nil
	case NetworkBTC, NetworkLTC:
		if hasPrefixFold(addr, "bc1") || hasPrefixFold(addr, "ltc1") {
			return strings.ToLower(addr), nil
		}
	case NetworkTON:
		return tonRaw(addr)
	}
	return addr, nil
}

// tonRaw renders a valid TON address in its raw form with lower-case hex:
// the user-friendly form's flags (bounceable or not, base64 alphabet) do not
// change the account it names.
func tonRaw(addr string) (string, error) {
	if wc, hash, ok := strings.Cut(addr, ":"); ok {
		return wc + ":" + strings.ToLower(hash), nil
	}
	enc, err := tonEncoding(addr)
	if err != nil {
		return "", err
	}
	raw, err := enc.DecodeString(addr)
	if err != nil || len(raw) != 36 {
		return "", invalid("bad base64")
	}
	wc := "0"
	if raw[1] == 0xff {
		wc = "-1"
	}
	return wc + ":" + hex.EncodeToString(raw[2:34]), nil
}
