package address

import (
	"github.com/btcsuite/btcd/btcutil/base58"
)

// Solana validates a Solana address: base58 (Bitcoin alphabet) decoding to
// exactly 32 bytes. The format has no checksum, so a single mistyped
// character is only caught when it leaves the alphabet or changes the
// decoded length; callers that can should confirm the address another way.
func Solana(addr string) error {
	if err := precheck(addr); err != nil {
		return err
	}
	// 32 bytes encode to 32..44 characters; checking first keeps the
	// big-number decoding to plausible inputs.
	if len(addr) < 32 || len(addr) > 44 {
		return invalid("want 32 to 44 characters, got %d", len(addr))
	}
	if err := checkAlphabet(addr, bitcoinAlphabet); err != nil {
		return err
	}
	if n := len(base58.Decode(addr)); n != 32 {
		return invalid("decodes to %d bytes, want 32", n)
	}
	return nil
}
