package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

// The program migrates its table and payoutkit's with its own migrator,
// keeps the committed request with its payout, and drops the rolled-back
// one with its payout, saying what each step shows with every amount's
// currency. Run twice in a row, both runs succeed: on a fresh database each
// time by default, and on one kept database (-db), where the second run
// has nothing to migrate and numbers its requests after the first's.
func TestBunApp(t *testing.T) {
	// Nothing reaches the default logger: the program is quiet.
	var logged bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))

	want := func(out string, lines ...string) {
		t.Helper()
		for _, l := range lines {
			if !strings.Contains(out, l) {
				t.Errorf("output lacks %q:\n%s", l, out)
			}
		}
		if strings.Contains(out, "USDT to") || strings.Contains(out, ".00 USDT") {
			t.Errorf("a USD amount is printed as USDT:\n%s", out)
		}
	}
	common := []string{
		"payout po-1 is submitted: 25.00 USD, paid out as USDT on TRON to TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t\n",
		"6. the rolled-back half: payout po-2: payout not found (expected: it rolled back with its request, so neither exists)\n",
		"7. balance: available 75.00 USD, in progress 25.00 USD",
		"5. the committed half: 1 of the 2 requests is in the program's table",
	}
	// Its own migration and every one of payoutkit's SQLite schema, the
	// latest last.
	ours, err := filepath.Glob("../../storage/sqlite/migrations/*.sql")
	if err != nil || len(ours) == 0 {
		t.Fatalf("payoutkit's SQLite migrations: %v, %v", ours, err)
	}
	latest := strings.TrimSuffix(filepath.Base(ours[len(ours)-1]), ".sql")
	applied := fmt.Sprintf("group #1 (%d migrations (20261101000000_withdrawal_requests ... payoutkit_%s))\n", len(ours)+1, latest)
	for run1 := range 2 {
		var out strings.Builder
		if err := run(t.Context(), "", &out); err != nil {
			t.Fatalf("run %d on a fresh database: %v\n%s", run1+1, err, out.String())
		}
		want(out.String(), append([]string{
			"database: a fresh SQLite file in a temporary directory",
			"1. migrations: the program's migrator applied its own table and payoutkit's schema: " + applied,
		}, common...)...)
	}

	path := filepath.Join(t.TempDir(), "app.db")
	var out strings.Builder
	if err := run(t.Context(), path, &out); err != nil {
		t.Fatalf("first run on %s: %v\n%s", path, err, out.String())
	}
	want(out.String(), common...)
	out.Reset()
	if err := run(t.Context(), path, &out); err != nil {
		t.Fatalf("second run on %s: %v\n%s", path, err, out.String())
	}
	want(out.String(),
		"1. migrations: the program's migrator found its table and payoutkit's up to date\n",
		"payout po-3 is submitted: 25.00 USD",
		"payout po-4: payout not found",
		"7. balance: available 75.00 USD, in progress 25.00 USD",
	)
	if logged.Len() != 0 {
		t.Errorf("the program logged:\n%s", logged.String())
	}
}
