package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// -auth-failure-limit refuses an address after that many failed
// authentications in a minute, with 42900 and Retry-After; 0 turns it off.
func TestAuthFailureLimitFlag(t *testing.T) {
	db := filepath.Join(t.TempDir(), "payoutkit.db")
	key := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "limits"))["api_key"].(string)
	unknown := "sk_ZZZZZZZZ_" + strings.Repeat("b", 32)
	get := func(url, k string) (int, string) { // status, Retry-After
		t.Helper()
		req, _ := http.NewRequest("GET", url+"/v1/balance", nil)
		req.Header.Set("Authorization", "Bearer "+k)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	s := startServer(t, "-db", db, "-auth-failure-limit", "2")
	for range 2 {
		if st, _ := get(s.url, unknown); st != 401 {
			t.Fatalf("failure: %d", st)
		}
	}
	if st, ra := get(s.url, key); st != 429 || ra != "30" {
		t.Fatalf("after 2 failures: %d, Retry-After %q", st, ra)
	}
	s.shutdown(t)

	s = startServer(t, "-db", db, "-auth-failure-limit", "0")
	for range 25 {
		if st, _ := get(s.url, unknown); st != 401 {
			t.Fatalf("with the limit off: %d", st)
		}
	}
	if st, _ := get(s.url, key); st != 200 {
		t.Fatalf("valid key with the limit off: %d", st)
	}
	if _, err := command(t, "serve", "-db", db, "-auth-failure-limit", "-1"); err == nil {
		t.Fatal("a negative -auth-failure-limit was accepted")
	}
}
