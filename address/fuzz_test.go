package address

import (
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/btcsuite/btcd/btcutil/base58"
	"github.com/btcsuite/btcd/btcutil/bech32"
)

// fuzzSeeds are the valid vectors plus junk that sits near the edges of the
// formats: prefixes without bodies, wrong alphabets, padding, invalid UTF-8.
func fuzzSeeds() []string {
	seeds := []string{
		"", " ", "\x00", "\xff\xfe\xfd", "1", "3", "bc1", "BC1", "ltc1", "tb1",
		"bc1gmk9yu", "bc1pw5dgrnzv", "BC1SW50QGDZ25J",
		"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kemeawh",
		"0x", "0X", "0x" + strings.Repeat("g", 40), "0x" + strings.Repeat("F", 40),
		"T", "T" + strings.Repeat("1", 33), "r", "rrrrrrrrrrrrrrrrrrrrrhoLvTp",
		"rrrrrrrrrrrrrrrrrrrrBZbvji", "X7AcgcsBL6XDcUb289X4mJ8djcdyKaB5hJDWMArnXr61cqZ",
		strings.Repeat("1", 32), strings.Repeat("z", 44),
		"0:", "-1:", ":", "0:" + strings.Repeat("f", 64), "-1:" + strings.Repeat("A", 64),
		strings.Repeat("A", 48), strings.Repeat("_", 48), strings.Repeat("+", 48),
		"EQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff+W72r5gqPrHF",
		"EQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPrH=",
		strings.Repeat("x", MaxLen), strings.Repeat("x", MaxLen+1),
	}
	for _, v := range validVectors {
		seeds = append(seeds, v.addr)
	}
	for _, v := range segwitValid {
		seeds = append(seeds, v.addr)
	}
	for _, v := range segwitInvalid {
		seeds = append(seeds, v.addr)
	}
	return seeds
}

// checkInvariants holds for every validator and every input: no panic
// (the fuzzer catches those), every error wraps ErrInvalid, and anything
// accepted is short, printable ASCII with no whitespace.
func checkInvariants(t *testing.T, name, addr string, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s(%q) = %v, does not wrap ErrInvalid", name, addr, err)
		}
		if len(err.Error()) > 128 {
			t.Fatalf("%s(%q): error message is %d bytes", name, addr, len(err.Error()))
		}
		return
	}
	if addr == "" || len(addr) > MaxLen || !utf8.ValidString(addr) {
		t.Fatalf("%s accepted %q", name, addr)
	}
	for i := 0; i < len(addr); i++ {
		if addr[i] <= ' ' || addr[i] > '~' {
			t.Fatalf("%s accepted %q with byte %#x", name, addr, addr[i])
		}
	}
}

func FuzzValidate(f *testing.F) {
	for i, s := range fuzzSeeds() {
		f.Add(byte(i), s)
	}
	networks := Networks()
	f.Fuzz(func(t *testing.T, n byte, addr string) {
		network := networks[int(n)%len(networks)]
		checkInvariants(t, network, addr, Validate(network, addr))
	})
}

// fuzzValidator runs one family's validator over the shared seeds.
func fuzzValidator(f *testing.F, name string, v Validator) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		checkInvariants(t, name, addr, v(addr))
	})
}

func FuzzBitcoin(f *testing.F)  { fuzzValidator(f, "Bitcoin", Bitcoin) }
func FuzzLitecoin(f *testing.F) { fuzzValidator(f, "Litecoin", Litecoin) }
func FuzzDogecoin(f *testing.F) { fuzzValidator(f, "Dogecoin", Dogecoin) }
func FuzzEVM(f *testing.F)      { fuzzValidator(f, "EVM", EVM) }
func FuzzTron(f *testing.F)     { fuzzValidator(f, "Tron", Tron) }
func FuzzSolana(f *testing.F)   { fuzzValidator(f, "Solana", Solana) }
func FuzzTON(f *testing.F)      { fuzzValidator(f, "TON", TON) }
func FuzzXRP(f *testing.F)      { fuzzValidator(f, "XRP", XRP) }

