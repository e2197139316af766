// Command load drives payoutkit's /v1 API with a closed-loop HTTP load and
// reports what a user would see: requests per second, latency percentiles,
// webhook delivery lag, the server's memory and CPU, and a money check at the
// end. Every run also measures a bare net/http handler that answers a
// constant JSON body with the same tool on the same machine, because on a
// shared machine only ratios measured in one run are worth comparing.
//
//	go run ./examples/load                                   # payouts on one hot balance, fresh SQLite
//	go run ./examples/load -workload payouts,balance,mixed -duration 10s
//	go run ./examples/load -db 'postgres://user:pass@127.0.0.1:5432/db?sslmode=disable'
//	go run ./examples/load -workload payouts-spread -workspaces 100
//	go run ./examples/load -workload payouts,payouts-controlled   # the payout controls' cost
//	go run ./examples/load -url http://127.0.0.1:8080 -key sk_... -workload balance
//	go run ./examples/load -workload payouts-batch-nowebhook,payouts-batch -batch-size 1000 -batch-clients 4
//
// By default it builds examples/server, creates its workspaces with the
// server's admin command (each with this tool's webhook receiver as its
// destination), starts the server on a loopback port and stops it at the
// end. With -url and -key it drives a server that is already running
// instead; it then cannot see the server's memory (unless -pid is given) or
// receive its webhooks. It only ever talks to loopback addresses, and every
// workload is bounded by -duration and -requests.
//
// The batch workloads (contract section 12) send POST /v1/payouts/batch,
// -batch-size payouts each (a fresh batch_id and fresh payout_ids every
// time) from -batch-clients clients, to one hot workspace: payouts-batch to
// the one whose webhooks come to this tool, payouts-batch-nowebhook to one
// without a webhook URL. A request there is a batch, so the report adds
// their figures per payout: payouts a second, the server's (and database's)
// CPU a payout as a multiple of the bare handler's CPU a request, and, with
// webhooks, how long after each batch's answer the last of its webhooks
// arrived. Their batches still in flight when the time is up are answered
// rather than cut off, and the server is left to settle (its hand-offs
// done) before its CPU is read.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == baselineCommand {
		if err := serveBaseline(ctx, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "load baseline:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "load:", err)
		}
		os.Exit(1)
	}
}

// workloads names what the tool can run; see runWorkload.
var workloads = []string{"payouts", "payouts-spread", "payouts-controlled", "balance", "mixed", "payouts-batch", "payouts-batch-nowebhook"}

// isBatch reports whether workload w sends batches (POST /v1/payouts/batch).
func isBatch(w string) bool { return strings.HasPrefix(w, "payouts-batch") }

