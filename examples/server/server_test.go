package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// TestMain lets a test run this binary as the real program (main, signals
// and exit code included): with PAYOUTKIT_TEST_MAIN=1 it is the server.
func TestMain(m *testing.M) {
	if os.Getenv("PAYOUTKIT_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	passwordCost = bcrypt.MinCost // staff passwords: fast hashes in tests
	os.Exit(m.Run())
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// server is serve running in-process.
type server struct {
	url            string
	stdout, stderr *syncBuffer
	stop           context.CancelFunc
	done           chan error
}

var listenMu sync.Mutex // serializes use of the listening hook

// startServer runs serve with args (plus -addr 127.0.0.1:0) until the test ends.
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	listenMu.Lock()
	addrs := make(chan net.Addr, 1)
	listening = func(a net.Addr) { addrs <- a }
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{stdout: &syncBuffer{}, stderr: &syncBuffer{}, stop: cancel, done: make(chan error, 1)}
	go func() {
		s.done <- run(ctx, append([]string{"serve", "-addr", "127.0.0.1:0"}, args...), s.stdout, s.stderr)
	}()
	select {
	case a := <-addrs:
		s.url = "http://" + a.String()
	case err := <-s.done:
		listenMu.Unlock()
		t.Fatalf("serve returned %v before listening; stderr:\n%s", err, s.stderr)
	case <-time.After(30 * time.Second):
		listenMu.Unlock()
		t.Fatalf("serve did not listen; stderr:\n%s", s.stderr)
	}
	listening = nil
	listenMu.Unlock()
	t.Cleanup(func() { s.shutdown(t) })
	return s
}

// shutdown stops the server and checks that serve returned nil.
func (s *server) shutdown(t *testing.T) {
	t.Helper()
	if s.done == nil {
		return
	}
	s.stop()
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("serve returned %v; stderr:\n%s", err, s.stderr)
		}
	case <-time.After(40 * time.Second):
		t.Errorf("serve did not stop")
	}
	s.done = nil
}

// command runs one admin command and returns its stdout.
func command(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, &stdout, &stderr)
	if err != nil && stdout.Len() != 0 {
		t.Errorf("%v failed but printed %q", args, stdout.String())
	}
	return stdout.String(), err
}

func mustCommand(t *testing.T, args ...string) string {
	t.Helper()
	out, err := command(t, args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return out
}

// call sends one request with key and decodes the envelope.
func call(t *testing.T, method, url, key, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp.StatusCode, env
}

func code(env map[string]any) int {
	c, _ := env["code"].(float64)
	return int(c)
}

func decodeObject(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("not one JSON object: %q: %v", s, err)
	}
	if dec.More() {
		t.Fatalf("more than one JSON value: %q", s)
	}
	return m
}

func wantKeys(t *testing.T, m map[string]any, keys ...string) {
	t.Helper()
	if len(m) != len(keys) {
		t.Fatalf("members %v, want %v", m, keys)
	}
	for _, k := range keys {
		if s, ok := m[k].(string); !ok || s == "" {
			t.Fatalf("member %q = %v in %v", k, m[k], m)
		}
	}
}

// serverWithKey starts serve on a new database (with extra args) and returns
// it with the API key that the first serve prints.
func serverWithKey(t *testing.T, args ...string) (*server, string) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "payoutkit.db")
	s := startServer(t, append([]string{"-db", db}, args...)...)
	return s, decodeObject(t, s.stdout.String())["api_key"].(string)
}

func TestFirstServeBootstrapsOnce(t *testing.T) {
	db := filepath.Join(t.TempDir(), "payoutkit.db")
	s := startServer(t, "-db", db)
	first := decodeObject(t, s.stdout.String())
	wantKeys(t, first, "workspace_id", "api_key", "webhook_secret", "staff_email", "staff_password")
	key := first["api_key"].(string)
	if st, env := call(t, "GET", s.url+"/v1/balance", key, ""); st != 200 || code(env) != 0 {
		t.Fatalf("balance with the printed key: %d %v", st, env)
	}
	if strings.Contains(s.stderr.String(), key) || strings.Contains(s.stderr.String(), first["staff_password"].(string)) {
		t.Fatal("a secret reached the logs")
	}
	s.shutdown(t)

	again := startServer(t, "-db", db)
	if out := again.stdout.String(); out != "" {
		t.Fatalf("second serve printed %q", out)
	}
	if st, _ := call(t, "GET", again.url+"/v1/balance", key, ""); st != 200 {
		t.Fatalf("key after restart: %d", st)
	}
}

func TestAdminCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "admin.db")
	ws := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "Acme", "-webhook-url", "http://127.0.0.1:9/hook"))
	wantKeys(t, ws, "workspace_id", "api_key", "webhook_secret", "staff_email", "staff_password")
	wsID, key1 := ws["workspace_id"].(string), ws["api_key"].(string)

	s := startServer(t, "-db", db)
	if out := s.stdout.String(); out != "" {
		t.Fatalf("serve on a non-empty database printed %q", out)
	}
	balance := func(key string) int {
		_, env := call(t, "GET", s.url+"/v1/balance", key, "")
		return code(env)
	}
	if c := balance(key1); c != 0 {
		t.Fatalf("first key: %d", c)
	}

	k2 := decodeObject(t, mustCommand(t, "keys", "create", "-db", db, "-workspace", wsID))
	wantNewKey(t, k2, []any{"orders:write", "payouts:write"}, []any{})
	key2, prefix2 := k2["api_key"].(string), k2["prefix"].(string)
	if c := balance(key2); c != 0 {
		t.Fatalf("created key: %d", c)
	}

	var list []map[string]any
	if err := json.Unmarshal([]byte(mustCommand(t, "keys", "list", "-db", db, "-workspace", wsID)), &list); err != nil || len(list) != 2 {
		t.Fatalf("keys list: %v %v", list, err)
	}
	for _, k := range list {
		if len(k) != 6 || k["prefix"] == nil || k["created_at"] == nil || k["revoked_at"] != nil ||
			fmt.Sprint(k["scopes"]) != "[orders:write payouts:write]" || fmt.Sprint(k["allow_ips"]) != "[]" {
			t.Fatalf("keys list row %v", k)
		}
		if _, ok := k["last_used_at"]; !ok {
			t.Fatalf("keys list row %v", k)
		}
		if strings.Contains(fmt.Sprint(k), "sk_") {
			t.Fatalf("keys list shows a key: %v", k)
		}
	}

	rev := decodeObject(t, mustCommand(t, "keys", "revoke", "-db", db, "-workspace", wsID, "-prefix", prefix2))
	if rev["revoked"] != float64(1) || len(rev) != 1 {
		t.Fatalf("revoke printed %v", rev)
	}
	if c := balance(key2); c != 40100 {
		t.Fatalf("revoked key on the next request: %d", c)
	}
	if c := balance(key1); c != 0 {
		t.Fatalf("other key after revoke: %d", c)
	}

	k3 := decodeObject(t, mustCommand(t, "keys", "reset", "-db", db, "-workspace", wsID))
	wantKeys(t, k3, "api_key", "prefix")
	if c := balance(key1); c != 40100 {
		t.Fatalf("old key after reset: %d", c)
	}
	if c := balance(k3["api_key"].(string)); c != 0 {
		t.Fatalf("reset key: %d", c)
	}

	wh := decodeObject(t, mustCommand(t, "webhook", "set", "-db", db, "-workspace", wsID, "-url", "https://example.com/hooks"))
	if wh["webhook_url"] != "https://example.com/hooks" || wh["workspace_id"] != wsID {
		t.Fatalf("webhook set printed %v", wh)
	}
	rot := decodeObject(t, mustCommand(t, "webhook", "rotate-secret", "-db", db, "-workspace", wsID))
	if s, _ := rot["webhook_secret"].(string); !strings.HasPrefix(s, "whsec_") || s == ws["webhook_secret"] {
		t.Fatalf("rotate-secret printed %v", rot)
	}

	// Failures print nothing on stdout and return an error.
	for _, args := range [][]string{
		{"workspace", "create", "-db", db},
		{"workspace", "create", "-db", db, "-name", "x", "-webhook-url", "ftp://x"},
		{"keys", "create", "-db", db},
		{"keys", "create", "-db", db, "-workspace", "ws_nope"},
		{"keys", "revoke", "-db", db, "-workspace", wsID},
		{"keys", "revoke", "-db", db, "-workspace", wsID, "-prefix", "short"},
		{"keys", "list", "-db", db, "-workspace", "ws_nope"},
		{"webhook", "set", "-db", db, "-workspace", wsID, "-url", "not a url"},
		{"keys", "frobnicate"},
		{"frobnicate"},
		{"serve", "-rate-limit", "-1"},
		{"serve", "-rate-limit", "NaN"},
		{"serve", "-rate-limit", "1e-300"},
		{"serve", "-rate-limit", "+Inf"},
		{"serve", "-log-format", "xml"},
		{"serve", "-event-retention", "0s"},
		{"serve", "-sandbox-settle-after", "-1s"},
		{"serve", "extra"},
	} {
		if _, err := command(t, args...); err == nil {
			t.Errorf("%v succeeded", args)
		}
	}
}

