package random

import (
	"strings"
	"testing"
	"time"
)

func TestTimeOrderedID(t *testing.T) {
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	prev, at := "", base
	for i := range 2000 {
		// Several ids per millisecond, and steps of every size.
		if i%3 == 0 {
			at = at.Add(time.Duration(i%7) * time.Duration(i) * time.Millisecond)
		}
		id := TimeOrderedID(at)
		if len(id) != 24 || strings.Trim(id, sortedBase62) != "" {
			t.Fatalf("id %q: want 24 characters of [0-9A-Za-z]", id)
		}
		if seen[id] {
			t.Fatalf("id %q made twice", id)
		}
		seen[id] = true
		if prev != "" && id[:8] < prev[:8] {
			t.Fatalf("id %q, made later, sorts before %q", id, prev)
		}
		prev = id
	}
	// The prefix is the time's milliseconds, in order across decades.
	a, b := TimeOrderedID(time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)), TimeOrderedID(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
	if a[:8] >= b[:8] {
		t.Fatalf("%q does not sort before %q", a, b)
	}
	if got := TimeOrderedID(time.Unix(0, 0))[:8]; got != "00000000" {
		t.Fatalf("the epoch's prefix is %q", got)
	}
}
