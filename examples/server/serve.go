package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/httpserver"
	"github.com/payoutkit/payoutkit/portal"
	"github.com/payoutkit/payoutkit/processor/bitcoin"
	"github.com/payoutkit/payoutkit/processor/evm"
	sandboxrail "github.com/payoutkit/payoutkit/processor/sandbox" // -sandbox is a flag here
	"github.com/payoutkit/payoutkit/staff"
	"github.com/payoutkit/payoutkit/storage/postgres"
)

// shutdownTimeout bounds how long serve waits for in-flight requests after
// SIGTERM.
const shutdownTimeout = 30 * time.Second

// Test hooks. listening, when set, is told the address serve listens on;
// passwordCost, when set, replaces the engine's bcrypt cost of staff
// passwords.
var (
	listening    func(net.Addr)
	passwordCost int
)

// serveCommand serves the API, the portal and webhook delivery until ctx
// ends.
func serveCommand(fs *flag.FlagSet) runFunc {
	addr := fs.String("addr", ":8080", "`address` to listen on")
	dsn := dbFlag(fs)
	sandbox := fs.Bool("sandbox", true, "serve the /v1/sandbox endpoints, move no real money, and deliver webhooks to private addresses")
	settleAfter := fs.Duration("sandbox-settle-after", 0, "complete sandbox payouts by themselves after this `duration` (0: only by hand)")
	processor := fs.String("processor", processorSandbox, "the payout `rails`: sandbox (moves no money; with -sandbox, payouts settle by hand or after -sandbox-settle-after), evm (pays out on EVM networks as -evm-config says), bitcoin (pays BTC as -bitcoin-config says), or evm,bitcoin (each payout by its network)")
	evmConfigFile := fs.String("evm-config", "", "JSON `file` of -processor evm: the networks, their RPC URLs and tokens, the hot wallet's key file (see docs/EVM.md)")
	bitcoinConfigFile := fs.String("bitcoin-config", "", "JSON `file` of -processor bitcoin: the node's RPC, the network, the hot wallet's key file, batching and fees (see docs/BITCOIN.md)")
	rateLimit := fs.Float64("rate-limit", 0, "requests per second allowed per workspace, whichever of its API keys they use (0: no limit)")
	trustedProxies := fs.String("trusted-proxies", "", "comma-separated `CIDR` ranges (or addresses) of reverse proxies whose X-Forwarded-For names the client, for API keys' address allowlists and the failed-authentication limit (default: none; X-Forwarded-For is ignored)")
	authFailures := fs.Int("auth-failure-limit", httpserver.DefaultAuthFailureLimit, "failed authentications allowed per minute per client address before it is answered 42900 without a key lookup (0: no limit)")
	allowPrivate := fs.Bool("webhook-allow-private", false, "deliver webhooks to loopback and private addresses outside the sandbox too")
	withPortal := fs.Bool("portal", true, "serve the staff portal at / beside /v1")
	readDSN := fs.String("read-db", "", "postgres:// URL of a standby the portal's pages, lists and CSV exports read from (they may lag it by a few seconds); money decisions, /v1 and every write stay on -db (empty: everything on -db)")
	logFormat := fs.String("log-format", "json", "log lines as `json` or text")
	retention := fs.Duration("event-retention", payoutkit.DefaultRetention, "delete delivered webhook events recorded longer ago than this `duration` (negative: keep all)")
	lease := fs.Duration("delivery-lease", time.Minute, "how long a webhook event or payout hand-off claimed by this instance stays reserved to it; another instance takes it over this `duration` after this one dies (at least 2s; under 20s shortens the webhook timeout to half of it)")
	coinsFile := fs.String("coins", "", "JSON `file` listing the payout coins with their decimals and limits, replacing the default list")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at /metrics on this separate `address`, never on -addr (empty: off)")
	withPprof := fs.Bool("pprof", false, "also serve Go's profiles (net/http/pprof) at /debug/pprof/ on -metrics-addr")
	credentialsFile := fs.String("credentials-file", "", "`file` the first start writes the first workspace's credentials to, never over an existing one (default: beside the SQLite database, <db>"+credentialsFileSuffix+"; payoutkit"+credentialsFileSuffix+" in the working directory for PostgreSQL)")
	keyFile := fs.String("secret-key-file", "", "`file` of the key that seals webhook secrets when "+envSecretKey+" is unset; the first start makes it (default: beside the SQLite database, <db>"+secretKeyFileSuffix+"; none for PostgreSQL)")
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		evmOn, bitcoinOn, err := parseProcessors(*processor)
		if err != nil {
			return err
		}
		switch {
		case *settleAfter < 0:
			return usagef("-sandbox-settle-after must not be negative")
		case *settleAfter > 0 && !*sandbox:
			return usagef("-sandbox-settle-after needs -sandbox")
		case math.IsNaN(*rateLimit) || *rateLimit < 0 || *rateLimit > 1e6 || (*rateLimit > 0 && *rateLimit < 0.001):
			return usagef("-rate-limit must be 0 (off) or between 0.001 and 1000000 requests per second")
		case *authFailures < 0:
			return usagef("-auth-failure-limit must not be negative (0 turns it off)")
		case *logFormat != "json" && *logFormat != "text":
			return usagef("-log-format must be json or text")
		case *retention == 0:
			return usagef("-event-retention must not be zero (negative keeps every event)")
		case *lease < 2*time.Second:
			return usagef("-delivery-lease must be at least 2s")
		case *withPprof && *metricsAddr == "":
			return usagef("-pprof needs -metrics-addr")
		case evmOn && *evmConfigFile == "":
			return usagef("-processor evm needs -evm-config")
		case !evmOn && *evmConfigFile != "":
			return usagef("-evm-config needs -processor evm")
		case bitcoinOn && *bitcoinConfigFile == "":
			return usagef("-processor bitcoin needs -bitcoin-config")
		case !bitcoinOn && *bitcoinConfigFile != "":
			return usagef("-bitcoin-config needs -processor bitcoin")
		case (evmOn || bitcoinOn) && *settleAfter > 0:
			return usagef("-sandbox-settle-after needs -processor sandbox")
		}

		proxies, err := parseTrustedProxies(*trustedProxies)
		if err != nil {
			return err
		}
		coins, err := loadCoins(*coinsFile)
		if err != nil {
			return err
		}
		var evmConfig evm.Config
		if evmOn {
			if evmConfig, err = loadEVMConfig(*evmConfigFile); err != nil {
				return err
			}
		}
		var bitcoinConfig bitcoin.Config
		if bitcoinOn {
			if bitcoinConfig, err = loadBitcoinConfig(*bitcoinConfigFile); err != nil {
				return err
			}
		}

		// The port is bound before anything is made: a start that cannot serve
		// creates no database, no key and no credentials.
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			return fmt.Errorf("cannot listen on -addr %s (nothing was created): %w", *addr, err)
		}
		defer ln.Close() // Serve closes it too; this covers the returns before

		log := newLogger(stderr, *logFormat)
		var m *metrics // nil: no metrics, no hooks
		if *metricsAddr != "" {
			m = newMetrics()
		}
		store, err := openStore(ctx, *dsn, log, m.storeOptions()...)
		if err != nil {
			return err
		}
		defer store.Close()
		// Before the first workspace too: a start that cannot serve its
		// metrics prints no credentials.
		if m != nil {
			stopMetrics, err := m.serveMetrics(ctx, *metricsAddr, *withPprof, store, log)
			if err != nil {
				return fmt.Errorf("metrics listener: %w", err)
			}
			defer stopMetrics()
		}

		done, err := initialised(ctx, store)
		if err != nil {
			return err
		}
		credentials := cmp.Or(*credentialsFile, defaultCredentialsFile(*dsn))
		keys, err := secretKeys(*dsn, *keyFile, !done)
		if err != nil {
			return err
		}
		logSealing(log, *dsn, keys, true)
		cfg := &payoutkit.Config{Logger: log, PasswordCost: passwordCost, SecretKeys: keys.ring, ObservePayout: m.observePayout(),
			CursorKey: cursorKey(keys),
			Delivery: payoutkit.DeliveryConfig{
				// One attempt ends within its lease: a lease under 20s shortens the timeout.
				Notifier:       &payoutkit.HTTPNotifier{AllowPrivate: *sandbox || *allowPrivate, Timeout: min(payoutkit.DefaultTimeout, *lease/2)},
				Lease:          *lease,
				Retention:      *retention,
				ObserveAttempt: m.observeAttempt(),
			}}
		cfg.Coins = coins // nil: the default list
		var rail *evm.Processor
		var btcRail *bitcoin.Processor
		switch {
		case evmOn || bitcoinOn:
			var routed rails
			if evmOn {
				var closeEVM func()
				if rail, closeEVM, err = openEVM(ctx, *dsn, evmConfig, log, m); err != nil {
					return fmt.Errorf("-processor evm: %w", err)
				}
				defer closeEVM()
				routed.evm, routed.evmURL = rail, rail.ExplorerURL
			}
			if bitcoinOn {
				var closeBitcoin func()
				if btcRail, closeBitcoin, err = openBitcoin(ctx, *dsn, bitcoinConfig, log, m); err != nil {
					return fmt.Errorf("-processor bitcoin: %w", err)
				}
				defer closeBitcoin()
				routed.bitcoin = btcRail
				cfg.AddressValidators = bitcoinAddresses(bitcoinConfig)
			}
			cfg.Processor = routed
			if bitcoinOn && !evmOn {
				cfg.Processor = btcRail
			} else if evmOn && !bitcoinOn {
				cfg.Processor = rail
			}
		case *sandbox:
			// Payouts reach it through the engine's hand-off loop (Start below).
			cfg.Processor = &sandboxrail.Processor{SettleAfter: *settleAfter}
		}
		engine, err := payoutkit.New(store, cfg)
		if err != nil {
			return err
		}
		if err := bootstrap(ctx, engine, store, *dsn, credentials, stdout, log); err != nil {
			return err
		}

		var handler http.Handler = httpserver.New(engine, httpserver.Options{
			Logger: log, Sandbox: *sandbox, RateLimit: *rateLimit, TrustedProxies: proxies,
			AuthFailureLimit: cmp.Or(*authFailures, -1), // 0 (off) is negative for httpserver
			ObserveRequest:   m.observeRequest(),
		})
		var site http.Handler // nil: no portal, the API answers 40400
		if *withPortal {
			po := portal.Options{Logger: log, ClientAddress: func(r *http.Request) string {
				// The security log records the client address /v1 judges keys by.
				if a := httpserver.ClientAddr(r.RemoteAddr, r.Header.Values("X-Forwarded-For"), proxies); a.IsValid() {
					return a.String()
				}
				return ""
			}}
			if r, ok := cfg.Processor.(explorerLinker); ok {
				po.ExplorerURL = r.ExplorerURL
			} else if btcRail != nil {
				po.ExplorerURL = func(_, txid string) string { return btcRail.ExplorerURL(txid) }
			}
			team, err := staff.New(store, &staff.Config{Logger: log, PasswordCost: passwordCost, SecretKeys: keys.ring})
			if err != nil {
				return err
			}
			var pages portal.Service = engine
			if *readDSN != "" {
				reads, closeReads, err := openReplica(ctx, *readDSN, log, cfg)
				if err != nil {
					return err
				}
				defer closeReads()
				pages, po.ReadsFromStandby = standbyReads{Engine: engine, reads: reads}, true
			}
			site = portal.New(pages, team, po)
		}
		handler = mount(handler, site, health(store))
		srv := &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      60 * time.Second,
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    1 << 20,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		}

		// The loops outlive ctx: they stop after the server has drained.
		if err := engine.Start(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		defer engine.Stop(context.WithoutCancel(ctx))
		if rail != nil {
			// The watcher settles payouts from their receipts through the engine.
			if err := rail.Start(context.WithoutCancel(ctx), engine); err != nil {
				return err
			}
			defer rail.Stop(context.WithoutCancel(ctx))
		}
		if btcRail != nil {
			// The loop batches, broadcasts and settles through the engine.
			if err := btcRail.Start(context.WithoutCancel(ctx), engine); err != nil {
				return err
			}
			defer btcRail.Stop(context.WithoutCancel(ctx))
		}

		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		log.Info("serving", "addr", ln.Addr().String(), "sandbox", *sandbox, "processor", *processor, "portal", *withPortal,
			"sandbox_settle_after", settleAfter.String(), "rate_limit", *rateLimit, "auth_failure_limit", *authFailures, "db", describeDSN(*dsn),
			"webhook_secrets_sealed_with", keys.ring.CurrentKeyID())
		if listening != nil {
			listening(ln.Addr())
		}

		select {
		case err := <-served:
			return fmt.Errorf("serving: %w", err)
		case <-ctx.Done():
		}
		log.Info("shutting down: draining in-flight requests")
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			return fmt.Errorf("shutting down: %w", err)
		}
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		log.Info("stopped")
		return nil
	}
}

