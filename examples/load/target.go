package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// workspace is one workspace the load uses, and the money it moved.
type workspace struct {
	ID, Key, Secret string
	noWebhook       bool // no webhook URL: its events are never sent

	initialAvailable, initialInProgress int64 // cents, before this run
	funded                              int64 // cents paid in by this run
	accepted                            atomic.Int64
	acceptedIDs                         []string // payout ids answered code 0
	unknown                             []unknownPayout
	mu                                  sync.Mutex
}

// unknownPayout is a payout request whose outcome the run never learned:
// no answer, or 50000. A batch's has the ids of its items.
type unknownPayout struct {
	id    string
	body  []byte
	items []string // a batch's payout ids; nil for a single payout
}

func (w *workspace) unanswered(payoutID string, body []byte) {
	w.mu.Lock()
	w.unknown = append(w.unknown, unknownPayout{id: payoutID, body: body})
	w.mu.Unlock()
}

// unansweredBatch records a batch whose outcome the run never learned.
func (w *workspace) unansweredBatch(batchID string, body []byte, items []string) {
	w.mu.Lock()
	w.unknown = append(w.unknown, unknownPayout{id: batchID, body: body, items: items})
	w.mu.Unlock()
}

// expectsEvents reports whether the receiver is to see w's events.
func (w *workspace) expectsEvents() bool { return w.ID != "" && !w.noWebhook }

func (w *workspace) accept(payoutID string, cents int64) {
	w.accepted.Add(cents)
	w.mu.Lock()
	w.acceptedIDs = append(w.acceptedIDs, payoutID)
	w.mu.Unlock()
}

// target is the server under load: one this tool started, or one at -url.
type target struct {
	url    string
	hot    *workspace   // the one hot balance
	spread []*workspace // for payouts-spread
	// controlled is payouts-controlled's workspace: a daily limit and the
	// address allowlist on (payout controls, contract section 10).
	controlled *workspace
	// quiet is payouts-batch-nowebhook's workspace: no webhook URL.
	quiet      *workspace
	recv       *receiver // nil when the server's webhooks cannot reach us
	run        string    // distinguishes this run's ids from earlier runs'
	payoutCent int64

	cmd      *exec.Cmd // nil for -url
	pidOf    int
	logLines atomic.Int64
	logBytes atomic.Int64
	logDone  chan struct{}
	dir      string
	db       string

	prefilled int // payouts stored before the server started (-prefill)

	mu       sync.Mutex
	expected []string // event keys this run caused
}

func (t *target) pid() int       { return t.pidOf }
func (t *target) receives() bool { return t.recv != nil }

// databasePIDs are the processes whose CPU counts as the database's: on a
// PostgreSQL that runs on this machine (a loopback or socket address),
// every process named postgres, its other clients' work included, so
// measure on an otherwise quiet database. None for SQLite, which runs
// inside the server.
func (t *target) databasePIDs() []int {
	if !strings.HasPrefix(t.db, "postgres") || !localDSN(t.db) {
		return nil
	}
	return processesNamed("postgres")
}

// localDSN reports whether a PostgreSQL URL names this machine.
func localDSN(dsn string) bool {
	u, err := url.Parse(dsn)
	if err != nil {
		return false
	}
	switch h := u.Hostname(); h {
	case "", "localhost", "127.0.0.1", "::1":
		return true
	default:
		return strings.HasPrefix(h, "/")
	}
}

func (t *target) describe() string {
	switch {
	case t.cmd == nil:
		return "running server at " + t.url
	case strings.HasPrefix(t.db, "postgres"):
		return "examples/server on PostgreSQL"
	default:
		return "examples/server on SQLite (" + t.db + ")"
	}
}

func (t *target) expectEvent(key string, at time.Time) {
	t.mu.Lock()
	t.expected = append(t.expected, key)
	t.mu.Unlock()
	if t.recv != nil {
		t.recv.expect(key, at)
	}
}