// FuzzEVMChecksum checks the EIP-55 property directly: for any 20 bytes,
// the checksummed form is accepted, and flipping the case of any one letter
// in it is refused.
func FuzzEVMChecksum(f *testing.F) {
	f.Add([]byte("\x5a\xae\xb6\x05\x3f\x3e\x94\xc9\xb9\xa0\x9f\x33\x66\x94\x35\xe7\xef\x1b\xea\xed"), uint8(0))
	f.Add(make([]byte, 20), uint8(7))
	f.Fuzz(func(t *testing.T, b []byte, pos uint8) {
		if len(b) < 20 {
			return
		}
		const digits = "0123456789abcdef"
		lower := make([]byte, 40)
		for i, x := range b[:20] {
			lower[2*i], lower[2*i+1] = digits[x>>4], digits[x&0x0f]
		}
		sum := "0x" + eip55(string(lower))
		if err := EVM(sum); err != nil {
			t.Fatalf("EVM(%s) = %v", sum, err)
		}
		i := 2 + int(pos)%40
		c := sum[i]
		var flipped byte
		switch {
		case c >= 'a' && c <= 'f':
			flipped = c - 'a' + 'A'
		case c >= 'A' && c <= 'F':
			flipped = c - 'A' + 'a'
		default:
			return
		}
		m := sum[:i] + string(flipped) + sum[i+1:]
		lowerCount, upperCount := 0, 0
		for j := 2; j < len(m); j++ {
			switch {
			case m[j] >= 'a' && m[j] <= 'f':
				lowerCount++
			case m[j] >= 'A' && m[j] <= 'F':
				upperCount++
			}
		}
		// A flip that leaves the digits all one case is the unchecksummed
		// form and valid by the rules.
		if lowerCount > 0 && upperCount > 0 && EVM(m) == nil {
			t.Fatalf("EVM accepted %s, a case flip of %s", m, sum)
		}
	})
}

// FuzzEncodedAccepted builds an address of every checksummed kind from
// arbitrary key material with the reference encoders and checks that the
// validator accepts it: a cross-check that the validators are not stricter
// than the formats.
func FuzzEncodedAccepted(f *testing.F) {
	f.Add(make([]byte, 32))
	f.Add([]byte(strings.Repeat("\xff", 32)))
	f.Add([]byte("0123456789abcdef0123456789abcdef"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 32 {
			return
		}
		h20, h32 := b[:20], b[:32]
		for _, c := range encodedAddresses(t, h20, h32) {
			if err := Validate(c.network, c.addr); err != nil {
				t.Fatalf("Validate(%s, %s) = %v", c.network, c.addr, err)
			}
		}
	})
}

// encodedAddresses returns one address per format built from h20/h32.
func encodedAddresses(t *testing.T, h20, h32 []byte) []struct{ network, addr string } {
	t.Helper()
	segwit := func(hrp string, version byte, prog []byte) string {
		data, err := bech32.ConvertBits(prog, 8, 5, true)
		if err != nil {
			t.Fatal(err)
		}
		data = append([]byte{version}, data...)
		enc := bech32.Encode
		if version > 0 {
			enc = bech32.EncodeM
		}
		s, err := enc(hrp, data)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	out := []struct{ network, addr string }{
		{"BTC", base58.CheckEncode(h20, 0x00)},
		{"BTC", base58.CheckEncode(h20, 0x05)},
		{"BTC", segwit("bc", 0, h20)},
		{"BTC", segwit("bc", 0, h32)},
		{"BTC", segwit("bc", 1, h32)},
		{"LTC", base58.CheckEncode(h20, 0x30)},
		{"LTC", base58.CheckEncode(h20, 0x32)},
		{"LTC", segwit("ltc", 0, h20)},
		{"LTC", segwit("ltc", 1, h32)},
		{"DOGE", base58.CheckEncode(h20, 0x1e)},
		{"DOGE", base58.CheckEncode(h20, 0x16)},
		{"ETH", "0x" + eip55(hex.EncodeToString(h20))},
		{"TRON", base58.CheckEncode(h20, tronVersion)},
		{"SOL", base58.Encode(h32)},
		{"XRP", xrpEncode(h20, xrpAccountVersion)},
		{"TON", "0:" + hex.EncodeToString(h32)},
		{"TON", "-1:" + hex.EncodeToString(h32)},
	}
	for _, tag := range []byte{tonBounceable, tonNonBounceable} {
		for _, url := range []bool{false, true} {
			out = append(out, struct{ network, addr string }{"TON", tonFriendly(t, "0:"+hex.EncodeToString(h32), tag, url)})
		}
	}
	// The two XRP black holes are the only account IDs refused on purpose.
	if v := h20[:19]; strings.Count(string(v), "\x00") == 19 && h20[19] <= 1 {
		out = slices.DeleteFunc(out, func(c struct{ network, addr string }) bool { return c.network == "XRP" })
	}
	return out
}