// mount serves /v1 and everything under it with api, /healthz and /readyz
// with probes, and the rest with site (the portal), or with api's 40400
// when there is no portal.
func mount(api, site, probes http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/v1" || strings.HasPrefix(p, "/v1/"):
			api.ServeHTTP(w, r)
		case p == "/healthz" || p == "/readyz":
			probes.ServeHTTP(w, r)
		case site == nil:
			api.ServeHTTP(w, r)
		default:
			site.ServeHTTP(w, r)
		}
	})
}

// readiness is what /readyz asks of the store.
type readiness interface {
	Ready(ctx context.Context) error
}

// durable is a store that can say what an acknowledged commit survives
// (storage/postgres).
type durable interface {
	Durability(ctx context.Context) (postgres.Durability, error)
}

// health answers GET /healthz with 200 while the process serves, and GET
// /readyz with 200 while the database answers (on PostgreSQL: a primary)
// and its schema is current, 503 otherwise. Neither needs a key. On
// PostgreSQL, /readyz adds what an acknowledged commit survives (its
// durability member), so that a probe shows a primary without a
// synchronous standby.
func health(store payoutkit.Store) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeProbe(w, http.StatusOK, probe{Status: "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ready, ok := store.(readiness)
		if !ok {
			writeProbe(w, http.StatusOK, probe{Status: "ok"})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := ready.Ready(ctx); err != nil {
			writeProbe(w, http.StatusServiceUnavailable, probe{Status: "unavailable"})
			return
		}
		p := probe{Status: "ok"}
		if d, ok := store.(durable); ok {
			dur, err := d.Durability(ctx)
			if err != nil {
				writeProbe(w, http.StatusServiceUnavailable, probe{Status: "unavailable"})
				return
			}
			p.Durability = &probeDurability{Replicated: dur.Replicated(), SynchronousCommit: dur.SynchronousCommit,
				SynchronousStandbyNames: dur.SynchronousStandbyNames, SynchronousStandbys: dur.SynchronousStandbysReady}
		}
		writeProbe(w, http.StatusOK, p)
	})
	return mux
}

