package main

// Failover suites (issue 39): the real server, started once on a DSN that
// names both servers of a pgtest cluster (a real primary and a real
// standby), under a payout load while the primary's postmaster is
// SIGKILLed and the standby promoted, or while PostgreSQL itself restarts.
// The client is the fault suites' payoutClient: every payout without a
// definite answer (no answer, 50000, 50300) is sent again with the same
// payout_id until it has one.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/payoutkit/payoutkit/processor/evm/evmtest"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// failoverRun is one server on a cluster under a payout load, with a real
// webhook receiver.
type failoverRun struct {
	cluster *pgtest.Cluster
	dsn     string // what the server was given
	ws      faultWorkspace
	recv    *hookReceiver
	c       *payoutClient
	p       *proc
	funded  int64
	stop    func() // ends the load

	// since is when the fault began; firstAck is when the first payout
	// sent at or after from was acknowledged (unix ns; 0: not yet).
	since, from, firstAck atomic.Int64

	mu   sync.Mutex
	acks []time.Time // when each acknowledgement came
}

// failoverOptions configure startFailoverRun.
type failoverOptions struct {
	cluster    pgtest.ClusterOptions
	singleHost bool // the server on the primary alone, not on both hosts
	clients    int
	amount     string              // of each payout; default 0.01
	body       func(string) string // the payoutClient's bodyFor
	serverArgs []string            // more flags for serve
}

// startFailoverRun starts a cluster, a webhook receiver, a workspace
// sending to it, the server, and a load of retrying payout clients; it
// returns once payouts are being acknowledged.
func startFailoverRun(t *testing.T, o failoverOptions) *failoverRun {
	t.Helper()
	r := &failoverRun{cluster: pgtest.StartCluster(t, o.cluster)}
	r.cluster.CreateDatabase("payoutkit")
	r.dsn = r.cluster.MultiHostDSN("payoutkit")
	if o.singleHost {
		r.dsn = r.cluster.Primary.DSN("payoutkit")
	}
	r.recv = newHookReceiver(t)
	r.ws = newFaultWorkspace(t, r.dsn, r.recv.URL+"/hooks")
	r.recv.secret.Store(&r.ws.secret)
	r.p = startProc(t, append([]string{"-db", r.dsn, "-delivery-lease", "3s"}, o.serverArgs...)...)
	r.funded = fund(t, r.p.url, r.ws.key, "fund", "100000.00")
	r.c = newPayoutClient(r.ws.key, cmp.Or(o.amount, "0.01"))
	r.c.bodyFor = o.body
	r.c.afterAck = func(sent, answered time.Time) {
		if from := r.from.Load(); from != 0 && sent.UnixNano() >= from {
			r.firstAck.CompareAndSwap(0, answered.UnixNano())
		}
		r.mu.Lock()
		r.acks = append(r.acks, answered)
		r.mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := r.c.start(ctx, func() string { return r.p.url }, o.clients)
	r.stop = func() { cancel(); done() }
	r.c.waitAcked(t, 50, 60*time.Second)
	return r
}

// watch has recovered measure from since (the fault) to the first payout
// acknowledged of those sent at or after from (once the fault is sure to
// have struck: the old primary dead, PostgreSQL restarted).
func (r *failoverRun) watch(since, from time.Time) {
	r.firstAck.Store(0)
	r.since.Store(since.UnixNano())
	r.from.Store(from.UnixNano())
}

// longestGap is the longest time without an acknowledgement while the load
// ran: the outage as the clients saw it.
func (r *failoverRun) longestGap() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	acks := slices.SortedFunc(slices.Values(r.acks), time.Time.Compare)
	var gap time.Duration
	for i := 1; i < len(acks); i++ {
		gap = max(gap, acks[i].Sub(acks[i-1]))
	}
	return gap
}

// recovered waits for the first payout sent at or after watch's from to be
// acknowledged, and returns how long after watch's since that was.
func (r *failoverRun) recovered(t *testing.T) time.Duration {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for r.firstAck.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no payout acknowledged within 60s of the fault: %s\nserver log:\n%s", r.c, tail(r.p.stderr.String(), 4000))
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Duration(r.firstAck.Load() - r.since.Load())
}

// stopLoad ends the load and sends every payout without an answer again
// until each has one.
func (r *failoverRun) stopLoad(t *testing.T) {
	t.Helper()
	r.stop()
	r.c.converge(t, r.p.url)
}

