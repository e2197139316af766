package portal

import (
	"net/url"
	"strings"
	"testing"
	"unicode"
)

// FuzzLocalPath checks that a sign-in's next target is always a path on
// this site: whatever comes in, what comes out starts with one "/", and a
// browser resolving it against this site stays on this site.
func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{"/", "/withdrawals?status=failed", "//evil.example", "/\\evil.example", "https://evil.example/",
		"javascript:alert(1)", "/%2F%2Fevil.example", "/\t/evil.example", "\x00/", "/a/../../b", "/@evil.example", "%2F%2Fevil"} {
		f.Add(s)
	}
	base, _ := url.Parse("https://portal.example/login")
	f.Fuzz(func(t *testing.T, next string) {
		got := localPath(next)
		if got != "/" && got != next {
			t.Fatalf("localPath(%q) = %q: neither the input nor /", next, got)
		}
		if !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.ContainsAny(got, "\\\x00\r\n\t") {
			t.Fatalf("localPath(%q) = %q", next, got)
		}
		u, err := base.Parse(got)
		if err != nil || u.Host != base.Host || u.Scheme != base.Scheme {
			t.Fatalf("localPath(%q) = %q resolves to %v (%v)", next, got, u, err)
		}
	})
}

// FuzzNeutralise checks the export's formula rule: a cell comes out as it
// went in or with one leading apostrophe, and whichever way a spreadsheet
// trims leading blanks from what comes out, it never starts with =, +, -
// or @, nor does the cell itself start with a tab or a carriage return,
// unless the apostrophe is there.
func FuzzNeutralise(f *testing.F) {
	for _, s := range []string{"", "=1+1", " =1+2", "\t=1", "\r\n@x", "\u00a0-1", "\u3000+1", "\u200b=1", "\ufeff@x",
		"cust-42", " plain", "'=1", "\xff=1", "\x00=1", " \u2028=1"} {
		f.Add(s)
	}
	// The ways a spreadsheet may trim a cell: Go's white space, a trim
	// of everything up to the space character (Java's String.trim), and
	// LibreOffice's (control characters, U+2000 to U+200B, U+2028, U+2029).
	trims := map[string]func(rune) bool{
		"unicode.IsSpace": unicode.IsSpace,
		"<= U+0020":       func(r rune) bool { return r <= ' ' },
		"LibreOffice": func(r rune) bool {
			return r <= ' ' || r >= 0x2000 && r <= 0x200b || r == 0x2028 || r == 0x2029
		},
	}
	f.Fuzz(func(t *testing.T, cell string) {
		got := neutralise(cell)
		if got != cell && got != "'"+cell {
			t.Fatalf("neutralise(%q) = %q: neither the cell nor the cell after an apostrophe", cell, got)
		}
		if neutralise(got) != got {
			t.Fatalf("neutralise(%q) = %q, which it would change again", cell, got)
		}
		if got != cell {
			return
		}
		if cell != "" && strings.IndexByte("=+-@\t\r", cell[0]) >= 0 {
			t.Fatalf("neutralise(%q) left a cell that starts with %q", cell, cell[0])
		}
		for name, blank := range trims {
			if s := strings.TrimLeftFunc(cell, blank); s != "" && strings.IndexByte("=+-@", s[0]) >= 0 {
				t.Fatalf("neutralise(%q) left a cell that starts with %q once trimmed (%s)", cell, s[0], name)
			}
		}
	})
}
