package payoutkit

import "crypto/rand"

const base62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// randomBase62 returns n characters of [A-Za-z0-9] from crypto/rand, each
// uniform (bytes at or above 248 are redrawn, so no character is favoured).
func randomBase62(n int) string {
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
