package payoutkit

import (
	"strings"
	"testing"
	"time"
)

// FuzzOpenCursor feeds the list cursor decoder arbitrary text. It must never
// panic; whatever it accepts must be exactly a cursor sealed for the same
// scope (the canonical spelling, so that no second spelling of a cursor
// exists), and no cursor opens under another scope.
func FuzzOpenCursor(f *testing.F) {
	e := &Engine{cursorKey: defaultCursorKey[:]}
	from := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	scope := cursorScope("payouts", "ws_a", "submitted", "cust-1", from, time.Time{})
	other := cursorScope("payouts", "ws_b", "submitted", "cust-1", from, time.Time{})
	valid := e.sealCursor(scope, "1763805600000000.42")
	for _, s := range []string{valid, valid + "A", valid[:len(valid)-1], strings.ToUpper(valid), "", "A", "AQ", "====",
		valid[:10] + "\n" + valid[10:], valid + "=", "1.1", "\x00", strings.Repeat("A", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		pos, err := e.openCursor(scope, cursor)
		if err != nil {
			if CodeOf(err) != CodeInvalidInput {
				t.Fatalf("error %v is not a 40000", err)
			}
			return
		}
		if cursor == "" {
			if pos != "" {
				t.Fatalf("the empty cursor opened to %q", pos)
			}
			return
		}
		if again := e.sealCursor(scope, pos); again != cursor {
			t.Fatalf("%q opened to %q, which seals to %q", cursor, pos, again)
		}
		if _, err := e.openCursor(other, cursor); err == nil {
			t.Fatalf("%q opened under another workspace's scope", cursor)
		}
	})
}

func TestCursorRoundTrip(t *testing.T) {
	e := &Engine{cursorKey: []byte("k")}
	scope := cursorScope("orders", "ws", "", "", time.Time{}, time.Time{})
	c := e.sealCursor(scope, "5.7")
	if pos, err := e.openCursor(scope, c); err != nil || pos != "5.7" {
		t.Fatalf("open(seal) = %q, %v", pos, err)
	}
	if e.sealCursor(scope, "") != "" {
		t.Fatal("the end of a listing has a cursor")
	}
	// Another key, another listing, another filter: refused.
	for name, try := range map[string]func() error{
		"key": func() error {
			_, err := (&Engine{cursorKey: []byte("j")}).openCursor(scope, c)
			return err
		},
		"listing": func() error {
			_, err := e.openCursor(cursorScope("payouts", "ws", "", "", time.Time{}, time.Time{}), c)
			return err
		},
		"range": func() error {
			_, err := e.openCursor(cursorScope("orders", "ws", "", "", time.Time{}, time.Unix(1, 0)), c)
			return err
		},
	} {
		if err := try(); CodeOf(err) != CodeInvalidInput {
			t.Errorf("another %s: %v", name, err)
		}
	}
	// Scopes are unambiguous: moving text between parts changes the scope.
	if string(cursorScope("p", "ab", "", "", time.Time{}, time.Time{})) == string(cursorScope("p", "a", "b", "", time.Time{}, time.Time{})) {
		t.Fatal("ambiguous scope")
	}
}
