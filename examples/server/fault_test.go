package main

// Fault-injection suites: the real server binary (this test binary run as
// the program, see TestMain) under a concurrent payout load while it is
// SIGKILLed, SIGTERMed, cut off from PostgreSQL, or locked out of SQLite.
// A client retries every request that got no definite answer with the same
// payout_id, as a CRM should; each suite then checks that nothing answered
// code 0 was lost, nothing exists twice, the money adds up, and that
// `server audit` exits 0.
//
// PAYOUTKIT_FAULT_FULL=1 runs the full counts (20 crashes in a row, longer
// loads); the default is small enough for CI. The PostgreSQL suites need
// PAYOUTKIT_TEST_POSTGRES (and fail without it when CI=true).

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// envFaultFull turns on the full counts of the fault suites.
const envFaultFull = "PAYOUTKIT_FAULT_FULL"

// faultFull reports whether the full counts were asked for.
func faultFull() bool { return os.Getenv(envFaultFull) == "1" }

// faultCount is full under PAYOUTKIT_FAULT_FULL=1, short otherwise.
func faultCount(short, full int) int {
	if faultFull() {
		return full
	}
	return short
}

func skipShortFault(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("fault suites run the program in child processes")
	}
}

// ---- the server as a child process ----

// proc is the real program serving in a child process.
type proc struct {
	cmd    *exec.Cmd
	url    string
	stderr *lineWatcher
	exited chan struct{} // closed once the process has been waited for
	err    error         // Wait's error, once exited
}

// lineWatcher keeps what the child writes and tells the address it serves on.
type lineWatcher struct {
	syncBuffer
	mu      sync.Mutex
	partial []byte
	addr    chan string
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.syncBuffer.Write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := w.partial[:i]
		var l struct{ Msg, Addr string }
		if json.Unmarshal(line, &l) == nil && l.Msg == "serving" && l.Addr != "" {
			select {
			case w.addr <- l.Addr:
			default:
			}
		}
		w.partial = w.partial[i+1:]
	}
	return len(p), nil
}

// programCmd returns the program (this test binary as main) with args.
func programCmd(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "PAYOUTKIT_TEST_MAIN=1")
	return cmd
}

// startProc starts `server serve -addr 127.0.0.1:0 args...` and waits until
// it serves. The process is killed when the test ends, if it still runs.
func startProc(t testing.TB, args ...string) *proc {
	t.Helper()
	return startProcEnv(t, nil, args...)
}