// probe is a probe's answer.
type probe struct {
	Status     string           `json:"status"`
	Durability *probeDurability `json:"durability,omitempty"`
}

type probeDurability struct {
	Replicated              bool   `json:"replicated"`
	SynchronousCommit       string `json:"synchronous_commit"`
	SynchronousStandbyNames string `json:"synchronous_standby_names"`
	SynchronousStandbys     int    `json:"synchronous_standbys"`
}

func writeProbe(w http.ResponseWriter, status int, p probe) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	b, _ := json.Marshal(p) // strings and numbers always encode
	w.Write(append(b, '\n'))
}

// bootstrap creates the first workspace of an empty database and prints it,
// on stdout and into the credentials file; on a database that has one, it
// says on stderr how to make a new key or staff login. Of several instances
// starting at once on one database, one creates it.
func bootstrap(ctx context.Context, engine *payoutkit.Engine, store payoutkit.Store, dsn, credentials string, stdout io.Writer, log *slog.Logger) error {
	nw, created, err := engine.Bootstrap(ctx)
	if err != nil {
		return fmt.Errorf("creating the first workspace: %w", err)
	}
	if !created {
		ids, err := store.WorkspaceIDs(ctx)
		if err != nil {
			return err
		}
		ws := "<workspace id>"
		if len(ids) == 1 {
			ws = ids[0]
		}
		attrs := []any{"workspaces", len(ids)}
		if fileExists(credentials) {
			attrs = append(attrs, "credentials_file", credentials)
		}
		log.Info("the database has its workspaces: the first start printed the first one's API key and staff password (and wrote them to its credentials file); to make new ones: "+
			"`server keys create -db "+describeDSN(dsn)+" -workspace "+ws+"` for an API key, "+
			"`server staff add|reset-password -db "+describeDSN(dsn)+" -workspace "+ws+" -email <e-mail>` for a staff login",
			attrs...)
		return nil
	}
	out := newWorkspaceJSON(nw)
	log.Info("empty database: created the first workspace; its API key and staff password are printed once, on stdout",
		"workspace_id", nw.Workspace.ID, "key_prefix", nw.APIKey.Prefix, "staff_email", nw.StaffEmail)
	// The file first: it keeps them should stdout fail. A file that is
	// there already (an earlier database's) is never replaced: the new
	// credentials go beside it, under a name of their workspace's own.
	err = writeCredentials(credentials, out)
	if errors.Is(err, fs.ErrExist) {
		credentials = strings.TrimSuffix(credentials, ".json") + "-" + nw.Workspace.ID + ".json"
		err = writeCredentials(credentials, out)
	}
	if err != nil {
		log.Error("the first workspace's credentials are on stdout only: writing them to the credentials file failed", "credentials_file", credentials, "error", err.Error())
	} else {
		log.Info("wrote the first workspace's credentials to the credentials file, readable by its owner alone; keep them safe, then delete it",
			"credentials_file", credentials)
	}
	return printJSON(stdout, out)
}