// stillServing fails the test unless the server started at the beginning
// is still running and ready (on the new primary).
func (r *failoverRun) stillServing(t *testing.T) {
	t.Helper()
	select {
	case <-r.p.exited:
		t.Fatalf("the server exited (%v); stderr:\n%s", r.p.err, tail(r.p.stderr.String(), 4000))
	default:
	}
	resp, err := plainClient.Get(r.p.url + "/readyz")
	if err != nil {
		t.Fatalf("/readyz of the same server (pid %d) after the fault: %v", r.p.cmd.Process.Pid, err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/readyz of the same server (pid %d) after the fault: %d", r.p.cmd.Process.Pid, resp.StatusCode)
	}
}

// readyDurability returns /readyz's durability member.
func (r *failoverRun) readyDurability(t *testing.T) probeDurability {
	t.Helper()
	resp, err := plainClient.Get(r.p.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p probe
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != 200 || p.Durability == nil {
		t.Fatalf("/readyz: %d %+v %v", resp.StatusCode, p, err)
	}
	return *p.Durability
}

// internalErrors returns the distinct errors the server logged with its
// 50000 answers ("internal error").
func (r *failoverRun) internalErrors() []string {
	var errs []string
	for line := range strings.SplitSeq(r.p.stderr.String(), "\n") {
		var l struct{ Msg, Err string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "internal error" && !slices.Contains(errs, l.Err) {
			errs = append(errs, l.Err)
		}
	}
	return errs
}

// lostPayouts returns the payouts answered code 0 that the database at dsn
// does not hold: acknowledged, then lost.
func lostPayouts(t testing.TB, dsn, ws string, c *payoutClient) []string {
	t.Helper()
	stored := map[string]bool{}
	for _, id := range queryStrings(t, openDB(t, dsn), `SELECT payout_id FROM payouts WHERE workspace_id = $1`, ws) {
		stored[id] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var lost []string
	for id := range c.acked {
		if !stored[id] {
			lost = append(lost, id)
		}
	}
	slices.SortFunc(lost, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b)) }) // po-9 before po-10
	return lost
}

// submittedDelivered waits until the receiver has had the payout.submitted
// event of every payout that exists, and fails the test with those it has
// not had within limit.
func (r *failoverRun) submittedDelivered(t *testing.T, dsn string, limit time.Duration) {
	t.Helper()
	ids := queryStrings(t, openDB(t, dsn), `SELECT payout_id FROM payouts WHERE workspace_id = $1`, r.ws.id)
	deadline := time.Now().Add(limit)
	for {
		var missing []string
		r.recv.mu.Lock()
		for _, id := range ids {
			if _, ok := r.recv.first[id]["payout.submitted"]; !ok {
				missing = append(missing, id)
			}
		}
		bad := slices.Clone(r.recv.bad)
		r.recv.mu.Unlock()
		for _, b := range bad {
			t.Error(b)
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d payout.submitted events not delivered within %s, e.g. %v", len(missing), len(ids), limit, missing[:min(5, len(missing))])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestFailover: a primary with a synchronous standby; the server started
// once on both hosts; 32 clients creating payouts. The primary's
// postmaster is SIGKILLed and the standby promoted. The same server
// carries on against the new primary, and there: every payout ever
// acknowledged exists, none twice, the balance is the funding less the
// payouts that exist, `server audit` passes, and every payout.submitted
// event reached the receiver. Three rounds, each on a fresh cluster.
func TestFailover(t *testing.T) {
	skipShortFault(t)
	rounds := faultCount(3, 10)
	var downs []time.Duration
	var unavailable, internal int64
	for round := range rounds {
		t.Run(fmt.Sprint("round-", round+1), func(t *testing.T) {
			r := startFailoverRun(t, failoverOptions{clients: 32})
			if d := r.readyDurability(t); !d.Replicated || d.SynchronousStandbys != 1 {
				t.Fatalf("/readyz's durability before the kill: %+v; want one synchronous standby", d)
			}
			time.Sleep(2 * time.Second) // a load under way

			before := r.c.unavailable.Load()
			killed := time.Now()
			r.cluster.KillPrimary()
			r.watch(killed, time.Now())
			r.cluster.Promote()
			promoted := time.Duration(time.Now().UnixNano() - r.since.Load())
			down := r.recovered(t)
			r.c.waitAcked(t, 200, 30*time.Second) // the load goes on, on the new primary
			time.Sleep(2 * time.Second)
			r.stopLoad(t)
			r.stillServing(t)

			newPrimary := r.cluster.Primary.DSN("payoutkit")
			t.Logf("promoted %s after the kill; first payout acknowledged on the new primary %s after the kill; no payout acknowledged for %s; %d answers 50300 before the kill; %s",
				promoted.Round(time.Millisecond), down.Round(time.Millisecond), r.longestGap().Round(time.Millisecond), before, r.c)
			if errs := r.internalErrors(); len(errs) > 0 {
				t.Errorf("%d answers 50000; the server logged: %q", r.c.internal.Load(), errs)
			}
			if lost := lostPayouts(t, newPrimary, r.ws.id, r.c); len(lost) > 0 {
				t.Errorf("%d acknowledged payouts lost in the failover, e.g. %v", len(lost), lost[:min(5, len(lost))])
			}
			r.submittedDelivered(t, newPrimary, 60*time.Second)
			r.p.term(t, 40*time.Second)
			checkPayouts(t, newPrimary, r.ws.id, r.c, r.funded)
			auditExitsZero(t, r.dsn)
			downs = append(downs, down)
			unavailable += r.c.unavailable.Load()
			internal += r.c.internal.Load()
		})
	}
	t.Logf("%d failovers: from the kill to the first payout acknowledged on the new primary %v; %d answers 50300, %d answers 50000",
		len(downs), downs, unavailable, internal)
}

// TestFailoverAsyncLosesPayouts is the negative control of TestFailover:
// an asynchronous standby whose WAL receiver is stopped a while before the
// kill, so that the promoted standby lacks the last commits the primary
// acknowledged. The same checks must find those payouts missing: this is
// the evidence that TestFailover would see a loss.
func TestFailoverAsyncLosesPayouts(t *testing.T) {
	skipShortFault(t)
	r := startFailoverRun(t, failoverOptions{cluster: pgtest.ClusterOptions{Async: true}, clients: 32})
	if d := r.readyDurability(t); d.Replicated {
		t.Fatalf("/readyz's durability on an asynchronous standby: %+v; want not replicated", d)
	}
	if !strings.Contains(r.p.stderr.String(), "no synchronous standby") {
		t.Errorf("no warning at start that an acknowledged payout can be lost:\n%s", tail(r.p.stderr.String(), 4000))
	}
	time.Sleep(time.Second)
	r.cluster.DetachStandby()
	before, _, _ := r.c.counts()
	r.c.waitAcked(t, 200, 30*time.Second) // acknowledged by the primary alone
	time.Sleep(time.Second)

	killed := time.Now()
	r.cluster.KillPrimary()
	r.watch(killed, time.Now())
	r.cluster.Promote()
	r.recovered(t)
	r.c.waitAcked(t, 200, 30*time.Second)
	r.stopLoad(t)
	r.stillServing(t)

	acked, _, _ := r.c.counts()
	lost := lostPayouts(t, r.cluster.Primary.DSN("payoutkit"), r.ws.id, r.c)
	if len(lost) == 0 {
		t.Fatalf("no acknowledged payout is missing after promoting a detached asynchronous standby (%d acknowledged, %d of them after the detach): the check cannot see a loss", acked, acked-before)
	}
	t.Logf("the loss is detected: %d of %d acknowledged payouts are missing on the promoted standby (%s … %s); %s",
		len(lost), acked, lost[0], lost[len(lost)-1], r.c)
}

// TestPostgresRestartUnderLoad: PostgreSQL itself restarts (pg_ctl restart
// -m immediate, as after a crash: recovery replays its WAL) under a payout
// load. The server, on that one server, carries on without a restart of
// its own, and nothing acknowledged is lost.
func TestPostgresRestartUnderLoad(t *testing.T) {
	skipShortFault(t)
	// Async: the primary does not wait for its standby to reconnect; the
	// server is given the primary alone.
	r := startFailoverRun(t, failoverOptions{cluster: pgtest.ClusterOptions{Async: true}, singleHost: true, clients: 32})
	time.Sleep(2 * time.Second)
	began := time.Now()
	r.cluster.RestartPrimary()
	restarted := time.Since(began)
	r.watch(began, time.Now())
	down := r.recovered(t)
	r.c.waitAcked(t, 200, 30*time.Second)
	time.Sleep(time.Second)
	r.stopLoad(t)
	r.stillServing(t)
	t.Logf("PostgreSQL restarted in %s; first payout (sent once it was back) acknowledged %s after the restart began; no payout acknowledged for %s; %s",
		restarted.Round(time.Millisecond), down.Round(time.Millisecond), r.longestGap().Round(time.Millisecond), r.c)
	if errs := r.internalErrors(); len(errs) > 0 {
		t.Errorf("%d answers 50000; the server logged: %q", r.c.internal.Load(), errs)
	}
	if lost := lostPayouts(t, r.dsn, r.ws.id, r.c); len(lost) > 0 {
		t.Errorf("%d acknowledged payouts lost in the restart, e.g. %v", len(lost), lost[:min(5, len(lost))])
	}
	r.submittedDelivered(t, r.dsn, 60*time.Second)
	r.p.term(t, 40*time.Second)
	checkPayouts(t, r.dsn, r.ws.id, r.c, r.funded)
	auditExitsZero(t, r.dsn)
}

// TestFailoverEVM: the same failover with the EVM rail (geth --dev, a
// USDT-like token): the primary dies with at least 50 payouts in flight
// (created, not yet settled: waiting for their hand-off, or signed and
// sent and not yet confirmed). Once the standby is promoted, every payout
// settles, each paid exactly once on chain: one Transfer to its own
// address, and the hot wallet short of exactly the payouts that exist.
func TestFailoverEVM(t *testing.T) {
	skipShortFault(t)
	rig := newEVMRig(t)
	// Each payout_id pays 1.00 USDT to an address of its own, derived from
	// it, so that the chain says how often each was paid.
	recipient := func(id string) common.Address { return common.BytesToAddress(crypto.Keccak256([]byte(id))[12:]) }
	hotBefore := rig.node.TokenBalance(t, rig.token, rig.hot)
	r := startFailoverRun(t, failoverOptions{
		clients: 4, amount: "1.00",
		body: func(id string) string {
			return fmt.Sprintf(`{"payout_id":%q,"amount":"1.00","asset":"USDT","network":"ETH","address":%q,"payer_id":"c"}`, id, recipient(id).Hex())
		},
		serverArgs: []string{"-processor", "evm", "-evm-config", rig.config},
	})

	// Kill the primary with at least 50 payouts in flight, some of them
	// signed and sent.
	primary := openDB(t, r.cluster.Primary.DSN("payoutkit"))
	count := func(query string) int {
		var n int
		if err := primary.QueryRow(query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var inFlight, sent int
	evmtest.Wait(t, time.Minute, "50 payouts in flight", func() bool {
		inFlight = count(`SELECT count(*) FROM payouts WHERE status = 'submitted'`)
		sent = count(`SELECT count(*) FROM payoutkit_evm_transfers WHERE state = 'pending'`)
		return inFlight >= 50 && sent > 0
	})
	killed := time.Now()
	r.cluster.KillPrimary()
	r.watch(killed, time.Now())
	primary.Close()
	r.cluster.Promote()
	promoted := time.Duration(time.Now().UnixNano() - r.since.Load())
	down := r.recovered(t)
	r.c.waitAcked(t, 20, 30*time.Second)
	r.stopLoad(t)
	r.stillServing(t)
	t.Logf("killed with %d payouts in flight (%d signed and sent, unconfirmed); promoted %s after the kill; first payout acknowledged on the new primary %s after the kill; %s",
		inFlight, sent, promoted.Round(time.Millisecond), down.Round(time.Millisecond), r.c)

	// Every payout settles on the new primary.
	newPrimary := openDB(t, r.cluster.Primary.DSN("payoutkit"))
	evmtest.Wait(t, 3*time.Minute, "every payout settled", func() bool {
		var open int
		if err := newPrimary.QueryRow(`SELECT count(*) FROM payouts WHERE workspace_id = $1 AND status = 'submitted'`, r.ws.id).Scan(&open); err != nil {
			t.Fatal(err)
		}
		return open == 0
	})
	ids := queryStrings(t, newPrimary, `SELECT payout_id FROM payouts WHERE workspace_id = $1 AND status <> 'completed'`, r.ws.id)
	if len(ids) > 0 {
		t.Errorf("%d payouts did not complete, e.g. %v", len(ids), ids[:min(5, len(ids))])
	}
	ids = queryStrings(t, newPrimary, `SELECT payout_id FROM payouts WHERE workspace_id = $1`, r.ws.id)
	for _, id := range ids {
		if n := rig.node.Transfers(t, rig.token, recipient(id)); n != 1 {
			t.Errorf("payout %s was paid %d times on chain", id, n)
		}
	}
	// Nothing was paid that no payout records (a payout lost with its
	// transfer row, paid all the same).
	paid := new(big.Int).Sub(hotBefore, rig.node.TokenBalance(t, rig.token, rig.hot))
	if want := big.NewInt(int64(len(ids)) * 1_000_000); paid.Cmp(want) != 0 {
		t.Errorf("the hot wallet paid %s units for %d payouts of 1.00 USDT", paid, len(ids))
	}
	r.p.term(t, 40*time.Second)
	checkPayouts(t, r.cluster.Primary.DSN("payoutkit"), r.ws.id, r.c, r.funded)
	auditExitsZero(t, r.dsn)
}
