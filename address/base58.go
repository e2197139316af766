package address

import (
	"errors"
	"strings"

	"github.com/btcsuite/btcd/btcutil/base58"
)

// bitcoinAlphabet is the base58 alphabet of Bitcoin and its forks, TRON and
// Solana; btcutil's decoder uses it.
const bitcoinAlphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// checkAlphabet reports the first character of s outside alphabet. The
// decoders reject such strings too, but only with an empty result; this gives
// the caller a useful message.
func checkAlphabet(s, alphabet string) error {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(alphabet, s[i]) < 0 {
			return invalid("invalid character %q", s[i])
		}
	}
	return nil
}

// decodeBase58Check decodes a Bitcoin-alphabet base58check string into its
// version byte and payload, verifying the double-SHA256 checksum.
func decodeBase58Check(s string) (version byte, payload []byte, err error) {
	if err := checkAlphabet(s, bitcoinAlphabet); err != nil {
		return 0, nil, err
	}
	payload, version, err = base58.CheckDecode(s)
	switch {
	case errors.Is(err, base58.ErrChecksum):
		return 0, nil, invalid("bad checksum")
	case err != nil:
		return 0, nil, invalid("too short")
	}
	return version, payload, nil
}
