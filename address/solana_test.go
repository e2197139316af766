package address

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil/base58"
)

func TestSolana(t *testing.T) {
	// Published program IDs and their 32-byte public keys: the system
	// program is all zeros, and the SPL token program's key is in
	// spl-token's source as a byte array.
	for addr, key := range map[string]string{
		"11111111111111111111111111111111":            strings.Repeat("00", 32),
		"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA": "06ddf6e1d765a193d9cbe146ceeb79ac1cb485ed5f5b37913a8cf5857eff00a9",
	} {
		if got := hex.EncodeToString(base58.Decode(addr)); got != key {
			t.Errorf("%s decodes to %s, published %s", addr, got, key)
		}
		checkResult(t, "SOL", addr, Solana(addr), "")
	}

	// 32 bytes of 0xff is the longest possible encoding (44 characters).
	longest := base58.Encode([]byte(strings.Repeat("\xff", 32)))
	for _, c := range []struct {
		addr, want string
	}{
		{"EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", ""},
		{longest, ""},
		{"1111111111111111111111111111111", "want 32 to 44 characters, got 31"},
		{"111111111111111111111111111111111", "decodes to 33 bytes"},
		{longest + "1", "want 32 to 44 characters, got 45"},
		{"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5D0", "invalid character '0'"},
		{"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5Dl", "invalid character 'l'"},
		{"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DI", "invalid character 'I'"},
		{"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DO", "invalid character 'O'"},
		// 44 characters that overflow 32 bytes.
		{strings.Repeat("z", 44), "decodes to 33 bytes"},
		// A TRON address is base58 too, but decodes to 25 bytes.
		{"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "decodes to 25 bytes"},
	} {
		checkResult(t, "SOL", c.addr, Solana(c.addr), c.want)
	}
	if len(longest) != 44 {
		t.Errorf("longest 32-byte encoding is %d characters, want 44", len(longest))
	}
}
