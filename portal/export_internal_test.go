package portal

import "testing"

// Cells that no payout field can hold today (a tab, a carriage return)
// are neutralised all the same.
func TestNeutralise(t *testing.T) {
	for in, want := range map[string]string{
		"=1+1": "'=1+1", "+1": "'+1", "-1.00": "'-1.00", "@A1": "'@A1", "\tx": "'\tx", "\rx": "'\rx",
		"": "", "a=1": "a=1", "1.00": "1.00", "'=1": "'=1",
	} {
		if got := neutralise(in); got != want {
			t.Errorf("neutralise(%q) = %q; want %q", in, got, want)
		}
	}
}

// TestNeutraliseLeadingBlanks: a cell whose first character after
// leading blanks is a formula trigger is neutralised as if the blanks were
// not there, since an import that trims them would run it; the blanks
// stay, after the apostrophe.
func TestNeutraliseLeadingBlanks(t *testing.T) {
	for in, want := range map[string]string{
		" =1+2":           "' =1+2",
		"   +1":           "'   +1",
		" -1":             "' -1",
		" @SUM(A1)":       "' @SUM(A1)",
		"\n=1":            "'\n=1",
		"\v=1":            "'\v=1",
		"\f=1":            "'\f=1",
		" \t =1":          "' \t =1",
		"\u00a0=1":        "'\u00a0=1", // no-break space
		"\u3000+1":        "'\u3000+1", // ideographic space
		"\u2003@x":        "'\u2003@x", // em space
		"\u200b=1":        "'\u200b=1", // zero-width space
		"\ufeff=1":        "'\ufeff=1", // byte-order mark
		"\u0085-1":        "'\u0085-1", // next line
		"\x00=1":          "'\x00=1",
		" plain =1":       " plain =1",
		"  a":             "  a",
		" ":               " ",
		"\u00a0":          "\u00a0",
		" '=1":            " '=1",
		"\xff=1":          "\xff=1", // not a blank: not UTF-8 at all
		"cust 42 =1":      "cust 42 =1",
		"\u00a0cust-42":   "\u00a0cust-42",
		" \u00a0 \t=HYP(": "' \u00a0 \t=HYP(",
	} {
		if got := neutralise(in); got != want {
			t.Errorf("neutralise(%q) = %q; want %q", in, got, want)
		}
	}
}
