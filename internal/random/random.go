// Package random makes the random strings of ids, keys and passwords.
package random

import (
	"crypto/rand"
	"time"
)

const base62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// Base62 returns n characters of [A-Za-z0-9] from crypto/rand, each
// uniform (bytes at or above 248 are redrawn, so no character is favoured).
func Base62(n int) string {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4+8)
	for len(out) < n {
		rand.Read(buf) // never returns an error; crashes the program if the OS fails
		for _, b := range buf {
			if b < 248 && len(out) < n {
				out = append(out, base62[b%62])
			}
		}
	}
	return string(out)
}

// sortedBase62 is base62 in ASCII order, so that encoded numbers sort as
// strings.
const sortedBase62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// TimeOrderedID returns 24 characters: at's Unix milliseconds in 8 sortable
// base62 characters, then 16 random ones (95 bits). Ids made later sort
// later, so the unique index on them grows at its right edge: a batch of
// inserts dirties a page or two of it instead of one page per id, which is
// most of what a commit writes for an index of random ids.
func TimeOrderedID(at time.Time) string {
	ms := max(at.UnixMilli(), 0)
	var prefix [8]byte
	for i := len(prefix) - 1; i >= 0; i-- {
		prefix[i] = sortedBase62[ms%62]
		ms /= 62
	}
	return string(prefix[:]) + Base62(16)
}
