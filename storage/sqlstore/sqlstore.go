// Package sqlstore is the durable payoutkit.Store: SQLite for one machine,
// PostgreSQL when one machine is not enough, from one code base over
// github.com/uptrace/bun.
//
// Open takes a DSN: a file path or a "file:" URL opens (and creates) a SQLite
// database, a "postgres://" or "postgresql://" URL a PostgreSQL one. Either
// way Open migrates the schema before it returns, so a Store is always ready
// to use.
//
// Every method that moves money is one transaction holding the balance
// change, its ledger entry, the customer's totals and its event. The database itself enforces the
// money rules: a conditional UPDATE refuses an overdraft, UNIQUE constraints
// refuse a second payout or order with the same id and a second ledger entry
// for the same cause, CHECK constraints refuse negative balances.
//
// On SQLite, writes go through one connection (so that write transactions,
// begun IMMEDIATE, never fail on a stale snapshot) beside a pool of read
// connections, with the WAL journal and synchronous=FULL, so that an
// acknowledged write survives a crash. The writes that every payout makes
// (its creation and settlement, order credits, the outbox and hand-off
// claims, delivery attempts) are group committed: concurrent ones share a
// transaction, each in its own savepoint, and so share its fsync (see
// committer). Administrative writes (workspaces, keys, webhooks, staff
// users, portal sessions, sign-in failures) keep transactions of their own
// on the writer connection. On PostgreSQL, the money movements are
// single statements (data-modifying CTEs), group committed as well: one
// transaction carries the writes queued meanwhile, one statement (one round
// trip) each, without savepoints, and holds a workspace's balance row once
// per batch instead of once per payout. Dispatchers on several instances
// claim outbox events with SELECT ... FOR UPDATE SKIP LOCKED.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/wake"
)

// The dialect names Dialect returns.
const (
	DialectSQLite   = "sqlite"
	DialectPostgres = "postgres"
)

// Store is a payoutkit.Store in a SQL database. It is safe for concurrent
// use, and several Stores (in one process or many) may share one database.
type Store struct {
	dialect string
	// w runs writes: on SQLite one connection, on PostgreSQL the pool.
	w *bun.DB
	// r runs reads: on SQLite a pool of read-only connections, on
	// PostgreSQL the same pool as w.
	r   *bun.DB
	log *slog.Logger
	// name identifies the database in errors and logs, without secrets.
	name string
	q    *queries
	// wstmts and rstmts are SQLite's prepared statements, by their SQL.
	wstmts, rstmts map[string]*sql.Stmt
	// committers group-commit the money movements, the outbox's writes and
	// the claims: one on SQLite (one writer connection), pgCommitters on
	// PostgreSQL. batch is the first, which takes the writes of no
	// workspace.
	committers []*committer
	batch      *committer
	// observeCommit is WithCommitObserver's function, or nil.
	observeCommit func(writes int, d time.Duration)
	// callerDB is set when the database handles are the caller's (New): Close
	// leaves them open.
	callerDB bool
	// tx, when set, is the caller's transaction that every read and write
	// runs in (WithTx); btx is the same, for bun's query builder.
	tx  *sql.Tx
	btx bun.Tx
	// priorityPath is, on SQLite, the database's priority file (see
	// WithPriorityWrites). priorityWriter is set by WithPriorityWrites;
	// priority is the claim of a priority store while it opens.
	priorityPath   string
	priorityWriter bool
	priorityMu     *sync.Mutex // guards priority and closing
	priority       *priorityClaim
	closing        bool
	// work tells this process's dispatchers that a write committed work
	// for them (SubscribeWork).
	work *wake.Signal
	// stats keeps a PostgreSQL store's planner statistics (statistics.go);
	// statisticsInterval is config's.
	stats              *statistics
	statisticsInterval time.Duration
	// reads groups PostgreSQL's point reads (readgroup.go); nil on SQLite.
	reads *readGroups
}

var (
	_ payoutkit.Store            = (*Store)(nil)
	_ payoutkit.KeyBalanceReader = (*Store)(nil)
)

// Option configures Open.
type Option func(*config)

type config struct {
	logger        *slog.Logger
	maxConns      int
	busyTimeout   time.Duration
	observeCommit func(writes int, d time.Duration)
	priority      bool
	// statisticsInterval is how often a PostgreSQL store looks for tables
	// to analyze (statistics.go); tests shorten it.
	statisticsInterval time.Duration
}