// options is the command line.
type options struct {
	workloads   []string
	clients     int
	duration    time.Duration
	requests    int
	workspaces  int
	db          string
	serverBin   string
	serverArgs  []string
	url, key    string
	pid         int
	drainWait   time.Duration
	idleWait    time.Duration
	baseline    bool
	jsonOut     bool
	fundCents   int64
	payoutCents int64
	prefill     int
	cpuProfile  string
	// batchSize and batchClients shape the batch workloads: payouts per
	// batch, and the clients that send them.
	batchSize    int
	batchClients int
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	workload := fs.String("workload", "payouts", "comma-separated `workloads`: "+strings.Join(workloads, ", "))
	fs.IntVar(&o.clients, "clients", 64, "concurrent keep-alive clients (a closed loop: each sends its next request when the last is answered)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long each workload runs")
	fs.IntVar(&o.requests, "requests", 0, "stop each workload after this many requests (0: only -duration)")
	fs.IntVar(&o.workspaces, "workspaces", 100, "workspaces for payouts-spread")
	fs.StringVar(&o.db, "db", "", "database of the started server: a SQLite file `path` or a postgres:// URL (default: a fresh SQLite file in a temporary directory)")
	fs.StringVar(&o.serverBin, "server", "", "server `binary` to start (default: go build ./examples/server)")
	serverArgs := fs.String("server-args", "", "extra serve `flags` for the started server, space-separated")
	fs.StringVar(&o.url, "url", "", "drive a running server at this loopback `URL` instead of starting one (needs -key)")
	fs.StringVar(&o.key, "key", os.Getenv("PAYOUTKIT_LOAD_KEY"), "API `key` for -url (default $PAYOUTKIT_LOAD_KEY)")
	fs.IntVar(&o.pid, "pid", 0, "process id of the -url server, to report its memory and CPU")
	fs.DurationVar(&o.drainWait, "drain-wait", time.Minute, "how long to wait after a workload for its webhooks")
	fs.DurationVar(&o.idleWait, "idle", 5*time.Second, "how long to measure the idle server's CPU at the end (0: skip)")
	fs.BoolVar(&o.baseline, "baseline", true, "measure the bare net/http baseline first")
	fs.BoolVar(&o.jsonOut, "json", false, "print the report as JSON")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write the load tool's own CPU profile (its clients and webhook receiver) to `file`, for go tool pprof")
	fs.IntVar(&o.prefill, "prefill", 0, "store this many payouts in the hot workspace before the server starts (to measure with a large database)")
	fs.IntVar(&o.batchSize, "batch-size", 100, "payouts in each batch of the payouts-batch workloads (1 to 1000)")
	fs.IntVar(&o.batchClients, "batch-clients", 4, "concurrent clients of the payouts-batch workloads (instead of -clients)")
	fund := fs.String("fund", "10000000.00", "USD `amount` each workspace is funded with")
	payout := fs.String("amount", "1.00", "USD `amount` of each payout")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o.workloads = strings.Split(*workload, ",")
	for _, w := range o.workloads {
		if !slices.Contains(workloads, w) {
			return o, fmt.Errorf("unknown workload %q (want %s)", w, strings.Join(workloads, ", "))
		}
	}
	o.serverArgs = strings.Fields(*serverArgs)
	var err error
	if o.fundCents, err = parseCents(*fund); err != nil {
		return o, fmt.Errorf("-fund: %w", err)
	}
	if o.payoutCents, err = parseCents(*payout); err != nil {
		return o, fmt.Errorf("-amount: %w", err)
	}
	switch {
	case o.clients < 1 || o.clients > 4096:
		return o, errors.New("-clients must be between 1 and 4096")
	case o.duration <= 0 || o.duration > time.Hour:
		return o, errors.New("-duration must be positive and at most 1h")
	case o.requests < 0:
		return o, errors.New("-requests must not be negative")
	case o.workspaces < 1 || o.workspaces > 10_000:
		return o, errors.New("-workspaces must be between 1 and 10000")
	case o.url != "" && o.key == "":
		return o, errors.New("-url needs -key")
	case o.url == "" && o.pid != 0:
		return o, errors.New("-pid goes with -url")
	case o.prefill < 0 || o.prefill > 10_000_000:
		return o, errors.New("-prefill must be between 0 and 10000000")
	case o.url != "" && o.prefill > 0:
		return o, errors.New("-prefill needs a server this tool starts (no -url)")
	case o.url != "" && slices.Contains(o.workloads, "payouts-spread"):
		return o, errors.New("payouts-spread creates its workspaces, so it needs a server this tool starts (no -url)")
	case o.url != "" && slices.Contains(o.workloads, "payouts-controlled"):
		return o, errors.New("payouts-controlled creates its workspace, so it needs a server this tool starts (no -url)")
	case o.url != "" && slices.Contains(o.workloads, "payouts-batch-nowebhook"):
		return o, errors.New("payouts-batch-nowebhook creates its workspace, so it needs a server this tool starts (no -url)")
	case o.batchSize < 1 || o.batchSize > 1000:
		return o, errors.New("-batch-size must be between 1 and 1000")
	case o.batchClients < 1 || o.batchClients > 4096:
		return o, errors.New("-batch-clients must be between 1 and 4096")
	}
	if o.url != "" {
		if err := loopbackOnly(o.url); err != nil {
			return o, err
		}
	}
	return o, nil
}

