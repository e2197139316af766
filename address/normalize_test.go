package address

import "testing"

func TestNormalize(t *testing.T) {
	for _, c := range []struct{ network, a, b string }{
		{"ETH", "0x52908400098527886E0F7030069857D2E4169EE7", "0x52908400098527886e0f7030069857d2e4169ee7"},
		{"BTC", "BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"},
		{"TON", "EQDKbjIcfM6ezt8KjKJJLshZJJSqX7XOA4ff-W72r5gqPrHF", "0:ca6e321c7cce9ecedf0a8ca2492ec8592494aa5fb5ce0387dff96ef6af982a3e"},
		{"TON", "0:CA6E321C7CCE9ECEDF0A8CA2492EC8592494AA5FB5CE0387DFF96EF6AF982A3E", "0:ca6e321c7cce9ecedf0a8ca2492ec8592494aa5fb5ce0387dff96ef6af982a3e"},
		{"TON", "Ef8zMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzM0vF", "-1:3333333333333333333333333333333333333333333333333333333333333333"},
	} {
		na, err := Normalize(c.network, c.a)
		if err != nil {
			t.Fatalf("Normalize(%s, %s): %v", c.network, c.a, err)
		}
		nb, err := Normalize(c.network, c.b)
		if err != nil {
			t.Fatalf("Normalize(%s, %s): %v", c.network, c.b, err)
		}
		if na != nb {
			t.Errorf("%s: %q and %q normalise to %q and %q", c.network, c.a, c.b, na, nb)
		}
	}
	// Base58 addresses keep their case: another case is another address
	// (or none).
	const tron = "TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL"
	if n, err := Normalize("TRON", tron); err != nil || n != tron {
		t.Errorf("Normalize(TRON) = %q, %v", n, err)
	}
	if _, err := Normalize("ETH", "0xnot"); err == nil {
		t.Error("an invalid address normalised")
	}
}
