package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The program migrates its table and payoutkit's with its own migrator,
// keeps the committed request with its payout, and drops the rolled-back
// one with its payout. Run again on the same database, its migrator has
// nothing left to do.
func TestBunApp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	var out strings.Builder
	if err := run(t.Context(), path, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"migrated: group #1 (12 migrations (20261101000000_withdrawal_requests ... payoutkit_0011_staff_security))\n",
		"requests kept: 1\n",
		"payout po-1: submitted, 25.00 USDT to TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t\n",
		"payout po-2: payout not found\n",
		"balance: available 75.00, in progress 25.00\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	out.Reset()
	// Again on the same database: nothing left to migrate, and the
	// program's own unique request id refuses the repeated request (and,
	// in the same transaction, its payout).
	err := run(t.Context(), path, &out)
	if !strings.Contains(out.String(), "migrated: nil\n") {
		t.Errorf("a second migration did something:\n%s", out.String())
	}
	if err == nil || !strings.Contains(err.Error(), "UNIQUE constraint failed: withdrawal_requests.") {
		t.Errorf("second run: %v; want the repeated request refused", err)
	}
}