func (t *target) expectedEvents() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.expected...)
}

// newTarget starts the server (unless -url), makes its workspaces and funds
// them.
func newTarget(ctx context.Context, o options, recv *receiver, progress func(string, ...any)) (*target, error) {
	t := &target{run: strconv.FormatInt(time.Now().UnixNano()%1e10, 36), payoutCent: o.payoutCents}
	if o.url != "" {
		t.url = strings.TrimRight(o.url, "/")
		t.hot = &workspace{Key: o.key}
		t.pidOf = o.pid
	} else {
		if err := t.start(ctx, o, recv, progress); err != nil {
			t.close()
			return nil, err
		}
	}
	progress("funding %d workspace(s) with %s each", len(t.workspaces()), formatCents(o.fundCents))
	hc := newHTTPClient(8)
	defer hc.CloseIdleConnections()
	for i, w := range t.workspaces() {
		if err := t.fund(ctx, hc, w, o.fundCents, i); err != nil {
			t.close()
			return nil, err
		}
	}
	if t.recv != nil {
		// The funding's order.paid events are not part of any workload.
		d := t.recv.waitDelivered(ctx, time.Now(), o.drainWait)
		if d.Delivered < d.Expected {
			t.close()
			return nil, fmt.Errorf("only %d of %d order.paid webhooks arrived within %s", d.Delivered, d.Expected, o.drainWait)
		}
	}
	return t, nil
}

// start builds the server if needed, creates the workspaces with the
// server's own admin command, and starts serving on a loopback port.
func (t *target) start(ctx context.Context, o options, recv *receiver, progress func(string, ...any)) error {
	dir, err := os.MkdirTemp("", "payoutkit-load-")
	if err != nil {
		return err
	}
	t.dir = dir
	bin := o.serverBin
	if bin == "" {
		bin = filepath.Join(dir, "server")
		progress("building examples/server")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/payoutkit/payoutkit/examples/server")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building examples/server (run from inside the module, or pass -server): %w", err)
		}
	}
	t.db = o.db
	if t.db == "" {
		t.db = filepath.Join(dir, "load.db")
	}
	t.recv = recv

	n := 0
	if slices.Contains(o.workloads, "payouts-spread") {
		n = o.workspaces
	}
	progress("creating %d workspace(s)", 1+n)
	for i := range 1 + n {
		url := recv.url
		if i == 0 && o.prefill > 0 {
			url = "" // set once the prefilled payouts' events are stored unsent
		}
		w, err := createWorkspace(ctx, bin, t.db, fmt.Sprintf("load-%s-%d", t.run, i), url)
		if err != nil {
			return err
		}
		recv.setSecret(w.ID, w.Secret)
		if i == 0 {
			t.hot = w
		} else {
			t.spread = append(t.spread, w)
		}
	}

	if slices.Contains(o.workloads, "payouts-controlled") {
		progress("creating the workspace with payout controls")
		w, err := createWorkspace(ctx, bin, t.db, fmt.Sprintf("load-%s-controlled", t.run), recv.url)
		if err != nil {
			return err
		}
		recv.setSecret(w.ID, w.Secret)
		if err := setControls(ctx, bin, t.db, w.ID, o.fundCents); err != nil {
			return err
		}
		t.controlled = w
	}

	if slices.Contains(o.workloads, "payouts-batch-nowebhook") {
		progress("creating the workspace without a webhook URL")
		w, err := createWorkspace(ctx, bin, t.db, fmt.Sprintf("load-%s-quiet", t.run), "")
		if err != nil {
			return err
		}
		w.noWebhook = true
		t.quiet = w
	}

	if o.prefill > 0 {
		progress("prefilling %d payouts", o.prefill)
		if err := prefill(ctx, t.db, t.hot, o.prefill, o.payoutCents, progress); err != nil {
			return err
		}
		if err := setWebhookURL(ctx, bin, t.db, t.hot.ID, recv.url); err != nil {
			return err
		}
		t.prefilled = o.prefill
	}

	args := append([]string{"serve", "-addr", "127.0.0.1:0", "-db", t.db, "-log-format", "json"}, o.serverArgs...)
	t.cmd = exec.Command(bin, args...)
	t.cmd.Stdout = io.Discard // a first start on an empty database prints its workspace
	stderr, err := t.cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := t.cmd.Start(); err != nil {
		return err
	}
	t.pidOf = t.cmd.Process.Pid
	addr := make(chan string, 1)
	t.logDone = make(chan struct{})
	go t.readLogs(stderr, addr, os.Stderr)
	select {
	case a := <-addr:
		t.url = "http://" + a
	case <-t.logDone:
		return errors.New("the server exited before serving (see its log above)")
	case <-time.After(30 * time.Second):
		return errors.New("the server did not start serving within 30s")
	}
	progress("server %d serving at %s", t.pidOf, t.url)
	return nil
}

