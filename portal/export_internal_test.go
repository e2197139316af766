package portal

import "testing"

// Cells that no payout field can hold today (a tab, a carriage return)
// are neutralised all the same.
func TestNeutralise(t *testing.T) {
	for in, want := range map[string]string{
		"=1+1": "'=1+1", "+1": "'+1", "-1.00": "'-1.00", "@A1": "'@A1", "\tx": "'\tx", "\rx": "'\rx",
		"": "", "a=1": "a=1", "1.00": "1.00", " =1": " =1", "'=1": "'=1",
	} {
		if got := neutralise(in); got != want {
			t.Errorf("neutralise(%q) = %q; want %q", in, got, want)
		}
	}
}
