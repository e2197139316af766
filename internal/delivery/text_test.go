package delivery

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanText(t *testing.T) {
	const limit = 256
	for _, c := range []struct{ in, want string }{
		{strings.Repeat("x", 1000), strings.Repeat("x", 256)},
		{"ok\x00done", "okdone"},
		{"bad \xff\xfe bytes", "bad \uFFFD bytes"},
		{strings.Repeat("x", 255) + "é", strings.Repeat("x", 255)}, // never half a character
	} {
		got := CleanText([]byte(c.in), limit)
		if got != c.want || !utf8.ValidString(got) || len(got) > limit {
			t.Errorf("CleanText(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}
