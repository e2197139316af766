package textcheck

import (
	"strings"
	"testing"
)

func TestProblem(t *testing.T) {
	for _, c := range []struct {
		s        string
		required bool
		want     string
	}{
		{"cust-42", true, ""},
		{"", false, ""},
		{"", true, "is required"},
		{"bad \xff", true, "must be valid UTF-8"},
		{strings.Repeat("é", MaxText), true, ""}, // characters, not bytes
		{strings.Repeat("x", MaxText+1), true, "must be at most 128 characters"},
		{"tab\there", true, "must not contain control characters"},
		{"c1 \u0085", true, "must not contain control characters"},
		{"zero\u200bwidth", true, "must not contain invisible or bidirectional formatting characters, or U+FFFD"},
		{"rtl \u202e", true, "must not contain invisible or bidirectional formatting characters, or U+FFFD"},
		{"lone \ufffd", true, "must not contain invisible or bidirectional formatting characters, or U+FFFD"},
	} {
		if got := Problem(c.s, c.required, MaxText); got != c.want {
			t.Errorf("Problem(%q, %v) = %q; want %q", c.s, c.required, got, c.want)
		}
	}
}
