package delivery

import (
	"strings"
	"unicode/utf8"
)

// CleanText returns b as valid UTF-8 without NUL bytes, cut to at most limit
// bytes on a character boundary, so that any database stores it: a
// receiver's answer, an attempt's error.
func CleanText(b []byte, limit int) string {
	s := strings.ToValidUTF8(string(b[:min(len(b), limit+utf8.UTFMax)]), "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "")
	for len(s) > limit {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}