// loopbackOnly refuses a URL whose host is not a loopback address: this tool
// is for measuring one's own machine, not for loading someone else's.
func loopbackOnly(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("-url %q: want http://127.0.0.1:port", raw)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-url %q: only loopback addresses are allowed", raw)
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	progress := func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	if o.cpuProfile != "" {
		stop, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	rep, err := execute(ctx, o, progress)
	if err != nil {
		return err
	}
	if o.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		rep.print(stdout)
	}
	if !rep.MoneyOK || !rep.EventsOK {
		return errors.New("the money or event check failed (see the report)")
	}
	return nil
}

// startCPUProfile profiles the load tool's own CPU into path until stop: what
// the load tool spends, a server on the same cores cannot have.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// execute sets up the target, runs the baseline and every workload, and
// checks the money.
func execute(ctx context.Context, o options, progress func(string, ...any)) (*report, error) {
	rep := &report{Clients: o.clients, Duration: o.duration.String()}
	if o.baseline {
		progress("baseline: a bare net/http handler answering a constant JSON body")
		b, err := startBaseline(ctx)
		if err != nil {
			return nil, err
		}
		res := measure(b.pid, nil, func() result {
			return drive(ctx, o.loop(), b.url, func(int) request { return request{method: "GET", path: "/v1/balance", key: "sk_baseline"} })
		}, nil)
		b.stop()
		res.Name = "baseline (bare net/http)"
		rep.Baseline = &res
	}

	recv, err := startReceiver()
	if err != nil {
		return nil, err
	}
	defer recv.close()

	t, err := newTarget(ctx, o, recv, progress)
	if err != nil {
		return nil, err
	}
	defer t.close()
	rep.Target = t.describe()

	for _, w := range o.workloads {
		if isBatch(w) {
			progress("workload %s: batches of %d, %d clients for %s", w, o.batchSize, o.batchClients, o.duration)
		} else {
			progress("workload %s: %d clients for %s", w, o.clients, o.duration)
		}
		var settle func(*result)
		if t.receives() {
			settle = func(res *result) { res.Delivery = recv.waitDelivered(ctx, res.loadEnded, o.drainWait) }
		}
		res, err := runWorkload(ctx, o, t, w, settle)
		if err != nil {
			return nil, err
		}
		if b := rep.Baseline; b != nil && b.Rate > 0 {
			res.RatioToBaseline = res.Rate / b.Rate
		}
		if b := rep.Baseline; b != nil && b.ServerCPUPerOp > 0 && res.ServerCPUPerOp > 0 {
			res.CPUPerOpXBaseline = (res.ServerCPUPerOp + res.DatabaseCPUPerOp) / b.ServerCPUPerOp
			if bf := res.Batch; bf != nil && bf.ServerCPUPerOp > 0 {
				bf.CPUPerOpXBaseline = (bf.ServerCPUPerOp + bf.DatabaseCPUPerOp) / b.ServerCPUPerOp
			}
		}
		rep.Workloads = append(rep.Workloads, res)
	}
	if t.pid() != 0 {
		rep.Server = t.usage(ctx, o.idleWait)
	}
	rep.MoneyOK, rep.Money = t.checkMoney(ctx)
	rep.EventsOK = true
	if t.receives() {
		// Unanswered payouts sent again by the money check may have
		// just been created; wait for their events too.
		recv.waitDelivered(ctx, time.Now(), o.drainWait)
		rep.Events = recv.check(t.expectedEvents())
		rep.EventsOK = rep.Events.Missing == 0 && rep.Events.BadSignatures == 0
	}
	return rep, nil
}
