package address

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
)

// tonFriendly builds the user-friendly form of a raw "wc:hex" address with
// the given tag, the way TON wallets do.
func tonFriendly(t *testing.T, raw string, tag byte, url bool) string {
	t.Helper()
	wc, h, _ := strings.Cut(raw, ":")
	hash, err := hex.DecodeString(h)
	if err != nil || len(hash) != 32 {
		t.Fatalf("bad raw address %s", raw)
	}
	workchain, err := strconv.ParseInt(wc, 10, 8)
	if err != nil {
		t.Fatalf("bad workchain in %s", raw)
	}
	b := append([]byte{tag, byte(workchain)}, hash...)
	b = binary.BigEndian.AppendUint16(b, crc16XModem(b))
	if url {
		return base64.URLEncoding.EncodeToString(b)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func TestCRC16XModemCheckValue(t *testing.T) {
	// The catalogued check value of CRC-16/XMODEM.
	if got := crc16XModem([]byte("123456789")); got != 0x31c3 {
		t.Fatalf("crc16XModem(123456789) = %#04x, want 0x31c3", got)
	}
}

// Published raw/user-friendly pairs: the TON cookbook's example, the
// elector and zero-hash system contracts (masterchain), and a Rust crate's
// example with both its bounceable and non-bounceable forms.
var tonPairs = []struct {
	raw, bounceable, nonBounceable string
}{
	{"0:ca6e321c7cce9ecedf0a8ca2492ec8592494aa5fb5ce0387dff96ef6af982a3e", "EQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPrHF", ""},
	{"-1:3333333333333333333333333333333333333333333333333333333333333333", "Ef8zMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzM0vF", ""},
	{"-1:0000000000000000000000000000000000000000000000000000000000000000", "Ef8AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAADAU", ""},
	{"0:ba60bfbd527c0cd2d70c6396630c50a498af015b987adaad1d4a9e287f604536", "EQC6YL-9UnwM0tcMY5ZjDFCkmK8BW5h62q0dSp4of2BFNvnA", "UQC6YL-9UnwM0tcMY5ZjDFCkmK8BW5h62q0dSp4of2BFNqQF"},
}

func TestTONPublishedPairs(t *testing.T) {
	for _, p := range tonPairs {
		if got := tonFriendly(t, p.raw, tonBounceable, true); got != p.bounceable {
			t.Errorf("bounceable form of %s = %s, published %s", p.raw, got, p.bounceable)
		}
		if p.nonBounceable != "" {
			if got := tonFriendly(t, p.raw, tonNonBounceable, true); got != p.nonBounceable {
				t.Errorf("non-bounceable form of %s = %s, published %s", p.raw, got, p.nonBounceable)
			}
		}
		// Every form of the address is accepted: raw (in both hex cases),
		// bounceable and non-bounceable, base64 and base64url.
		forms := []string{p.raw, strings.ToUpper(p.raw)}
		for _, tag := range []byte{tonBounceable, tonNonBounceable} {
			for _, url := range []bool{false, true} {
				forms = append(forms, tonFriendly(t, p.raw, tag, url))
			}
		}
		for _, f := range forms {
			checkResult(t, "TON", f, TON(f), "")
		}
		// The test-only forms of the same address are refused.
		for _, tag := range []byte{tonBounceable | tonTestOnly, tonNonBounceable | tonTestOnly} {
			f := tonFriendly(t, p.raw, tag, true)
			checkResult(t, "TON", f, TON(f), "testnet-only address")
		}
	}
}

func TestTONInvalid(t *testing.T) {
	const raw = "0:ca6e321c7cce9ecedf0a8ca2492ec8592494aa5fb5ce0387dff96ef6af982a3e"
	const hash = "ca6e321c7cce9ecedf0a8ca2492ec8592494aa5fb5ce0387dff96ef6af982a3e"
	// A hash whose encoding needs both base64-only characters ("+/" or
	// "-_"), to build a form that mixes the two alphabets.
	const mixedRaw = "0:fbfffbfffbfffbfffbfffbfffbfffbfffbfffbfffbfffbfffbfffbfffbfffbff"
	std := tonFriendly(t, mixedRaw, tonBounceable, false)
	mixed := strings.Replace(std, "/", "_", 1)
	if !strings.ContainsAny(mixed, "+/") || !strings.Contains(mixed, "_") {
		t.Fatalf("%s does not mix the alphabets", mixed)
	}

	for _, c := range []struct {
		addr, want string
	}{
		{"EQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPrHG", "bad checksum"},
		{"EQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPrH", "want 48 characters, got 47"},
		{"EQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPrHFA", "want 48 characters, got 49"},
		{"EQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPrH=", "invalid character '='"},
		{"EQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPr.F", "invalid character '.'"},
		{mixed, "mixes base64 and base64url"},
		{tonFriendly(t, raw, 0x12, true), "unknown tag 0x12"},
		{tonFriendly(t, raw, 0x00, true), "unknown tag 0x00"},
		{tonFriendly(t, "1:"+hash, tonBounceable, true), "unsupported workchain 1"},
		{tonFriendly(t, "-1:"+hash, tonBounceable, true), ""},
		{"1:" + hash, `unsupported workchain "1"`},
		{"-2:" + hash, `unsupported workchain "-2"`},
		{"00:" + hash, `unsupported workchain "00"`},
		{":" + hash, `unsupported workchain ""`},
		{"0:" + hash[:63], "want 64 hex digits, got 63"},
		{"0:" + hash + "0", "want 64 hex digits, got 65"},
		{"0:" + hash[:63] + "g", "bad hex"},
		{"0:0x" + hash[:62], "bad hex"},
		{"0:" + hash[:32] + ":" + hash[:31], "bad hex"},
	} {
		checkResult(t, "TON", c.addr, TON(c.addr), c.want)
	}
}