func TestEnvironmentFlags(t *testing.T) {
	db := filepath.Join(t.TempDir(), "env.db")
	key := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "env"))["api_key"].(string)
	t.Setenv("PAYOUTKIT_DB", db)
	t.Setenv("PAYOUTKIT_SANDBOX", "false")
	t.Setenv("PAYOUTKIT_RATE_LIMIT", "1")
	s := startServer(t)
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("PAYOUTKIT_DB not used: %v", err)
	}
	if st, env := call(t, "POST", s.url+"/v1/sandbox/orders/pay", key, `{"order_id":"x"}`); st != 404 || code(env) != 40400 {
		t.Fatalf("sandbox endpoint with PAYOUTKIT_SANDBOX=false: %d %v", st, env)
	}
	call(t, "GET", s.url+"/v1/balance", key, "")
	if _, env := call(t, "GET", s.url+"/v1/balance", key, ""); code(env) != 42900 {
		t.Fatalf("second request within a second with PAYOUTKIT_RATE_LIMIT=1: %v", env)
	}
	s.shutdown(t)

	// A flag on the command line wins over the environment.
	s = startServer(t, "-sandbox=true", "-rate-limit", "0")
	if _, env := call(t, "POST", s.url+"/v1/sandbox/orders/pay", key, `{"order_id":"x"}`); code(env) != 40400 || !strings.Contains(env["message"].(string), "order") {
		t.Fatalf("sandbox endpoint with -sandbox=true: %v", env)
	}
	if _, env := call(t, "GET", s.url+"/v1/balance", key, ""); code(env) != 0 {
		t.Fatalf("with -rate-limit 0: %v", env)
	}
	s.shutdown(t)

	t.Setenv("PAYOUTKIT_SANDBOX_SETTLE_AFTER", "soon")
	if _, err := command(t, "serve"); err == nil || !strings.Contains(err.Error(), "PAYOUTKIT_SANDBOX_SETTLE_AFTER") {
		t.Fatalf("bad environment value: %v", err)
	}
}

func TestSandboxSettleAfter(t *testing.T) {
	s, key := serverWithKey(t, "-sandbox-settle-after", "50ms")
	call(t, "POST", s.url+"/v1/orders", key, `{"order_id":"o1","amount":"10"}`)
	call(t, "POST", s.url+"/v1/sandbox/orders/pay", key, `{"order_id":"o1"}`)
	_, env := call(t, "POST", s.url+"/v1/payouts", key, `{"payout_id":"p1","amount":"4","asset":"USDT","network":"TRON","address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","payer_id":"c"}`)
	if code(env) != 0 {
		t.Fatalf("payout: %v", env)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, env := call(t, "POST", s.url+"/v1/payouts/info", key, `{"payout_id":"p1"}`)
		data, _ := env["data"].(map[string]any)
		if data["status"] == "completed" {
			if txid, _ := data["txid"].(string); txid == "" {
				t.Fatalf("completed without txid: %v", data)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("payout not settled by itself: %v", data)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// In-flight requests finish when serve is told to stop.
func TestShutdownDrainsInFlightRequests(t *testing.T) {
	s, key := serverWithKey(t)

	pr, pw := io.Pipe()
	req, err := http.NewRequest("POST", s.url+"/v1/orders", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	type result struct {
		status int
		body   string
		err    error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- result{status: resp.StatusCode, body: string(b)}
	}()
	if _, err := pw.Write([]byte(`{"order_id":"drain-1",`)); err != nil {
		t.Fatal(err)
	}
	// The connection is accepted and its request begun; Shutdown waits for
	// it (a new connection counts as idle only after 5 s).
	time.Sleep(100 * time.Millisecond)
	s.stop()
	waitFor(t, func() bool { return strings.Contains(s.stderr.String(), "shutting down") })
	if _, err := pw.Write([]byte(`"amount":"1.00"}`)); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	r := <-got
	if r.err != nil || r.status != 200 || !strings.Contains(r.body, `"drain-1"`) {
		t.Fatalf("in-flight request: %+v", r)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
		s.done = nil
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return after draining")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The real program exits 0 on SIGTERM, and non-zero on a failure.
func TestSIGTERMExitsZero(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the program in a child process")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mustCommand(t, "workspace", "create", "-db", filepath.Join(dir, "sig.db"), "-name", "sig")
	cmd := exec.Command(exe, "serve", "-addr", "127.0.0.1:0", "-db", filepath.Join(dir, "sig.db"))
	cmd.Env = append(os.Environ(), "PAYOUTKIT_TEST_MAIN=1")
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(stderr.String(), `"msg":"serving"`) }) // JSON lines by default
	time.Sleep(50 * time.Millisecond)                                                       // let it reach the signal wait
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v; stderr:\n%s", err, stderr.String())
	}

	bad := exec.Command(exe, "keys", "list", "-db", filepath.Join(dir, "sig.db"))
	bad.Env = append(os.Environ(), "PAYOUTKIT_TEST_MAIN=1")
	var out bytes.Buffer
	bad.Stdout = &out
	err = bad.Run()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() == 0 || out.Len() != 0 {
		t.Fatalf("failing command: %v, stdout %q", err, out.String())
	}
}
