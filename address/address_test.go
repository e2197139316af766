package address

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestNetworks(t *testing.T) {
	want := []string{"BTC", "LTC", "DOGE", "ETH", "BSC", "POLYGON", "TRON", "SOL", "TON", "XRP"}
	got := Networks()
	if !slices.Equal(got, want) {
		t.Fatalf("Networks() = %v, want %v", got, want)
	}
	// Callers may modify the returned slice without affecting later calls.
	got[0] = "XXX"
	if Networks()[0] != "BTC" {
		t.Fatal("Networks() shares its backing array between calls")
	}
	for _, n := range want {
		for _, name := range []string{n, strings.ToLower(n), strings.ToUpper(n[:1]) + strings.ToLower(n[1:])} {
			if v, ok := For(name); !ok || v == nil {
				t.Errorf("For(%q) = %v, %v; want a validator", name, v, ok)
			}
		}
	}
}

func TestUnknownNetwork(t *testing.T) {
	for _, n := range []string{
		"", "BTC ", " BTC", "BITCOIN", "ETHEREUM", "MATIC", "TRX", "btc\x00",
		"ſol",       // U+017F folds to "s" under Unicode rules; ASCII only here
		"\u212aTON", // Kelvin sign
		"\xff\xfe",  // invalid UTF-8
		strings.Repeat("BTC", 1000),
	} {
		if v, ok := For(n); ok || v != nil {
			t.Errorf("For(%q) found a validator", n)
		}
		err := Validate(n, "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa")
		if !errors.Is(err, ErrUnknownNetwork) || errors.Is(err, ErrInvalid) {
			t.Errorf("Validate(%q, ...) = %v, want ErrUnknownNetwork only", n, err)
		}
		if len(err.Error()) > 64 {
			t.Errorf("Validate(%q, ...) error is %d bytes long", clip(n, 16), len(err.Error()))
		}
	}
}

// TestPrecheck feeds each network's valid addresses through the shared
// guards: whitespace anywhere, control and non-ASCII bytes, and size.
func TestPrecheck(t *testing.T) {
	for _, v := range validVectors {
		mid := len(v.addr) / 2
		cases := map[string]string{
			" " + v.addr:                         "contains whitespace",
			v.addr + " ":                         "contains whitespace",
			v.addr + "\n":                        "contains whitespace",
			"\t" + v.addr:                        "contains whitespace",
			v.addr[:mid] + " " + v.addr[mid:]:    "contains whitespace",
			v.addr + "\r\n":                      "contains whitespace",
			"\u00a0" + v.addr:                    "contains whitespace", // no-break space
			v.addr + "\u2028":                    "contains whitespace", // line separator
			"\u3000" + v.addr:                    "contains whitespace", // ideographic space
			v.addr + "\x00":                      "non-printable",
			v.addr[:mid] + "\x00" + v.addr[mid:]: "non-printable",
			v.addr + "\xff":                      "non-printable",
			v.addr[:mid] + "\xc3" + v.addr[mid:]: "non-printable",
			"\ufeff" + v.addr:                    "non-printable", // byte order mark
			v.addr + "\u200b":                    "non-printable", // zero-width space
			v.addr + "\x7f":                      "non-printable",
			"":                                   "empty",
			strings.Repeat(v.addr, 1+MaxLen/len(v.addr)): "too long",
			strings.Repeat("1", 1<<20):                   "too long",
		}
		for in, want := range cases {
			checkResult(t, v.network, clip(in, 40), Validate(v.network, in), want)
		}
	}
}

// TestErrorMessages pins the wording callers show to users.
func TestErrorMessages(t *testing.T) {
	for _, c := range []struct {
		network, addr, want string
	}{
		{"BTC", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNb", "invalid address: bad checksum"},
		{"BTC", "bc1zw508d6qejxtdg4y5r3zarvaryvaxxpcs", "invalid address: unsupported witness version 2"},
		{"ETH", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD", "invalid address: bad checksum"},
		{"TON", "EQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPrHG", "invalid address: bad checksum"},
		{"XRP", "rrrrrrrrrrrrrrrrrrrrrhoLvTp", "invalid address: black-hole account ACCOUNT_ZERO"},
		{"SOL", "", "invalid address: empty"},
		{"DOGE", " DH5yaieqoZN36fDVciNyRueRGvGLR3mr7L", "invalid address: contains whitespace"},
		{"FOO", "x", `unknown network "FOO"`},
	} {
		err := Validate(c.network, c.addr)
		if err == nil || err.Error() != c.want {
			t.Errorf("Validate(%s, %s) = %v, want %q", c.network, c.addr, err, c.want)
		}
	}
}
