package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// TestReadReplica runs serve -read-db on a real standby: a payout created
// on the primary appears on the portal's withdrawals page, read from the
// standby, whose footer says so; with the standby's replay paused, the
// pages lag but /v1's money answers stay exact, from the primary.
func TestReadReplica(t *testing.T) {
	c := pgtest.StartCluster(t, pgtest.ClusterOptions{})
	c.CreateDatabase("payoutkit")
	s := startServer(t, "-db", c.Primary.DSN("payoutkit"), "-read-db", c.Standby.DSN("payoutkit"),
		"-credentials-file", filepath.Join(t.TempDir(), "credentials.json"))
	first := decodeObject(t, s.stdout.String())
	key, email, password := first["api_key"].(string), first["staff_email"].(string), first["staff_password"].(string)
	fund(t, s.url, key, "fund", "100.00")

	create := func(id string) {
		t.Helper()
		st, env := postJSON(s.url+"/v1/payouts", key, fmt.Sprintf(
			`{"payout_id":%q,"amount":"10.00","asset":"USDT","network":"TRON","address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","payer_id":"c1"}`, id))
		if st != http.StatusOK || env.Code != 0 {
			t.Fatalf("creating %s: %d %+v", id, st, env)
		}
	}
	balance := func() string {
		t.Helper()
		st, env := call(t, http.MethodGet, s.url+"/v1/balance", key, "")
		if st != http.StatusOK {
			t.Fatalf("GET /v1/balance: %d %v", st, env)
		}
		return env["data"].(map[string]any)["available"].(string)
	}
	staff := newStaffClient(t)
	staff.signIn(s.url, email, password)
	page := func() string {
		t.Helper()
		st, body := staff.get(s.url + "/withdrawals")
		if st != http.StatusOK {
			t.Fatalf("GET /withdrawals: %d", st)
		}
		return body
	}

	create("replica-1")
	// The standby applies the commit a moment after it acknowledged it.
	deadline := time.Now().Add(10 * time.Second)
	for body := page(); !strings.Contains(body, "replica-1"); body = page() {
		if time.Now().After(deadline) {
			t.Fatalf("the payout never reached the withdrawals page read from the standby:\n%s", body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if body := page(); !strings.Contains(body, `data-testid="standby-note"`) {
		t.Error("the page read from a standby does not say so")
	}

	// Replay paused: the page lags, the money does not.
	c.PauseReplay(true)
	defer c.PauseReplay(false)
	create("replica-2")
	if got := balance(); got != "80.00" {
		t.Errorf("available %s with the standby's replay paused; want 80.00 from the primary", got)
	}
	if body := page(); strings.Contains(body, "replica-2") {
		t.Error("the withdrawals page shows a payout the paused standby has not replayed: it does not read from the standby")
	}
	st, env := call(t, http.MethodPost, s.url+"/v1/payouts/info", key, `{"payout_id":"replica-2"}`)
	if st != http.StatusOK || code(env) != 0 {
		t.Errorf("payout info of a payout the standby has not replayed: %d %v; want it from the primary", st, env)
	}
}
