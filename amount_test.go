package payoutkit

import (
	"encoding/json"
	"regexp"
	"strconv"
	"testing"
)

func TestParseAmount(t *testing.T) {
	valid := map[string]Amount{
		"1": 100, "25": 2500, "25.5": 2550, "25.50": 2550, "0.01": 1, "0.1": 10, "007.00": 700,
		"1000000000": MaxAmount, "1000000000.00": MaxAmount, "999999999.99": MaxAmount - 1,
		"0000000000001.00": 100,
	}
	for s, want := range valid {
		got, err := ParseAmount(s)
		if err != nil || got != want {
			t.Errorf("ParseAmount(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	invalid := map[string]error{
		"": errAmountFormat, " 1": errAmountFormat, "1 ": errAmountFormat, "+1": errAmountFormat,
		"-1": errAmountFormat, "1e2": errAmountFormat, "1.": errAmountFormat, ".5": errAmountFormat,
		"1.005": errAmountFormat, "1,00": errAmountFormat, "１": errAmountFormat, "0x10": errAmountFormat,
		"NaN": errAmountFormat, "1.2.3": errAmountFormat, "1.-1": errAmountFormat,
		"0": errAmountZero, "0.00": errAmountZero, "000.0": errAmountZero,
		"1000000000.01": errAmountTooLarge, "99999999999": errAmountTooLarge,
		"99999999999999999999999999": errAmountTooLarge,
	}
	for s, want := range invalid {
		if got, err := ParseAmount(s); err != want {
			t.Errorf("ParseAmount(%q) = %d, %v; want %v", s, got, err, want)
		}
	}
}

func TestAmountString(t *testing.T) {
	for a, want := range map[Amount]string{0: "0.00", 1: "0.01", 10: "0.10", 2500: "25.00", -310: "-3.10", MaxAmount: "1000000000.00"} {
		if got := a.String(); got != want {
			t.Errorf("Amount(%d).String() = %q; want %q", a, got, want)
		}
	}
}

func TestAmountJSON(t *testing.T) {
	b, err := json.Marshal(struct{ A Amount }{2550})
	if err != nil || string(b) != `{"A":"25.50"}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	var v struct{ A Amount }
	if err := json.Unmarshal([]byte(`{"A":"7.5"}`), &v); err != nil || v.A != 750 {
		t.Fatalf("Unmarshal string = %d, %v", v.A, err)
	}
	for _, in := range []string{`{"A":7.5}`, `{"A":null}`, `{"A":"1e3"}`, `{"A":true}`} {
		if err := json.Unmarshal([]byte(in), &v); err == nil {
			t.Errorf("Unmarshal(%s) accepted", in)
		}
	}
}

// amountPattern is the contract's amount syntax, used as the fuzz oracle.
var amountPattern = regexp.MustCompile(`^[0-9]+(\.[0-9]{1,2})?$`)

func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"25.00", "0.01", "1000000000.00", "1000000000.01", "0", "-1", "1e3", "1.005", " 1", "00000000000000000001", "１"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAmount(s)
		if !amountPattern.MatchString(s) {
			if err == nil {
				t.Fatalf("ParseAmount(%q) accepted input outside the contract's syntax", s)
			}
			return
		}
		if err != nil {
			// Only range errors are allowed for well-formed input.
			if err != errAmountZero && err != errAmountTooLarge {
				t.Fatalf("ParseAmount(%q) = %v for well-formed input", s, err)
			}
			return
		}
		if a <= 0 || a > MaxAmount {
			t.Fatalf("ParseAmount(%q) = %d out of range", s, a)
		}
		// Round trip: the rendering parses back to the same amount.
		back, err := ParseAmount(a.String())
		if err != nil || back != a {
			t.Fatalf("ParseAmount(%q) = %d renders %q which parses to %d, %v", s, a, a.String(), back, err)
		}
		// Cross-check against strconv on the integer and fraction.
		f, _ := strconv.ParseFloat(s, 64)
		if d := f*100 - float64(a); d > 0.5 || d < -0.5 {
			t.Fatalf("ParseAmount(%q) = %d, far from %v", s, a, f)
		}
	})
}
