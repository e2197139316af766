// Package textcheck holds the rule for the free-text fields of requests
// (payer_id, txid, labels, names), which the engine and the sandbox rail
// both apply.
package textcheck

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxText is the length limit of free-text fields such as payer_id, in
// characters.
const MaxText = 128

// Problem returns what is wrong with s as a free-text field, as the field
// error's message ("is required"), or "" when s is 1 to maxLen characters
// (0 when optional) of valid UTF-8 without control characters, format
// characters (bidi overrides, zero-width ones) or U+FFFD.
func Problem(s string, required bool, maxLen int) string {
	switch {
	case s == "" && required:
		return "is required"
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	case len(s) > maxLen && utf8.RuneCountInString(s) > maxLen:
		return fmt.Sprintf("must be at most %d characters", maxLen)
	case hasControl(s):
		return "must not contain control characters"
	case hasInvisible(s):
		return "must not contain invisible or bidirectional formatting characters, or U+FFFD"
	}
	return ""
}

// hasInvisible reports format characters (zero-width spaces and joiners,
// bidirectional overrides such as U+202E, the byte order mark), which could
// make a page or a log line read other than it is, and U+FFFD, which is what
// a lone surrogate in the request's JSON decodes to.
func hasInvisible(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Cf, r) || r == utf8.RuneError })
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
}

// UpperASCII upper-cases the ASCII letters of s and nothing else: tickers
// and networks match case-insensitively in ASCII only, so that no Unicode
// look-alike ("Uſdt", whose ſ folds to s) names a coin.
func UpperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