// startProcEnv is startProc with env added to the program's environment.
func startProcEnv(t testing.TB, env []string, args ...string) *proc {
	t.Helper()
	cmd := programCmd(t, append([]string{"serve", "-addr", "127.0.0.1:0", "-portal=false"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	p := &proc{cmd: cmd, stderr: &lineWatcher{addr: make(chan string, 1)}, exited: make(chan struct{})}
	cmd.Stdout = io.Discard
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	select {
	case a := <-p.stderr.addr:
		p.url = "http://" + a
	case <-p.exited:
		t.Fatalf("server exited before serving (%v); stderr:\n%s", p.err, p.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not serve within 60s; stderr:\n%s", p.stderr.String())
	}
	return p
}

// crashed waits for the process to kill itself at a rail's crash point
// (PAYOUTKIT_TEST_EVM_CRASH_AT, PAYOUTKIT_TEST_BITCOIN_CRASH_AT), and fails
// the test unless it does within a minute.
func (p *proc) crashed(t testing.TB) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		t.Fatalf("the server did not die within a minute; stderr:\n%s", tail(p.stderr.String(), 4000))
	}
	if p.err == nil || !strings.Contains(p.stderr.String(), "killing the server on purpose") {
		t.Fatalf("the server did not die at its crash point: %v; stderr:\n%s", p.err, tail(p.stderr.String(), 4000))
	}
}

// kill SIGKILLs the process and waits for it.
func (p *proc) kill(t testing.TB) {
	t.Helper()
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// term sends SIGTERM and returns how long the process took to exit; it
// fails the test unless it exits 0 within limit.
func (p *proc) term(t testing.TB, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(limit):
		t.Fatalf("no exit within %s of SIGTERM; stderr:\n%s", limit, tail(p.stderr.String(), 4000))
	}
	if p.err != nil {
		t.Fatalf("exit after SIGTERM: %v; stderr:\n%s", p.err, tail(p.stderr.String(), 4000))
	}
	return time.Since(start)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// auditExitsZero runs `server audit -db dsn` as its own process and fails
// the test unless it exits 0 with an ok report.
func auditExitsZero(t testing.TB, dsn string) {
	t.Helper()
	cmd := programCmd(t, "audit", "-db", dsn)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("server audit: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var report struct {
		OK bool `json:"ok"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil || !report.OK {
		t.Fatalf("server audit printed %s (%v)", stdout.String(), err)
	}
}

// ---- a workspace and its money ----

type faultWorkspace struct {
	id, key, secret string
}

// newFaultWorkspace creates a workspace with `workspace create` (optionally
// sending webhooks to webhookURL).
func newFaultWorkspace(t testing.TB, dsn, webhookURL string) faultWorkspace {
	t.Helper()
	args := []string{"workspace", "create", "-db", dsn, "-name", "Fault"}
	if webhookURL != "" {
		args = append(args, "-webhook-url", webhookURL)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("workspace create: %v\n%s", err, stderr.String())
	}
	var ws struct{ WorkspaceID, APIKey, WebhookSecret string }
	m := map[string]string{}
	if err := json.Unmarshal(stdout.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	ws.WorkspaceID, ws.APIKey, ws.WebhookSecret = m["workspace_id"], m["api_key"], m["webhook_secret"]
	return faultWorkspace{id: ws.WorkspaceID, key: ws.APIKey, secret: ws.WebhookSecret}
}

// fund credits amount to the workspace through an order paid in the
// sandbox, and returns it in cents.
// faultRun is one server under a payout load whose clients retry every
// unanswered payout with the same payout_id, for a fault suite.
type faultRun struct {
	dsn    string // the database the checks read (the server may reach it through a proxy)
	ws     faultWorkspace
	c      *payoutClient
	p      *proc
	funded int64
	stop   func() // ends the load
}

// startFaultRun creates a workspace in dsn, starts a server on serverDSN
// (dsn itself, or a proxy in front of it), funds the workspace with amount,
// and starts clients payout clients; it returns once acked payouts were
// accepted within wait.
func startFaultRun(t *testing.T, dsn, serverDSN, amount string, clients, acked int, wait time.Duration) *faultRun {
	t.Helper()
	r := &faultRun{dsn: dsn, ws: newFaultWorkspace(t, dsn, "")}
	r.c = newPayoutClient(r.ws.key, "0.01")
	r.p = startProc(t, "-db", serverDSN)
	r.funded = fund(t, r.p.url, r.ws.key, "fund", amount)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := r.c.start(ctx, func() string { return r.p.url }, clients)
	r.stop = func() { cancel(); done() }
	r.c.waitAcked(t, acked, wait)
	return r
}

// stopLoad ends the load, then asks again for every payout_id that got no
// answer until each has one.
func (r *faultRun) stopLoad(t *testing.T) {
	t.Helper()
	r.stop()
	r.c.converge(t, r.p.url)
}

// finish stops the server and ends the suite with its checks: every payout
// answered code 0 exists, none twice, the money adds up, the audit passes.
func (r *faultRun) finish(t *testing.T) {
	t.Helper()
	r.p.term(t, 40*time.Second)
	checkPayouts(t, r.dsn, r.ws.id, r.c, r.funded)
	auditExitsZero(t, r.dsn)
}

func fund(t testing.TB, url, key, orderID, amount string) int64 {
	t.Helper()
	for _, step := range []struct{ path, body string }{
		{"/v1/orders", fmt.Sprintf(`{"order_id":%q,"amount":%q}`, orderID, amount)},
		{"/v1/sandbox/orders/pay", fmt.Sprintf(`{"order_id":%q}`, orderID)},
	} {
		st, env := postJSON(url+step.path, key, step.body)
		if st != 200 || env.Code != 0 {
			t.Fatalf("%s: %d %+v", step.path, st, env)
		}
	}
	a, err := payoutkit.ParseAmount(amount)
	if err != nil {
		t.Fatal(err)
	}
	return int64(a)
}

type envelope struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

var plainClient = &http.Client{Timeout: 30 * time.Second}

// postJSON posts body and decodes the envelope; status 0 means no answer.
func postJSON(url, key, body string) (int, envelope) {
	st, env, _, _ := doJSON(context.Background(), plainClient, "POST", url, key, body)
	return st, env
}

func doJSON(ctx context.Context, hc *http.Client, method, url, key, body string) (int, envelope, http.Header, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, envelope{}, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, envelope{}, nil, err
	}
	defer resp.Body.Close()
	var env envelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return 0, envelope{}, nil, fmt.Errorf("answer %d not an envelope: %w", resp.StatusCode, err)
	}
	return resp.StatusCode, env, resp.Header, nil
}

// ---- the retrying payout client ----

type outcome int

const (
	unanswered outcome = iota // no answer, 50000 or 50300: it may or may not exist; retry
	accepted                  // code 0 (first time or replayed)
	refused                   // 40000 Insufficient available balance: it does not exist
	unexpected                // anything else: a bug
)

// payoutClient sends payouts of one amount with unique payout_ids from
// several workers and retries each unanswered one with the same payout_id
// (and the same body) until it gets a definite answer.
type payoutClient struct {
	key    string
	amount string
	cents  int64
	prefix string
	hc     *http.Client
	next   atomic.Int64

	mu       sync.Mutex
	tried    map[string]bool // every payout_id ever sent
	acked    map[string]bool // answered code 0
	refusedS map[string]bool // answered Insufficient available balance
	retry    []string        // unanswered, to send again
	bad      []string        // unexpected answers

	replays, internal, transport atomic.Int64 // replays, 50000s, no answers
	unavailable                  atomic.Int64 // 50300s (the database unavailable)
	slowest                      atomic.Int64 // the longest answered request, ns

	// afterAck, when set before start, is told of every code 0 answer:
	// when its request was sent and when the answer came.
	afterAck func(sent, answered time.Time)
	// bodyFor, when set before start, makes the body of payout id (the
	// same every time it is sent) in place of body's.
	bodyFor func(id string) string
}

func newPayoutClient(key, amount string) *payoutClient {
	a, err := payoutkit.ParseAmount(amount)
	if err != nil {
		panic(err)
	}
	return &payoutClient{
		key: key, amount: amount, cents: int64(a), prefix: "po-",
		hc:    &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		tried: map[string]bool{}, acked: map[string]bool{}, refusedS: map[string]bool{},
	}
}

func (c *payoutClient) body(id string) string {
	if c.bodyFor != nil {
		return c.bodyFor(id)
	}
	return fmt.Sprintf(`{"payout_id":%q,"amount":%q,"asset":"USDT","network":"TRON","address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","payer_id":"cust-%d"}`,
		id, c.amount, len(id)%7)
}

// send sends payout id once to url and books its outcome.
func (c *payoutClient) send(ctx context.Context, url, id string) outcome {
	c.mu.Lock()
	c.tried[id] = true
	c.mu.Unlock()
	start := time.Now()
	st, env, h, err := doJSON(ctx, c.hc, "POST", url+"/v1/payouts", c.key, c.body(id))
	o := unanswered
	switch {
	case err != nil:
		if ctx.Err() == nil { // not the load being stopped
			c.transport.Add(1)
		}
	case st == 200 && env.Code == 0:
		o = accepted
		if h.Get("Idempotent-Replayed") == "true" {
			c.replays.Add(1)
		}
	case st == 400 && env.Code == 40000 && env.Message == "Insufficient available balance":
		o = refused
	case st == 500 && env.Code == 50000:
		c.internal.Add(1)
	case st == 503 && env.Code == 50300:
		c.unavailable.Add(1)
		if h.Get("Retry-After") == "" {
			c.mu.Lock()
			c.bad = append(c.bad, fmt.Sprintf("%s: 503 without Retry-After", id))
			c.mu.Unlock()
		}
	default:
		o = unexpected
	}
	if o == accepted && c.afterAck != nil {
		c.afterAck(start, time.Now())
	}
	if err == nil {
		for d := int64(time.Since(start)); ; {
			old := c.slowest.Load()
			if d <= old || c.slowest.CompareAndSwap(old, d) {
				break
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch o {
	case accepted:
		c.acked[id] = true
	case refused:
		if c.acked[id] {
			c.bad = append(c.bad, fmt.Sprintf("%s: refused after it was accepted", id))
		}
		c.refusedS[id] = true
	case unexpected:
		c.bad = append(c.bad, fmt.Sprintf("%s: %d %+v", id, st, env))
	default:
		c.retry = append(c.retry, id)
	}
	return o
}

// nextID returns an unanswered payout_id to send again, or a new one.
func (c *payoutClient) nextID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.retry); n > 0 {
		i := rand.IntN(n)
		id := c.retry[i]
		c.retry = slices.Delete(c.retry, i, i+1)
		return id
	}
	return fmt.Sprintf("%s%d", c.prefix, c.next.Add(1))
}

// start runs workers sending payouts to url() until ctx ends; the returned
// function waits for them.
func (c *payoutClient) start(ctx context.Context, url func() string, workers int) (wait func()) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if c.send(ctx, url(), c.nextID()) != accepted {
					select { // a dead or locked server: do not spin
					case <-ctx.Done():
					case <-time.After(time.Duration(5+rand.IntN(20)) * time.Millisecond):
					}
				}
			}
		})
	}
	return wg.Wait
}

// counts returns how many payouts were accepted and refused so far.
func (c *payoutClient) counts() (acked, refused, pending int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.acked), len(c.refusedS), len(c.retry)
}

// waitAcked waits until at least n more payouts were accepted than before.
func (c *payoutClient) waitAcked(t testing.TB, n int, limit time.Duration) {
	t.Helper()
	base, _, _ := c.counts()
	deadline := time.Now().Add(limit)
	for {
		if a, _, _ := c.counts(); a >= base+n {
			return
		}
		if time.Now().After(deadline) {
			a, r, p := c.counts()
			t.Fatalf("%d payouts accepted within %s (want %d more than %d; %d refused, %d unanswered, %d 50000s, %d 50300s, %d transport errors)",
				a-base, limit, n, base, r, p, c.internal.Load(), c.unavailable.Load(), c.transport.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// converge sends every unanswered payout again to url until each has a
// definite answer.
func (c *payoutClient) converge(t testing.TB, url string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c.mu.Lock()
		ids := c.retry
		c.retry = nil
		c.mu.Unlock()
		if len(ids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d payouts still unanswered after 60s of retries: %v", len(ids), ids[:min(5, len(ids))])
		}
		var wg sync.WaitGroup
		work := make(chan string)
		for range 4 {
			wg.Go(func() {
				for id := range work {
					c.send(context.Background(), url, id)
				}
			})
		}
		for _, id := range ids {
			work <- id
		}
		close(work)
		wg.Wait()
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *payoutClient) String() string {
	a, r, p := c.counts()
	c.mu.Lock()
	tried := len(c.tried)
	c.mu.Unlock()
	return fmt.Sprintf("%d payout_ids sent, %d accepted (%d answers replayed), %d refused for the balance, %d unanswered; %d answers 50000, %d answers 50300, %d without an answer; slowest answer %s",
		tried, a, c.replays.Load(), r, p, c.internal.Load(), c.unavailable.Load(), c.transport.Load(), time.Duration(c.slowest.Load()).Round(time.Millisecond))
}

// ---- the checks every suite ends with ----

// openDB opens the database directly, for the checks.
func openDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	driver := "sqlite"
	if strings.HasPrefix(dsn, "postgres") {
		driver = "pgx"
	} else {
		dsn = "file:" + dsn + "?_pragma=busy_timeout(10000)" // beside a busy server
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// checkPayouts checks the database against what the client was told, once
// the client has converged: every payout answered code 0 exists, none
// exists that was not answered code 0 (so none was refused yet made), none
// exists twice or was debited twice, and available equals funded minus the
// payouts that did not fail, never below zero.
func checkPayouts(t testing.TB, dsn, ws string, c *payoutClient, funded int64) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.bad {
		t.Errorf("unexpected answer: %s", b)
	}
	if len(c.retry) > 0 {
		t.Fatalf("%d payouts without a definite answer", len(c.retry))
	}
	db := openDB(t, dsn)
	rows, err := db.Query(`SELECT payout_id, status, amount FROM payouts WHERE workspace_id = $1`, ws)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]string{}
	var spent int64
	for rows.Next() {
		var id, status string
		var amount int64
		if err := rows.Scan(&id, &status, &amount); err != nil {
			t.Fatal(err)
		}
		if _, dup := stored[id]; dup {
			t.Errorf("payout %s exists twice", id)
		}
		stored[id] = status
		if status != "failed" {
			spent += amount
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	for id := range c.acked {
		if _, ok := stored[id]; !ok {
			t.Errorf("payout %s was answered code 0 and does not exist", id)
		}
	}
	for id := range stored {
		if !c.acked[id] {
			t.Errorf("payout %s exists but was never answered code 0 (refused: %v)", id, c.refusedS[id])
		}
	}
	var debits, refunds int
	if err := db.QueryRow(`SELECT count(*) FROM ledger_entries WHERE workspace_id = $1 AND kind = 'payout_debit'`, ws).Scan(&debits); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM ledger_entries WHERE workspace_id = $1 AND kind = 'payout_refund'`, ws).Scan(&refunds); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, st := range stored {
		if st == "failed" {
			failed++
		}
	}
	if debits != len(stored) || refunds != failed {
		t.Errorf("%d payouts (%d failed), %d debits, %d refunds", len(stored), failed, debits, refunds)
	}
	var available int64
	if err := db.QueryRow(`SELECT available FROM balances WHERE workspace_id = $1`, ws).Scan(&available); err != nil {
		t.Fatal(err)
	}
	if available != funded-spent || available < 0 {
		t.Errorf("available %d cents, want funded %d - payouts %d = %d", available, funded, spent, funded-spent)
	}
	var submittedEvents int
	if err := db.QueryRow(`SELECT count(*) FROM events WHERE workspace_id = $1 AND type = 'payout.submitted'`, ws).Scan(&submittedEvents); err != nil {
		t.Fatal(err)
	}
	if submittedEvents != len(stored) {
		t.Errorf("%d payout.submitted events for %d payouts", submittedEvents, len(stored))
	}
}

// ---- suite 1: SIGKILL under load ----

// TestFaultSIGKILLSQLite: the server is SIGKILLed under a concurrent payout
// load, again and again (20 times with PAYOUTKIT_FAULT_FULL=1).
func TestFaultSIGKILLSQLite(t *testing.T) {
	skipShortFault(t)
	faultSIGKILL(t, filepath.Join(t.TempDir(), "kill.db"))
}

// TestFaultSIGKILLPostgres: the same on PostgreSQL.
func TestFaultSIGKILLPostgres(t *testing.T) {
	skipShortFault(t)
	faultSIGKILL(t, pgtest.Postgres(t))
}

func faultSIGKILL(t *testing.T, dsn string) {
	ws := newFaultWorkspace(t, dsn, "")
	c := newPayoutClient(ws.key, "0.01")
	var funded int64
	rounds := faultCount(3, 20)
	for round := range rounds {
		p := startProc(t, "-db", dsn)
		if round == 0 {
			funded = fund(t, p.url, ws.key, "fund", "100000.00")
		}
		ctx, cancel := context.WithCancel(context.Background())
		wait := c.start(ctx, func() string { return p.url }, 12)
		c.waitAcked(t, 30, 60*time.Second)
		time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond) // land anywhere in a batch
		p.kill(t)
		time.Sleep(20 * time.Millisecond) // requests meet the dead server
		cancel()
		wait()
		// The database a SIGKILL left behind passes the audit at once.
		var out bytes.Buffer
		if err := run(context.Background(), []string{"audit", "-db", dsn}, &out, io.Discard); err != nil {
			t.Fatalf("round %d: audit after SIGKILL: %v\n%s", round, err, out.String())
		}
	}
	p := startProc(t, "-db", dsn)
	c.converge(t, p.url)
	t.Logf("%d SIGKILLs: %s", rounds, c)
	(&faultRun{dsn: dsn, ws: ws, c: c, p: p, funded: funded}).finish(t)
}

// ---- suite 6: SIGTERM under load ----

// TestFaultSIGTERMUnderLoad: SIGTERM during a payout load exits 0 within a
// bounded time and loses no payout answered code 0, before or during the
// shutdown.
func TestFaultSIGTERMUnderLoad(t *testing.T) {
	skipShortFault(t)
	dsn := filepath.Join(t.TempDir(), "term.db")
	ws := newFaultWorkspace(t, dsn, "")
	c := newPayoutClient(ws.key, "0.01")
	var funded int64
	for round := range faultCount(2, 5) {
		p := startProc(t, "-db", dsn)
		if round == 0 {
			funded = fund(t, p.url, ws.key, "fund", "100000.00")
		}
		ctx, cancel := context.WithCancel(context.Background())
		wait := c.start(ctx, func() string { return p.url }, 12)
		c.waitAcked(t, 50, 60*time.Second)
		took := p.term(t, 40*time.Second) // the load goes on during the shutdown
		cancel()
		wait()
		t.Logf("round %d: exit 0 %s after SIGTERM", round, took.Round(time.Millisecond))
	}
	// Every request the server took in before SIGTERM was answered: none
	// was made without its answer reaching the client, so no retry finds
	// one made already.
	if n := c.replays.Load(); n != 0 {
		t.Errorf("%d payouts were made during a shutdown without their answer reaching the client", n)
	}
	p := startProc(t, "-db", dsn)
	c.converge(t, p.url)
	t.Logf("%s", c)
	(&faultRun{dsn: dsn, ws: ws, c: c, p: p, funded: funded}).finish(t)
}

// ---- suite 5: SQLite locked by another process ----

// TestFaultSQLiteLocked: another connection holds SQLite's write lock
// (BEGIN IMMEDIATE) for longer than the busy timeout while payouts are
// under way. Writes answer 50000 (they do not hang), reads go on, nothing
// is half-written, and the server recovers by itself once the lock is gone.
func TestFaultSQLiteLocked(t *testing.T) {
	skipShortFault(t)
	dsn := filepath.Join(t.TempDir(), "locked.db")
	r := startFaultRun(t, dsn, dsn, "100000.00", 8, 30, 60*time.Second)
	ws, c, p := r.ws, r.c, r.p

	for round := range faultCount(1, 3) {
		locker := openDB(t, dsn)
		conn, err := locker.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// Take the lock as an admin command does (sqlite.WithPriorityWrites):
		// under this load the server leaves it free only for moments, so
		// it is asked to pause, then made to wait behind the held lock.
		priority := dsn + "-priority"
		if err := os.WriteFile(priority, []byte("test"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(priority); err != nil {
			t.Fatal(err)
		}
		internalBefore := c.internal.Load()
		held := time.Now()
		// Hold the lock past the server's 5 s busy timeout, reading meanwhile.
		for time.Since(held) < 7*time.Second {
			st, env, _, err := doJSON(context.Background(), plainClient, "GET", p.url+"/v1/balance", ws.key, "")
			if err != nil || st != 200 || env.Code != 0 {
				t.Fatalf("round %d: balance while SQLite is locked: %d %+v %v", round, st, env, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		locker.Close()
		if c.internal.Load() == internalBefore {
			t.Errorf("round %d: no write answered 50000 while SQLite was locked for 7s", round)
		}
		// Recovery without a restart: payouts are accepted again.
		c.waitAcked(t, 30, 30*time.Second)
	}
	r.stopLoad(t)
	t.Logf("%s", c)
	// No request hung on the lock: every answer came within the busy
	// timeout and a batch's work, far below the client's 30 s.
	if d := time.Duration(c.slowest.Load()); d > 15*time.Second {
		t.Errorf("slowest answer %s", d)
	}
	if n := c.transport.Load(); n != 0 {
		t.Errorf("%d requests got no answer", n)
	}
	r.finish(t)
}

// TestFaultSQLiteAdminUnderLoad: the admin commands, run as their own
// processes beside a server under heavy write load on SQLite, succeed
// within a few seconds, and a key revoked that way fails on the next request.
func TestFaultSQLiteAdminUnderLoad(t *testing.T) {
	skipShortFault(t)
	dsn := filepath.Join(t.TempDir(), "admin.db")
	r := startFaultRun(t, dsn, dsn, "1000000.00", faultCount(8, 32), 100, 60*time.Second)
	ws, c, p := r.ws, r.c, r.p

	// A command, started as its own process, has the server pause between
	// its commits (sqlite.WithPriorityWrites) and so gets the lock at its
	// next try. The bound is for starvation (a command waiting out the
	// whole load), not speed: the process start under -race on a loaded
	// two-core machine takes seconds by itself, and a command now writes
	// twice (its change and its security-log entry).
	const limit = 20 * time.Second
	admin := func(args ...string) []byte {
		t.Helper()
		cmd := programCmd(t, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		took := time.Since(start)
		if err != nil {
			t.Fatalf("%v under load: %v after %s\n%s", args[:2], err, took.Round(time.Millisecond), stderr.String())
		}
		if took > limit {
			t.Errorf("%v under load took %s", args[:2], took.Round(time.Millisecond))
		}
		t.Logf("%v under load: %s", args[:2], took.Round(time.Millisecond))
		return stdout.Bytes()
	}
	for round := range faultCount(1, 10) {
		var k struct{ APIKey, Prefix string }
		m := map[string]any{}
		if err := json.Unmarshal(admin("keys", "create", "-db", dsn, "-workspace", ws.id), &m); err != nil {
			t.Fatal(err)
		}
		k.APIKey, _ = m["api_key"].(string)
		k.Prefix, _ = m["prefix"].(string)
		if st, env, _, err := doJSON(context.Background(), plainClient, "GET", p.url+"/v1/balance", k.APIKey, ""); err != nil || env.Code != 0 {
			t.Fatalf("round %d: the new key: %d %+v %v", round, st, env, err)
		}
		admin("webhook", "set", "-db", dsn, "-workspace", ws.id, "-url", fmt.Sprintf("http://127.0.0.1:9/hook-%d", round))
		c.waitAcked(t, 20, 30*time.Second) // still under load
		admin("keys", "revoke", "-db", dsn, "-workspace", ws.id, "-prefix", k.Prefix)
		if st, env, _, err := doJSON(context.Background(), plainClient, "GET", p.url+"/v1/balance", k.APIKey, ""); err != nil || st != 401 || env.Code != 40100 {
			t.Fatalf("round %d: the revoked key on the next request: %d %+v %v", round, st, env, err)
		}
	}
	r.stopLoad(t)
	t.Logf("%s", c)
	r.finish(t)
}

// ---- suites 3 and 4: PostgreSQL connections cut, PostgreSQL gone ----

// TestFaultPostgresConnectionCuts: the server reaches PostgreSQL through a
// proxy that cuts connections at random while they carry traffic: in a
// statement, between a batch's statements, in its COMMIT or in the
// COMMIT's answer. Every request is answered, with code 0, 50300 (the
// connection lost: retry) or 50000, never
// with half a change; the pool replaces the connections by itself; the
// retries converge and the audit passes.
func TestFaultPostgresConnectionCuts(t *testing.T) {
	skipShortFault(t)
	dsn := pgtest.Postgres(t)
	proxied, proxy := proxiedDSN(t, dsn)
	r := startFaultRun(t, dsn, proxied, "100000.00", 8, 20, 30*time.Second)
	c := r.c
	proxy.SetDropRate(0.02)
	deadline := time.Now().Add(time.Duration(faultCount(4, 30)) * time.Second)
	for time.Now().Before(deadline) || proxy.cuts.Load() < 10 {
		if time.Since(deadline) > 60*time.Second {
			t.Fatalf("only %d connections cut in a minute", proxy.cuts.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
	proxy.SetDropRate(0)
	// The pool recovers by itself: payouts are accepted again, through the
	// same process.
	c.waitAcked(t, 30, 30*time.Second)
	r.stopLoad(t)
	t.Logf("%d connections cut: %s", proxy.cuts.Load(), c)
	if c.internal.Load()+c.unavailable.Load() == 0 {
		t.Errorf("no request failed while connections were cut")
	}
	if n := c.transport.Load(); n != 0 {
		t.Errorf("%d requests got no answer from a server that never stopped", n)
	}
	r.finish(t)
}

// TestFaultPostgresOutage: PostgreSQL goes away while the server runs (the
// proxy refuses every connection, as a restarting server does), then comes
// back; later every backend of the server is terminated with
// pg_terminate_backend. The server answers all along (503 with code 50300
// while the database is gone, /readyz 503), and 200 again afterwards, without a
// restart of its own.
func TestFaultPostgresOutage(t *testing.T) {
	skipShortFault(t)
	dsn := pgtest.Postgres(t)
	proxied, proxy := proxiedDSN(t, dsn)
	r := startFaultRun(t, dsn, proxied, "100000.00", 4, 20, 30*time.Second)
	ws, c, p := r.ws, r.c, r.p

	probe := func(path string) (int, envelope) {
		st, env, _, err := doJSON(context.Background(), plainClient, "GET", p.url+path, ws.key, "")
		if err != nil && !strings.Contains(err.Error(), "not an envelope") {
			t.Fatalf("GET %s: no answer: %v", path, err)
		}
		return st, env
	}
	for round := range faultCount(2, 5) {
		// The outage.
		proxy.SetRefuse(true)
		unavailableBefore := c.unavailable.Load()
		outage := time.Now()
		for time.Since(outage) < 3*time.Second {
			if st, env := probe("/v1/balance"); st != 503 || env.Code != 50300 {
				t.Fatalf("round %d: balance during the outage: %d %+v", round, st, env)
			}
			if st, _ := probe("/readyz"); st != 503 {
				t.Fatalf("round %d: /readyz during the outage: %d", round, st)
			}
			if st, _ := probe("/healthz"); st != 200 {
				t.Fatalf("round %d: /healthz during the outage: %d", round, st)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if c.unavailable.Load() == unavailableBefore {
			t.Errorf("round %d: no payout answered 50300 during the outage", round)
		}
		proxy.SetRefuse(false)
		waitAnswer(t, func() bool { st, env := probe("/v1/balance"); return st == 200 && env.Code == 0 })
		c.waitAcked(t, 20, 30*time.Second)

		// Every backend of the server terminated by PostgreSQL itself: only
		// those reached through this test's proxy, no one else's.
		admin := openDB(t, dsn)
		ports := proxy.UpstreamPorts()
		var killed int
		if err := admin.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND client_addr IS NOT NULL
			AND client_port = ANY(string_to_array($1, ',')::int[])`, portList(ports)).Scan(&killed); err != nil {
			t.Fatal(err)
		}
		admin.Close()
		if killed == 0 {
			t.Errorf("round %d: no backend of the server terminated (proxy ports %v)", round, ports)
		}
		waitAnswer(t, func() bool { st, env := probe("/v1/balance"); return st == 200 && env.Code == 0 })
		c.waitAcked(t, 20, 30*time.Second)
		t.Logf("round %d: %d backends terminated", round, killed)
	}
	r.stopLoad(t)
	t.Logf("%s", c)
	if n := c.transport.Load(); n != 0 {
		t.Errorf("%d requests got no answer from a server that never stopped", n)
	}
	r.finish(t)
}

// waitAnswer waits up to 30 s for cond.
func waitAnswer(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("no recovery within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ---- suite 2: two instances on one PostgreSQL, one SIGKILLed ----

// hookReceiver is a real webhook receiver: it checks each delivery's
// signature and id, answers success after a short delay (so that
// deliveries are in flight, under lease, when an instance dies), and keeps
// the order of arrivals.
type hookReceiver struct {
	*httptest.Server
	secret atomic.Pointer[string]
	delay  atomic.Int64 // how long an answer takes, ns

	mu    sync.Mutex
	seq   int
	ids   map[string][]time.Time    // arrivals by event id
	body  map[string][]byte         // the first body of each event id
	first map[string]map[string]int // payout_id → type → first arrival (acks for submitted)
	bad   []string
}

func newHookReceiver(t testing.TB) *hookReceiver {
	h := &hookReceiver{ids: map[string][]time.Time{}, body: map[string][]byte{}, first: map[string]map[string]int{}}
	h.Server = httptest.NewServer(h)
	t.Cleanup(h.Close)
	return h
}

// delivered reports whether an event of type typ of the payout arrived
// with a good signature.
func (h *hookReceiver) delivered(payoutID, typ string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.first[payoutID][typ]
	return ok
}

// wantNoBad fails the test for each delivery that was badly signed or
// whose id or type did not match its headers.
func (h *hookReceiver) wantNoBad(t testing.TB) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, bad := range h.bad {
		t.Error(bad)
	}
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	secret := h.secret.Load()
	var ev struct {
		ID, Type string
		Data     struct {
			PayoutID string `json:"payout_id"`
		}
	}
	arrived := time.Now()
	h.mu.Lock()
	switch {
	case secret == nil || !payoutkit.VerifySignature(*secret, body, r.Header.Get("X-Signature")):
		h.bad = append(h.bad, "a delivery with a bad signature: "+string(body))
	case json.Unmarshal(body, &ev) != nil || ev.ID == "" || ev.ID != r.Header.Get("X-Event-Id") || ev.Type != r.Header.Get("X-Event-Type"):
		h.bad = append(h.bad, fmt.Sprintf("a delivery whose id or type does not match its headers %v: %s", r.Header, body))
	case h.body[ev.ID] != nil && !bytes.Equal(h.body[ev.ID], body):
		h.bad = append(h.bad, fmt.Sprintf("event %s delivered with other bytes:\n%s\n%s", ev.ID, h.body[ev.ID], body))
	default:
		h.ids[ev.ID] = append(h.ids[ev.ID], arrived)
		if h.body[ev.ID] == nil {
			h.body[ev.ID] = body
		}
		if ev.Data.PayoutID != "" {
			if h.first[ev.Data.PayoutID] == nil {
				h.first[ev.Data.PayoutID] = map[string]int{}
			}
			if ev.Type != "payout.submitted" { // a submitted counts once acknowledged, below
				if _, ok := h.first[ev.Data.PayoutID][ev.Type]; !ok {
					h.seq++
					h.first[ev.Data.PayoutID][ev.Type] = h.seq
				}
			}
		}
	}
	h.mu.Unlock()
	time.Sleep(time.Duration(h.delay.Load()))
	if ev.Type == "payout.submitted" {
		h.mu.Lock()
		if _, ok := h.first[ev.Data.PayoutID][ev.Type]; !ok {
			h.seq++
			h.first[ev.Data.PayoutID][ev.Type] = h.seq
		}
		h.mu.Unlock()
	}
	io.WriteString(w, "success")
}

// TestFaultTwoInstancesPostgres: two servers share one PostgreSQL under a
// payout load that runs the balance out; one is SIGKILLed mid-load. No
// overdraft, nothing acknowledged is lost, the survivor takes over the dead
// one's delivery and hand-off leases when they expire (-delivery-lease 3s),
// and every event reaches a real webhook receiver, at least once, with its
// stable id and bytes, each payout's in order.
func TestFaultTwoInstancesPostgres(t *testing.T) {
	skipShortFault(t)
	dsn := pgtest.Postgres(t)
	recv := newHookReceiver(t)
	// Slow answers until the kill, so that deliveries are in flight under
	// the instances' leases then.
	recv.delay.Store(int64(300 * time.Millisecond))
	ws := newFaultWorkspace(t, dsn, recv.URL+"/hooks")
	recv.secret.Store(&ws.secret)
	args := []string{"-db", dsn, "-delivery-lease", "3s", "-sandbox-settle-after", "200ms"}
	a, b := startProc(t, args...), startProc(t, args...)
	funded := fund(t, a.url, ws.key, "fund", fmt.Sprintf("%d.00", faultCount(3, 10)))

	c := newPayoutClient(ws.key, "0.01")
	var aAlive atomic.Bool
	aAlive.Store(true)
	var turn atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := c.start(ctx, func() string {
		if aAlive.Load() && turn.Add(1)%2 == 0 {
			return a.url
		}
		return b.url
	}, 8)
	c.waitAcked(t, 80, 60*time.Second)
	// Kill it while it holds events under lease (its leases name its pid).
	db := openDB(t, dsn)
	owner := fmt.Sprintf("%%-%d-%%", a.cmd.Process.Pid)
	for deadline := time.Now().Add(30 * time.Second); len(queryStrings(t, db, `SELECT id FROM events WHERE state = 'pending' AND lease_owner LIKE $1`, owner)) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the instance to kill took no event in 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // some of them in flight, at the receiver
	a.kill(t)
	aAlive.Store(false)
	killed := time.Now()
	recv.delay.Store(int64(5 * time.Millisecond))

	// What the dead instance held under lease when it died.
	leasedEvents := queryStrings(t, db, `SELECT id FROM events WHERE state = 'pending' AND lease_owner LIKE $1`, owner)
	leasedPayouts := queryStrings(t, db, `SELECT payout_id FROM payouts WHERE status = 'submitted' AND handed_off_at IS NULL AND handoff_owner LIKE $1`, owner)
	t.Logf("the killed instance held %d events and %d payout hand-offs under lease", len(leasedEvents), len(leasedPayouts))
	if len(leasedEvents) == 0 {
		t.Fatal("the killed instance held no event under lease")
	}

	// The load goes on against the survivor until the balance runs out.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, r, _ := c.counts(); r >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the balance did not run out within 60s: %s", c)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wait()
	c.converge(t, b.url)
	t.Logf("%s", c)

	// Everything settles and is delivered, by the survivor alone.
	var open int
	deadline = time.Now().Add(90 * time.Second)
	for {
		if err := db.QueryRow(`SELECT (SELECT count(*) FROM events WHERE state <> 'delivered') +
			(SELECT count(*) FROM payouts WHERE status = 'submitted')`).Scan(&open); err != nil {
			t.Fatal(err)
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events undelivered or payouts unsettled after 90s", open)
		}
		time.Sleep(100 * time.Millisecond)
	}
	checkPayouts(t, dsn, ws.id, c, funded)

	recv.mu.Lock()
	defer recv.mu.Unlock()
	for _, bad := range recv.bad {
		t.Error(bad)
	}
	events := queryStrings(t, db, `SELECT id FROM events WHERE workspace_id = $1`, ws.id)
	redelivered := 0
	for _, id := range events {
		switch n := len(recv.ids[id]); {
		case n == 0:
			t.Errorf("event %s was never delivered", id)
		case n > 1:
			redelivered++
		}
	}
	if len(recv.ids) != len(events) {
		t.Errorf("the receiver got %d event ids, the outbox has %d", len(recv.ids), len(events))
	}
	for _, id := range leasedEvents {
		if at := recv.ids[id]; len(at) == 0 || !at[len(at)-1].After(killed) {
			t.Errorf("event %s, leased by the killed instance, was not delivered after the kill", id)
		}
	}
	for payout, first := range recv.first {
		sub, ok1 := first["payout.submitted"]
		done, ok2 := first["payout.completed"]
		if !ok1 || !ok2 || done < sub {
			t.Errorf("payout %s: events arrived out of order or missing: %v", payout, first)
		}
	}
	t.Logf("%d events delivered (%d more than once); the killed instance's %d leased events and %d leased hand-offs were taken over",
		len(events), redelivered, len(leasedEvents), len(leasedPayouts))
	b.term(t, 40*time.Second)
	auditExitsZero(t, dsn)
}

func queryStrings(t testing.TB, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// -delivery-lease below 2s is refused: an attempt gets half the lease.
func TestDeliveryLeaseFlag(t *testing.T) {
	if _, err := command(t, "serve", "-delivery-lease", "1s"); err == nil || !strings.Contains(err.Error(), "-delivery-lease") {
		t.Fatalf("serve -delivery-lease 1s: %v", err)
	}
}
