package address

import (
	"encoding/hex"
	"testing"

	"github.com/btcsuite/btcd/btcutil/base58"
)

func TestTron(t *testing.T) {
	// Published base58/hex pairs: the USDT TRC-20 contract and two accounts.
	for addr, hexForm := range map[string]string{
		"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t": "41a614f803b6fd780986a42c78ec9c7f77e6ded13c",
		"TLrPF5aTqtqLxFo1Y69jpQvZ2T4ydkX9pC": "41775f057150b85086f456aac88fd52ba8e35db282",
		"THPvaUhoh2Qn2y9THCZML3H815hhFhn5YC": "41517591d35d313bf6a5e33098284502b045e2bc08",
	} {
		payload, version, err := base58.CheckDecode(addr)
		if err != nil || hex.EncodeToString(append([]byte{version}, payload...)) != hexForm {
			t.Errorf("%s decodes to %x%x (%v), published %s", addr, version, payload, err, hexForm)
		}
		raw, _ := hex.DecodeString(hexForm)
		if got := base58.CheckEncode(raw[1:], raw[0]); got != addr {
			t.Errorf("%s encodes to %s, published %s", hexForm, got, addr)
		}
		checkResult(t, "TRON", addr, Tron(addr), "")
	}

	for _, c := range []struct {
		addr, want string
	}{
		{"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u", "bad checksum"},
		{"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6", "want 34 characters, got 33"},
		{"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6tt", "want 34 characters, got 35"},
		{"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj60", "invalid character '0'"},
		{"tR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", `must start with "T"`},
		// The hex and 0x forms have no checksum and are refused.
		{"41a614f803b6fd780986a42c78ec9c7f77e6ded13c", `must start with "T"`},
		{"0xa614f803b6fd780986a42c78ec9c7f77e6ded13c", `must start with "T"`},
		// Same hash under Bitcoin's version 0x00: right checksum, wrong version.
		{base58.CheckEncode(mustHex(t, "a614f803b6fd780986a42c78ec9c7f77e6ded13c"), 0x00), `must start with "T"`},
		// A 34-character "T..." string with a valid checksum but another
		// version byte (0x42 also encodes to "T...").
		{base58.CheckEncode(mustHex(t, "a614f803b6fd780986a42c78ec9c7f77e6ded13c"), 0x42), "unsupported version byte 0x42"},
	} {
		checkResult(t, "TRON", c.addr, Tron(c.addr), c.want)
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