// workspaces are the target's workspaces: the hot one, then the others.
func (t *target) workspaces() []*workspace {
	all := append([]*workspace{t.hot}, t.spread...)
	if t.controlled != nil {
		all = append(all, t.controlled)
	}
	if t.quiet != nil {
		all = append(all, t.quiet)
	}
	return all
}

// setControls turns on a daily limit (the whole funding, so that it refuses
// nothing and is checked on every payout) and the address allowlist, with
// the payouts' address usable at once, through the server's admin commands.
func setControls(ctx context.Context, bin, db, ws string, limitCents int64) error {
	for _, args := range [][]string{
		{"workspace", "policy", "-cooling-off", "0s"},
		{"addresses", "add", "-network", "TRON", "-address", payoutAddress},
		{"workspace", "policy", "-daily-limit", formatCents(limitCents), "-address-allowlist", "on"},
	} {
		cmd := exec.CommandContext(ctx, bin, append(args, "-db", db, "-workspace", ws)...)
		cmd.Stderr = os.Stderr
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("server %s: %w", strings.Join(args[:2], " "), err)
		}
	}
	return nil
}

// readLogs counts the server's log lines (a log storm shows here), passes
// on warnings and errors to warn, and reports the address from the
// "serving" line. Under load nearly every line is a request's INFO line;
// those are counted without decoding, so that the load tool's own CPU goes
// to the load.
func (t *target) readLogs(r io.Reader, addr chan<- string, warn io.Writer) {
	defer close(t.logDone)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	shown := 0
	for sc.Scan() {
		line := sc.Bytes()
		t.logLines.Add(1)
		t.logBytes.Add(int64(len(line)) + 1)
		if bytes.Contains(line, infoLevel) && !bytes.Contains(line, servingMsg) {
			continue
		}
		var l struct {
			Msg   string `json:"msg"`
			Level string `json:"level"`
			Addr  string `json:"addr"`
		}
		if json.Unmarshal(line, &l) != nil {
			continue
		}
		if l.Msg == "serving" && l.Addr != "" {
			addr <- l.Addr
		}
		if (l.Level == "WARN" || l.Level == "ERROR") && shown < 20 {
			shown++
			fmt.Fprintf(warn, "server: %s\n", line)
		}
	}
}

// What readLogs looks for in a line of the server's JSON log.
var (
	infoLevel  = []byte(`"level":"INFO"`)
	servingMsg = []byte(`"msg":"serving"`)
)

func createWorkspace(ctx context.Context, bin, db, name, webhookURL string) (*workspace, error) {
	args := []string{"workspace", "create", "-db", db, "-name", name}
	if webhookURL != "" {
		args = append(args, "-webhook-url", webhookURL)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("server workspace create: %w", err)
	}
	var w struct {
		WorkspaceID   string `json:"workspace_id"`
		APIKey        string `json:"api_key"`
		WebhookSecret string `json:"webhook_secret"`
	}
	if err := json.Unmarshal(out, &w); err != nil {
		return nil, fmt.Errorf("server workspace create printed %q: %w", out, err)
	}
	return &workspace{ID: w.WorkspaceID, Key: w.APIKey, Secret: w.WebhookSecret}, nil
}

