package cursor

import (
	"strings"
	"testing"
	"time"
)

// FuzzOpen feeds the list cursor decoder arbitrary text. It must never
// panic; whatever it accepts must be exactly a cursor sealed for the same
// scope (the canonical spelling, so that no second spelling of a cursor
// exists), and no cursor opens under another scope.
func FuzzOpen(f *testing.F) {
	key := DefaultKey[:]
	from := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	scope := Scope("payouts", "ws_a", "submitted", "cust-1", from, time.Time{})
	other := Scope("payouts", "ws_b", "submitted", "cust-1", from, time.Time{})
	valid := Seal(key, scope, "1763805600000000.42")
	for _, s := range []string{valid, valid + "A", valid[:len(valid)-1], strings.ToUpper(valid), "", "A", "AQ", "====",
		valid[:10] + "\n" + valid[10:], valid + "=", "1.1", "\x00", strings.Repeat("A", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		pos, ok := Open(key, scope, cursor)
		if !ok {
			return
		}
		if cursor == "" {
			if pos != "" {
				t.Fatalf("the empty cursor opened to %q", pos)
			}
			return
		}
		if again := Seal(key, scope, pos); again != cursor {
			t.Fatalf("%q opened to %q, which seals to %q", cursor, pos, again)
		}
		if _, ok := Open(key, other, cursor); ok {
			t.Fatalf("%q opened under another workspace's scope", cursor)
		}
	})
}

func TestRoundTrip(t *testing.T) {
	key := []byte("k")
	scope := Scope("orders", "ws", "", "", time.Time{}, time.Time{})
	c := Seal(key, scope, "5.7")
	if pos, ok := Open(key, scope, c); !ok || pos != "5.7" {
		t.Fatalf("open(seal) = %q, %v", pos, ok)
	}
	if Seal(key, scope, "") != "" {
		t.Fatal("the end of a listing has a cursor")
	}
	// Another key, another listing, another filter: refused.
	for name, try := range map[string]func() bool{
		"key": func() bool {
			_, ok := Open([]byte("j"), scope, c)
			return ok
		},
		"listing": func() bool {
			_, ok := Open(key, Scope("payouts", "ws", "", "", time.Time{}, time.Time{}), c)
			return ok
		},
		"range": func() bool {
			_, ok := Open(key, Scope("orders", "ws", "", "", time.Time{}, time.Unix(1, 0)), c)
			return ok
		},
	} {
		if try() {
			t.Errorf("another %s: opened", name)
		}
	}
	// Scopes are unambiguous: moving text between parts changes the scope.
	if string(Scope("p", "ab", "", "", time.Time{}, time.Time{})) == string(Scope("p", "a", "b", "", time.Time{}, time.Time{})) {
		t.Fatal("ambiguous scope")
	}
}

// Cursors issued before this package existed (by the root package's own
// sealing) still open: the bytes are the same.
func TestCursorsIssuedBeforeStillOpen(t *testing.T) {
	from := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for _, g := range []struct {
		key    []byte
		scope  []byte
		pos    string
		cursor string
	}{
		{DefaultKey[:], Scope("payouts", "ws_a", "submitted/approval=pending", "cust-1", from, time.Time{}), "1763805600000000.42", "ATE3NjM4MDU2MDAwMDAwMDAuNDIjLOti_OHFVJCKFRYr0Zos"},
		{DefaultKey[:], Scope("events", "ws_b", "", "", time.Time{}, time.Time{}), "1763805600123456.7", "ATE3NjM4MDU2MDAxMjM0NTYuN6Qc00AV-xjEEljUEr6ypiI"},
		{[]byte("k"), Scope("orders", "ws", "paid", "", from, from.Add(time.Hour)), "5.7", "ATUuN04B5wzNVSdGzsvAmpadO4k"},
	} {
		if got := Seal(g.key, g.scope, g.pos); got != g.cursor {
			t.Errorf("Seal(%q) = %q; want %q", g.pos, got, g.cursor)
		}
		if pos, ok := Open(g.key, g.scope, g.cursor); !ok || pos != g.pos {
			t.Errorf("Open(%q) = %q, %v; want %q", g.cursor, pos, ok, g.pos)
		}
	}
}
