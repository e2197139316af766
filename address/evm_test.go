package address

import (
	"strings"
	"testing"
)

// EIP-55's published test cases: two all-caps, two all-lower and four
// "normal" mixed-case addresses, each already in checksummed form.
var eip55Vectors = []string{
	"0x52908400098527886E0F7030069857D2E4169EE7",
	"0x8617E340B3D01FA5F11F306F4090FD50E238070D",
	"0xde709f2102306220921060314715629080e2fb77",
	"0x27b1fdb04752bbc536007a920d24acb045561c26",
	"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
	"0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
	"0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
	"0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
}

func TestEIP55Vectors(t *testing.T) {
	for _, v := range eip55Vectors {
		// Our checksum function reproduces the published form from the
		// lower-case digits.
		if got := "0x" + eip55(strings.ToLower(v[2:])); got != v {
			t.Errorf("eip55(%s) = %s, published %s", strings.ToLower(v), got, v)
		}
		for _, n := range []string{"ETH", "BSC", "POLYGON"} {
			checkResult(t, n, v, Validate(n, v), "")
		}
		// Lower- and upper-case forms carry no checksum and are accepted.
		lower, upper := "0x"+strings.ToLower(v[2:]), "0x"+strings.ToUpper(v[2:])
		checkResult(t, "ETH", lower, EVM(lower), "")
		checkResult(t, "ETH", upper, EVM(upper), "")
	}
}

// TestEIP55CaseFlips flips the case of each letter of each published
// address in turn; every result is mixed case with a wrong checksum.
func TestEIP55CaseFlips(t *testing.T) {
	for _, v := range eip55Vectors {
		flips := 0
		for i := 2; i < len(v); i++ {
			c := v[i]
			var f byte
			switch {
			case c >= 'a' && c <= 'f':
				f = c - 'a' + 'A'
			case c >= 'A' && c <= 'F':
				f = c - 'A' + 'a'
			default:
				continue
			}
			m := v[:i] + string(f) + v[i+1:]
			flips++
			checkResult(t, "ETH", m, EVM(m), "bad checksum")
		}
		if flips == 0 {
			t.Errorf("%s: no letters to flip", v)
		}
	}
}

func TestEVMShape(t *testing.T) {
	const ok = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
	for _, c := range []struct {
		addr, want string
	}{
		{ok, ""},
		{"0x0000000000000000000000000000000000000000", ""},
		{"5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", `must start with "0x"`},
		{"0X5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", `must start with "0x"`},
		{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe", "want 40 hex digits, got 39"},
		{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAedd", "want 40 hex digits, got 41"},
		{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeg", "invalid character 'g'"},
		{"0x", "want 40 hex digits, got 0"},
		{"0", `must start with "0x"`},
		{"0x0x" + ok[2:40], "invalid character 'x'"},
		// A TRON hex address (0x41 prefix, 21 bytes) is not an EVM address.
		{"0x41a614f803b6fd780986a42c78ec9c7f77e6ded13c", "want 40 hex digits, got 42"},
	} {
		checkResult(t, "ETH", c.addr, EVM(c.addr), c.want)
	}
}