// WithLogger sets where the store logs (migrations, mostly). Defaults to
// slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithMaxConns bounds the connections the store opens: the PostgreSQL pool,
// or SQLite's read pool (SQLite always writes through one connection).
// Defaults to 4 × GOMAXPROCS, at least 8.
func WithMaxConns(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxConns = n
		}
	}
}

// WithBusyTimeout sets how long a SQLite write waits for another process
// that holds the database's write lock (a "keys" command beside a running
// server, say) before it fails. Defaults to 5 seconds. PostgreSQL ignores it.
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.busyTimeout = d
		}
	}
}

// WithCommitObserver has fn told of every group-commit transaction, for
// metrics: writes is how many writes the transaction carried (1 to 256) and
// d how long it took from BEGIN until every writer was answered (on
// PostgreSQL including, after an error, running its writes again one by
// one). fn runs on the committer's goroutine, which every writer waits on:
// it must return quickly. On PostgreSQL several committers call it
// concurrently. Administrative writes, which have transactions of their
// own, are not reported. Defaults to none.
func WithCommitObserver(fn func(writes int, d time.Duration)) Option {
	return func(c *config) { c.observeCommit = fn }
}

// Open opens (creating if needed) and migrates the database named by dsn: a
// file path or "file:" URL means SQLite, "postgres://" or "postgresql://" means PostgreSQL.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	s, err := open(ctx, dsn, opts...)
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.priorityMu.Lock()
	if s.priority != nil { // opened: from now on its first write claims again
		s.priority.release()
		s.priority = nil
	}
	s.priorityMu.Unlock()
	s.startCommitters()
	s.startStatistics()
	return s, nil
}

// startCommitters starts the group-commit writers: one on SQLite,
// pgCommitters on PostgreSQL.
func (s *Store) startCommitters() {
	n := 1
	if s.pg() {
		n = pgCommitters + 1 // the last one takes the writes of no workspace
	}
	for range n {
		s.committers = append(s.committers, newCommitter(s))
	}
	s.batch = s.committers[n-1]
}

// defaultConfig is the configuration before options.
func defaultConfig() config {
	return config{
		logger:      slog.Default(),
		maxConns:    max(8, 4*runtime.GOMAXPROCS(0)),
		busyTimeout: 5 * time.Second,

		statisticsInterval: statisticsInterval,
	}
}

// open connects to the database named by dsn, without migrating it or
// preparing statements.
func open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	switch lower := strings.ToLower(dsn); {
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return openPostgres(ctx, dsn, cfg)
	case strings.TrimSpace(dsn) == "":
		return nil, errors.New("sqlstore: empty DSN: give a SQLite file path or a postgres:// URL")
	default:
		return openSQLite(ctx, dsn, cfg)
	}
}

// Close closes the store's connections. Writes still waiting for their turn
// fail with ErrClosed, as do writes after Close.
func (s *Store) Close() error {
	if s.tx != nil {
		return nil // bound to the caller's transaction (WithTx)
	}
	s.stopStatistics()
	for _, c := range s.committers {
		c.close()
	}
	s.priorityMu.Lock()
	s.closing = true
	if s.priority != nil {
		s.priority.release()
		s.priority = nil
	}
	s.priorityMu.Unlock()
	var err error
	for _, st := range s.wstmts {
		err = errors.Join(err, st.Close())
	}
	for _, st := range s.rstmts {
		err = errors.Join(err, st.Close())
	}
	if s.callerDB {
		return err // the caller's to close
	}
	err = errors.Join(err, s.w.Close())
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	return err
}

// Dialect returns "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.dialect }

func (s *Store) pg() bool { return s.dialect == DialectPostgres }

func openPostgres(ctx context.Context, dsn string, cfg config) (*Store, error) {
	connCfg, err := pgx.ParseConfig(dsn) // its errors redact the password
	if err != nil {
		return nil, fmt.Errorf("sqlstore: invalid PostgreSQL DSN: %w", err)
	}
	name := fmt.Sprintf("postgres://%s:%d/%s", connCfg.Host, connCfg.Port, connCfg.Database)
	sqldb := stdlib.OpenDB(*connCfg)
	sqldb.SetMaxOpenConns(cfg.maxConns)
	sqldb.SetMaxIdleConns(cfg.maxConns)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	if err := sqldb.PingContext(ctx); err != nil {
		_ = sqldb.Close()
		return nil, fmt.Errorf("sqlstore: cannot connect to PostgreSQL database %s: %w", name, err)
	}
	db := bun.NewDB(sqldb, pgdialect.New())
	return newStore(DialectPostgres, db, db, cfg, name), nil
}