// fund reads the balance it starts from, then pays one order of amount
// cents into w through the sandbox.
func (t *target) fund(ctx context.Context, hc *http.Client, w *workspace, cents int64, i int) error {
	var err error
	if w.initialAvailable, w.initialInProgress, err = t.balance(ctx, hc, w); err != nil {
		return err
	}
	orderID := fmt.Sprintf("load-fund-%s-%d", t.run, i)
	body := fmt.Appendf(nil, `{"order_id":%q,"amount":%q,"payer_id":"load-funding","description":"load tool funding"}`, orderID, formatCents(cents))
	if err := getJSON(ctx, hc, t.url, request{method: "POST", path: "/v1/orders", key: w.Key, body: body}, nil); err != nil {
		return fmt.Errorf("funding: %w", err)
	}
	pay := fmt.Appendf(nil, `{"order_id":%q}`, orderID)
	if err := getJSON(ctx, hc, t.url, request{method: "POST", path: "/v1/sandbox/orders/pay", key: w.Key, body: pay}, nil); err != nil {
		return fmt.Errorf("funding through the sandbox (the server needs -sandbox): %w", err)
	}
	w.funded += cents
	if w.expectsEvents() {
		t.expectEvent(eventKey("order.paid", w.ID, orderID), time.Now())
	}
	return nil
}

func (t *target) balance(ctx context.Context, hc *http.Client, w *workspace) (available, inProgress int64, err error) {
	var b struct {
		Available  string `json:"available"`
		InProgress string `json:"in_progress"`
	}
	if err := getJSON(ctx, hc, t.url, request{method: "GET", path: "/v1/balance", key: w.Key}, &b); err != nil {
		return 0, 0, err
	}
	if available, err = parseCents(b.Available); err != nil {
		return 0, 0, err
	}
	if inProgress, err = parseCents(b.InProgress); err != nil {
		return 0, 0, err
	}
	return available, inProgress, nil
}

// moneyCheck is the end-of-run check of one workspace's balance.
type moneyCheck struct {
	Workspace      string `json:"workspace"`
	Funded         string `json:"funded"`
	Accepted       string `json:"accepted"` // payouts answered code 0
	Payouts        int    `json:"payouts"`
	Unanswered     int    `json:"unanswered"` // resolved by sending them again
	WantAvailable  string `json:"want_available"`
	Available      string `json:"available"`
	SampledFound   int    `json:"sampled_payouts_found"`
	SampledMissing int    `json:"sampled_payouts_missing"`
	Problem        string `json:"problem,omitempty"`
}

// checkMoney compares every workspace's balance with what the run funded
// and what the API accepted, and looks up a sample of accepted payouts.
func (t *target) checkMoney(ctx context.Context) (bool, []moneyCheck) {
	hc := newHTTPClient(8)
	defer hc.CloseIdleConnections()
	ok := true
	var out []moneyCheck
	for _, w := range t.workspaces() {
		unanswered := len(w.unknown)
		if err := t.resolveUnknown(ctx, hc, w); err != nil {
			out = append(out, moneyCheck{Workspace: w.ID, Problem: err.Error()})
			ok = false
			continue
		}
		c := moneyCheck{Workspace: w.ID, Funded: formatCents(w.funded), Accepted: formatCents(w.accepted.Load()), Payouts: len(w.acceptedIDs), Unanswered: unanswered}
		want := w.initialAvailable + w.funded - w.accepted.Load()
		c.WantAvailable = formatCents(want)
		avail, _, err := t.balance(ctx, hc, w)
		c.Available = formatCents(avail)
		switch {
		case err != nil:
			c.Problem = err.Error()
		case avail != want:
			c.Problem = "available balance differs from funded minus accepted payouts"
		}
		// Every accepted payout must exist: look up an even sample of them.
		step := max(1, len(w.acceptedIDs)/200)
		for i := 0; i < len(w.acceptedIDs); i += step {
			body := fmt.Appendf(nil, `{"payout_id":%q}`, w.acceptedIDs[i])
			if err := getJSON(ctx, hc, t.url, request{method: "POST", path: "/v1/payouts/info", key: w.Key, body: body}, nil); err != nil {
				c.SampledMissing++
				if c.Problem == "" {
					c.Problem = "an accepted payout is missing: " + err.Error()
				}
				continue
			}
			c.SampledFound++
		}
		if c.Problem != "" {
			ok = false
		}
		out = append(out, c)
	}
	return ok, out
}