// openStore opens the database named by dsn (a SQLite path or a postgres URL).
func openStore(ctx context.Context, dsn string, log *slog.Logger, opts ...storeOption) (sqlStore, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, usagef("-db is required")
	}
	s, err := openDSN(ctx, dsn, append([]storeOption{func(c *storeConfig) { c.log = log }}, opts...)...)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// describeDSN names the database for a log line without a password.
func describeDSN(dsn string) string {
	if i := strings.Index(dsn, "://"); i >= 0 {
		rest := dsn[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			rest = rest[at+1:]
		}
		if q := strings.IndexByte(rest, '?'); q >= 0 {
			rest = rest[:q]
		}
		return dsn[:i+3] + rest
	}
	return dsn
}

// newLogger logs to w in the given format: "text", or JSON lines.
func newLogger(w io.Writer, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// dbFlag defines the -db flag every command shares.
func dbFlag(fs *flag.FlagSet) *string {
	return fs.String("db", "./payoutkit.db", "database: a SQLite file `path` or a postgres:// URL")
}

// parseFlags sets every flag (or only those in envFlags, when given) from
// its PAYOUTKIT_<NAME> variable, then parses args over them.
func parseFlags(fs *flag.FlagSet, args []string, envFlags []string) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || envFlags != nil && !slices.Contains(envFlags, f.Name) {
			return
		}
		name := envName(f.Name)
		if v, ok := os.LookupEnv(name); ok {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = usagef("%s=%q: %v", name, v, serr)
			}
		}
	})
	if err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// envName is the environment variable of a flag: PAYOUTKIT_ and the name in
// upper case with dashes as underscores.
func envName(flagName string) string {
	return "PAYOUTKIT_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseTrustedProxies reads -trusted-proxies: CIDR ranges or single
// addresses, comma-separated.
func parseTrustedProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, entry := range strings.Split(list, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if p, err := netip.ParsePrefix(entry); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(entry)
		if err != nil || a.Zone() != "" {
			return nil, usagef("-trusted-proxies: %q is not a CIDR range or an IP address", entry)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}