func openSQLite(ctx context.Context, dsn string, cfg config) (*Store, error) {
	path, params, err := parseSQLiteDSN(dsn)
	if err != nil {
		return nil, err
	}
	// A priority store claims the lock's next turn before its first
	// statement: opening (the journal mode, the migrations) may write too.
	var claim *priorityClaim
	if cfg.priority && params.Get("mode") != "ro" {
		if claim, err = claimPriority(priorityFile(path)); err != nil {
			return nil, fmt.Errorf("sqlstore: claiming priority on SQLite database %s: %w", path, err)
		}
	}
	opened := false
	defer func() {
		if !opened && claim != nil {
			claim.release()
		}
	}()
	busy := fmt.Sprintf("busy_timeout(%d)", cfg.busyTimeout.Milliseconds())
	// The database holds webhook secrets and password hashes: a new file is
	// created readable by its owner alone, and SQLite gives its -wal and
	// -shm files the database file's permissions.
	// Where the file cannot be made here, SQLite's own open below fails and
	// says why.
	if params.Get("mode") != "ro" {
		if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			_ = f.Close()
		}
	}

	// The writer: one connection, so that transactions queue in the process
	// instead of meeting SQLITE_BUSY, and each begins IMMEDIATE, taking the
	// write lock up front, so that none fails on a stale read snapshot.
	wp := cloneValues(params)
	wp.Set("_txlock", "immediate")
	// temp_store(MEMORY): group commit runs each write in a savepoint, and
	// SQLite keeps the pages a savepoint may have to restore in a
	// sub-journal, spilled past 64 KiB to a temporary file; kept in memory
	// it costs no system call.
	//
	// wal_autocheckpoint(4000) copies the WAL into the database every 16 MiB
	// of it instead of SQLite's 4 MiB: under load every commit rewrites the
	// same hot pages (the balance, the right edges of the indexes), and a
	// checkpoint copies each page once however often the WAL holds it, so
	// fewer checkpoints write less (examples/load, payouts on one balance:
	// 26 KB written to disk per payout instead of 31 KB, and 4% more
	// payouts a second). A _pragma of the DSN that sets it wins.
	wp["_pragma"] = append(append([]string{"wal_autocheckpoint(4000)"}, wp["_pragma"]...),
		busy, "foreign_keys(1)", "journal_mode(WAL)", "synchronous(FULL)", "temp_store(MEMORY)")
	wdb, err := sql.Open("sqlite", sqliteURI(path, wp))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: opening SQLite database %s: %w", path, err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	fail := func(err error) (*Store, error) {
		_ = wdb.Close()
		return nil, err
	}
	var mode string
	// The first connection runs the pragmas, journal_mode(WAL) among them.
	// Switching a new database to WAL needs an exclusive lock, and when
	// several processes open it at once SQLite may report SQLITE_BUSY there
	// at once, without waiting under busy_timeout (waiting could deadlock):
	// try again, as long as busy_timeout would have waited.
	for deadline := time.Now().Add(cfg.busyTimeout); ; {
		err := wdb.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
		if err == nil {
			break
		}
		if !isBusy(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return fail(openError(path, err))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.EqualFold(mode, "wal") {
		return fail(fmt.Errorf("sqlstore: SQLite database %s cannot use the WAL journal (journal_mode is %q); in-memory databases are not supported", path, mode))
	}

	// The readers: a pool that may not write.
	rp := cloneValues(params)
	rp["_pragma"] = append(rp["_pragma"], busy, "foreign_keys(1)", "query_only(1)")
	rdb, err := sql.Open("sqlite", sqliteURI(path, rp))
	if err != nil {
		return fail(fmt.Errorf("sqlstore: opening SQLite database %s: %w", path, err))
	}
	rdb.SetMaxOpenConns(cfg.maxConns)
	rdb.SetMaxIdleConns(cfg.maxConns)
	rdb.SetConnMaxIdleTime(5 * time.Minute)

	s := newStore(DialectSQLite, bun.NewDB(wdb, sqlitedialect.New()), bun.NewDB(rdb, sqlitedialect.New()), cfg, path)
	s.priorityPath, s.priority, s.priorityWriter = priorityFile(path), claim, cfg.priority
	opened = true
	return s, nil
}

// SubscribeWork returns a channel that receives when this store has
// committed work for the engine's loops (a new event, a payout to hand
// over, an event sent again), and cancel, which ends the subscription
// (payoutkit.WorkNotifier). The loops of an engine over this store
// subscribe by themselves, so that they claim such work at once instead of
// at their next poll. Work committed by
// other processes, or in a caller's transaction (WithTx), is left to the
// poll.
func (s *Store) SubscribeWork() (ch <-chan struct{}, cancel func()) { return s.work.Subscribe() }

// workCommitted signals SubscribeWork's subscribers, unless the write ran in
// a caller's transaction, which has not committed yet.
func (s *Store) workCommitted() {
	if s.tx == nil {
		s.work.Notify()
	}
}

func newStore(dialect string, w, r *bun.DB, cfg config, name string) *Store {
	s := &Store{dialect: dialect, w: w, r: r, log: cfg.logger, name: name, q: queriesFor(dialect), observeCommit: cfg.observeCommit,
		priorityMu: new(sync.Mutex), work: new(wake.Signal), statisticsInterval: cfg.statisticsInterval}
	if dialect == DialectPostgres {
		s.reads = newReadGroups(r.DB, readLanes)
	}
	return s
}

// ownedSQLiteParams are the DSN parameters the store sets itself on SQLite:
// a caller's values for them are dropped, because the store's guarantees
// depend on them.
var ownedSQLiteParams = []string{
	"_txlock", "_busy_timeout", "_timeout", "_foreign_keys", "_fk", "_journal_mode", "_journal",
	"_synchronous", "_sync", "_query_only", "_time_format", "_time_integer_format", "_inttotime", "_texttotime", "_timezone",
}

var ownedPragmas = []string{"busy_timeout", "foreign_keys", "journal_mode", "synchronous", "query_only"}

// parseSQLiteDSN splits a SQLite DSN into the file path and the parameters
// to keep. A plain path is taken literally ('?' included); a "file:" URL
// may carry SQLite's URI parameters (mode=ro, vfs, ...) and further
// _pragma values.
func parseSQLiteDSN(dsn string) (string, url.Values, error) {
	if !strings.HasPrefix(dsn, "file:") {
		return dsn, url.Values{}, nil
	}
	rest := strings.TrimPrefix(dsn, "file:")
	pathPart, rawQuery, _ := strings.Cut(rest, "?")
	if strings.HasPrefix(pathPart, "//") { // file:///abs/path or file://localhost/abs/path
		u, err := url.Parse(dsn)
		if err != nil {
			return "", nil, fmt.Errorf("sqlstore: invalid SQLite URL: %w", err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return "", nil, fmt.Errorf("sqlstore: invalid SQLite URL: host %q is not allowed", u.Host)
		}
		pathPart = u.Path
	} else if p, err := url.PathUnescape(pathPart); err == nil {
		pathPart = p
	} else {
		return "", nil, fmt.Errorf("sqlstore: invalid SQLite URL: %w", err)
	}
	if pathPart == "" || pathPart == ":memory:" {
		return "", nil, errors.New("sqlstore: in-memory SQLite databases are not supported; use storage/memstore")
	}
	params, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", nil, fmt.Errorf("sqlstore: invalid SQLite URL parameters: %w", err)
	}
	if params.Get("mode") == "memory" {
		return "", nil, errors.New("sqlstore: in-memory SQLite databases are not supported; use storage/memstore")
	}
	for _, k := range ownedSQLiteParams {
		params.Del(k)
	}
	var pragmas []string
	for _, p := range params["_pragma"] {
		name := strings.ToLower(strings.TrimSpace(p))
		if i := strings.IndexAny(name, "(= "); i >= 0 {
			name = name[:i]
		}
		owned := false
		for _, o := range ownedPragmas {
			owned = owned || name == o
		}
		if !owned {
			pragmas = append(pragmas, p)
		}
	}
	params.Del("_pragma")
	if len(pragmas) > 0 {
		params["_pragma"] = pragmas
	}
	return pathPart, params, nil
}

// sqliteURI renders a "file:" URI for the driver. SQLite reads the path
// with %-escapes, so the characters that would end or escape it are escaped.
func sqliteURI(path string, params url.Values) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + esc + "?" + params.Encode()
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v)+2)
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