// resolveUnknown sends every payout whose request got no answer again, as
// a retrying client would: the same payout_id is accepted once, so the
// answer says whether the first request moved the money (a replay), or
// whether this one does. (Looking the payout up instead would race with a
// request the server is still committing when the run ends.)
func (t *target) resolveUnknown(ctx context.Context, hc *http.Client, w *workspace) error {
	for _, u := range w.unknown {
		if u.items != nil {
			if err := t.resolveBatch(ctx, hc, w, u); err != nil {
				return err
			}
			continue
		}
		err := getJSON(ctx, hc, t.url, request{method: "POST", path: "/v1/payouts", key: w.Key, body: u.body}, nil)
		var refused *apiError
		switch {
		case err == nil:
			w.accept(u.id, t.payoutCent)
			if w.expectsEvents() {
				t.expectEvent(eventKey("payout.submitted", w.ID, u.id), time.Now())
			}
		case errors.As(err, &refused) && refused.code != 50000: // refused: no money moved
		default:
			return fmt.Errorf("sending an unanswered payout again: %w", err)
		}
	}
	w.unknown = nil
	return nil
}

// resolveBatch sends an unanswered batch again: the same batch_id with the
// same body is the first batch's answer if it was made (a replay), or
// makes it now. Either way its results say which items moved money.
func (t *target) resolveBatch(ctx context.Context, hc *http.Client, w *workspace, u unknownPayout) error {
	var ans batchAnswer
	err := getJSON(ctx, hc, t.url, request{method: "POST", path: "/v1/payouts/batch", key: w.Key, body: u.body}, &ans)
	var refused *apiError
	switch {
	case err == nil:
		now := time.Now()
		for _, r := range ans.Results {
			if r.Code == 0 {
				w.accept(r.PayoutID, t.payoutCent)
				if w.expectsEvents() {
					t.expectEvent(eventKey("payout.submitted", w.ID, r.PayoutID), now)
				}
			}
		}
		return nil
	case errors.As(err, &refused) && refused.code != 50000: // the whole batch refused: no money moved
		return nil
	default:
		return fmt.Errorf("sending an unanswered batch again: %w", err)
	}
}

// close stops the server (SIGTERM, as an operator would) and removes the
// temporary directory.
func (t *target) close() {
	if t.cmd != nil && t.cmd.Process != nil {
		t.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { t.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.cmd.Process.Kill()
			<-done
		}
		t.cmd = nil
	}
	if t.dir != "" {
		os.RemoveAll(t.dir)
	}
}

// parseCents reads a USD amount with up to two decimals.
func parseCents(s string) (int64, error) {
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 2 || whole == "" {
		return 0, fmt.Errorf("amount %q: want digits with up to two decimals", s)
	}
	frac += strings.Repeat("0", 2-len(frac))
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w < 0 {
		return 0, fmt.Errorf("amount %q: want digits with up to two decimals", s)
	}
	f, err := strconv.ParseInt(frac, 10, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("amount %q: want digits with up to two decimals", s)
	}
	return w*100 + f, nil
}

func formatCents(c int64) string {
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	return fmt.Sprintf("%s%d.%02d", sign, c/100, c%100)
}
