package portal

import (
	"net/url"
	"strings"
	"testing"
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
