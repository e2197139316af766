// Package sqlite is payoutkit's durable store on SQLite, for one machine:
// a payoutkit.Store over a database file, through modernc.org/sqlite (pure
// Go, no cgo).
//
// Open takes a file path or a "file:" URL, creates the database if needed
// and migrates its schema before it returns, so a Store is always ready to
// use. New does the same over a *bun.DB the program already has, and WithTx
// binds a store to a bun.Tx of the program's, so that payoutkit's writes
// commit or roll back with the program's own. That is all bun is here: the
// caller's handle on the database, and its dialect's name. The store's own
// statements are plain SQL through database/sql, most of them prepared.
//
// Every method that moves money is one transaction holding the balance
// change, its ledger entry, the customer's totals and its event. The
// database itself enforces the money rules: a conditional UPDATE refuses an
// overdraft, UNIQUE constraints refuse a second payout or order with the
// same id and a second ledger entry for the same cause, CHECK constraints
// refuse negative balances.
//
// Writes go through one connection (so that write transactions, begun
// IMMEDIATE, never fail on a stale snapshot) beside a pool of read
// connections, with the WAL journal and synchronous=FULL, so that an
// acknowledged write survives a crash. The writes that every payout makes
// (its creation and settlement, order credits, the outbox and hand-off
// claims, delivery attempts) are group committed: concurrent ones share a
// transaction, each in its own savepoint (or none, for a write that
// refuses before changing anything), and so share its fsync
// (docs/ARCHITECTURE.md). Administrative writes (workspaces, keys, webhooks, staff
// users, portal sessions, sign-in failures) keep transactions of their own
// on the writer connection.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/wake"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// Errors for conditions that no payoutkit sentinel describes. Both are
// internal errors to an API caller (a 500), but an operator or a retry loop
// can tell them apart with errors.Is. storage/postgres returns the same
// values.
var (
	// ErrBusy reports that the database stayed locked by another process
	// until the operation gave up. Retrying later may succeed.
	ErrBusy = sqlcore.ErrBusy
	// ErrReadOnly reports that the database refuses writes: a read-only
	// file, directory or mount, or a "file:...?mode=ro" URL.
	ErrReadOnly = sqlcore.ErrReadOnly
	// ErrClosed reports a write submitted to a Store after (or while) it
	// was closed. Nothing of that write was applied.
	ErrClosed = sqlcore.ErrClosed
	// ErrNoSchema reports that a store opened WithExistingSchema found no
	// payoutkit database: no file at the path, or one without payoutkit's
	// tables.
	ErrNoSchema = sqlcore.ErrNoSchema
	// ErrSchemaOutdated reports that a store opened WithExistingSchema found
	// a schema older than this binary's: opening it without that option
	// migrates it.
	ErrSchemaOutdated = sqlcore.ErrSchemaOutdated
)

// Store is a payoutkit.Store in a SQLite database. It is safe for
// concurrent use, and several Stores (in one process or many) may share one
// database.
//
// Besides the methods listed here, it has every other method of
// payoutkit.Store (the reads, the listings,
// the workspaces, keys, staff and sessions): their statements are the same
// on both databases, and it shares them with storage/postgres.
type Store struct {
	d *db
	// w runs the store's writes and reads: the database's own connections
	// (*db), or the caller's transaction (WithTx).
	w writer
	// st are the prepared statements of the writes, used by the statements
	// of a write in its transaction; none in the caller's transaction,
	// whose connection they were not prepared on.
	st stmts
	// ops are the operations whose statements are the same on both
	// databases (the reads, the administrative writes), run through w.
	ops
}

// ops is sqlcore.Ops embedded under a name of this package.
type ops = sqlcore.Ops

var (
	_ payoutkit.Store = (*Store)(nil)
)

// db is a store's database: its connections, prepared statements and
// committer, shared by the store and its views in the caller's
// transactions (WithTx).
type db struct {
	// wdb runs writes on one connection; rdb runs reads on a pool of
	// read-only connections (the same handle as wdb over New).
	wdb, rdb *sql.DB
	log      *slog.Logger
	// name identifies the database in errors and logs.
	name string
	// wstmts and rstmts are the prepared statements, by their SQL.
	wstmts, rstmts map[string]*sql.Stmt
	// batch group-commits the money movements, the outbox's writes and the
	// claims.
	batch *committer
	// observeCommit is WithCommitObserver's function, or nil.
	observeCommit func(writes int, d time.Duration)
	// callerDB is set when the database handle is the caller's (New): Close
	// leaves it open.
	callerDB bool
	// existing is set by WithExistingSchema: opening checks the schema
	// instead of migrating it.
	existing bool
	// priorityPath is the database's priority file (see
	// WithPriorityWrites). priorityWriter is set by WithPriorityWrites;
	// priority is the claim of a priority store while it opens.
	priorityPath   string
	priorityWriter bool
	priorityMu     sync.Mutex // guards priority and closing
	priority       *priorityClaim
	closing        bool
	// work tells this process's dispatchers that a write committed work
	// for them (SubscribeWork).
	work wake.Signal
	// handoffs is where the next hand-off claim starts in the queue.
	handoffs sqlcore.HandoffCursor
}

// Option configures Open and New.
type Option func(*config)

type config struct {
	logger        *slog.Logger
	maxConns      int
	busyTimeout   time.Duration
	observeCommit func(writes int, d time.Duration)
	priority      bool
	existing      bool
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

// WithMaxConns bounds the read pool's connections (writes always go
// through one connection). Defaults to 4 × GOMAXPROCS, at least 8.
func WithMaxConns(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxConns = n
		}
	}
}

// WithBusyTimeout sets how long a write waits for another process that
// holds the database's write lock (a "keys" command beside a running
// server, say) before it fails. Defaults to 5 seconds.
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.busyTimeout = d
		}
	}
}

// WithCommitObserver has fn told of every group-commit transaction, for
// metrics: writes is how many writes the transaction carried (1 to 256) and
// d how long it took from BEGIN until every writer was answered. fn runs on
// the goroutine that commits the group, which every writer waits on: it
// must return quickly. Administrative writes, which have transactions of their own, are
// not reported. Defaults to none.
func WithCommitObserver(fn func(writes int, d time.Duration)) Option {
	return func(c *config) { c.observeCommit = fn }
}

// WithExistingSchema opens only a database that payoutkit has created and
// migrated to this binary's schema, for a tool that must find a database
// rather than make one where a path was mistyped: Open creates no file and
// applies no migration. A missing file, or one without payoutkit's tables,
// is ErrNoSchema; an older schema is ErrSchemaOutdated (opening without
// this option migrates it). New checks the caller's database the same way.
func WithExistingSchema() Option {
	return func(c *config) { c.existing = true }
}

// defaultConfig is the configuration before options.
func defaultConfig() config {
	return config{
		logger:      slog.Default(),
		maxConns:    max(8, 4*runtime.GOMAXPROCS(0)),
		busyTimeout: 5 * time.Second,
	}
}

// Open opens (creating if needed) and migrates the SQLite database named by
// dsn: a file path, taken literally, or a "file:" URL, which may carry
// SQLite's URI parameters (mode=ro, vfs, ...) and further _pragma values.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	s, err := open(ctx, dsn, opts...)
	if err != nil {
		return nil, err
	}
	if err := s.migrateOrCheck(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.d.priorityMu.Lock()
	if s.d.priority != nil { // opened: from now on its first write claims again
		s.d.priority.release()
		s.d.priority = nil
	}
	s.d.priorityMu.Unlock()
	s.start()
	return s, nil
}

// New returns a store over the caller's *bun.DB on SQLite, for a program
// that already has one: payoutkit's tables live beside the program's own,
// and its writes can join the program's transactions (WithTx). New applies
// payoutkit's migrations, as Open does. Close leaves db open: it is the
// caller's.
//
// db must use the WAL journal, and should begin its transactions IMMEDIATE
// (the modernc.org/sqlite DSN parameter _txlock=immediate) with a busy
// timeout, as Open's connections do: a deferred transaction that writes
// after another connection did fails with "database is locked" instead of
// waiting. Its connections should have foreign keys on
// (_pragma=foreign_keys(1)), as Open's do: SQLite's default is off, and
// without them nothing refuses a row of an unknown workspace (Orphans
// finds them). Open,
// which owns its connections, remains the faster choice: it keeps one
// writer connection and a pool of read-only ones.
func New(ctx context.Context, bdb *bun.DB, opts ...Option) (*Store, error) {
	if bdb == nil {
		return nil, errors.New("sqlstore: New needs a *bun.DB")
	}
	if name := bdb.Dialect().Name(); name != dialect.SQLite {
		return nil, fmt.Errorf("sqlstore: bun dialect %s is not SQLite (storage/postgres serves PostgreSQL)", name)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	var mode string
	if err := bdb.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return nil, fmt.Errorf("sqlstore: reading the SQLite journal mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return nil, fmt.Errorf("sqlstore: the SQLite database uses the %q journal; payoutkit needs WAL (open it with _pragma=journal_mode(WAL))", mode)
	}
	s := newStore(bdb.DB, bdb.DB, cfg, "caller's SQLite database")
	s.d.callerDB = true
	if err := s.migrateOrCheck(ctx); err != nil {
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.start()
	return s, nil
}

// WithTx returns the store as seen from inside tx, a transaction the caller
// began on the same database (its own *bun.DB, or this store's): every read
// and write of the returned store runs in tx, so that payoutkit's changes
// (a payout with its balance debit, ledger entry and event) commit or roll
// back with the caller's own. Build an engine over it with
// payoutkit.Engine.WithStore for the length of the transaction.
//
// Each write runs in a savepoint of tx: a refused payout (an overdraft, a
// replay) changes nothing and leaves tx usable. The returned store must not
// be used after tx ends, and its Close does nothing. tx holds the
// database's write lock from its first write until it ends, and the
// store's own writes (and the dispatcher's) wait for it: keep it short.
func (s *Store) WithTx(tx bun.Tx) *Store {
	t := &Store{d: s.d, w: callerWriter{sqlcore.CallerTx{Tx: tx.Tx}}}
	t.ops = newOps(t.w, t)
	return t
}

func newStore(wdb, rdb *sql.DB, cfg config, name string) *Store {
	d := &db{wdb: wdb, rdb: rdb, log: cfg.logger, name: name, observeCommit: cfg.observeCommit, existing: cfg.existing}
	s := &Store{d: d, w: d}
	s.ops = newOps(d, s)
	return s
}

// start starts the group committer.
func (s *Store) start() {
	s.d.batch = newCommitter(s.d)
	s.st = stmts(s.d.wstmts)
}

// newOps binds the common operations to w, their writes' statements
// prepared as s prepares them (s.st).
func newOps(w writer, s *Store) sqlcore.Ops {
	return sqlcore.NewOps(w, sqlcore.OpsConfig{TS: ts, Translate: translate,
		Exec: func(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
			return s.st.exec(ctx, tx, query, args...)
		},
		QueryRow: func(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
			return s.st.queryRow(ctx, tx, query, args...)
		},
		Detach: func(ctx context.Context) context.Context { return ctx },
		// The transaction holds the write lock: no session can be
		// inserted meanwhile.
		StaffLockSQL:     `SELECT 1 FROM staff_users WHERE email = $1 AND workspace_id = $2`,
		WorkspaceLockSQL: `SELECT 1 FROM workspaces WHERE id = $1`,
		InsertEventSQL:   insertEventSQL,
		TextList:         func(n int) string { return fmt.Sprintf("(SELECT value FROM json_each($%d))", n) },
		TextListArg:      textListJSON,
		Param:            func(n int, _ string) string { return fmt.Sprintf("$%d", n) },
		From: func(table string, f sqlcore.NewestFilter) string {
			// SQLite plans from the schema alone, and would take a
			// created_at range with two bounds over an equality on status:
			// name the index whose equality prefix covers the most of the
			// filter.
			index := table + "_workspace_created"
			switch {
			case f.PayerID != "":
				index = table + "_workspace_payer_created"
			case f.Status != "":
				index = table + "_workspace_status_created"
			}
			return table + " INDEXED BY " + index
		}})
}

// Close closes the store's connections. Writes still waiting for their turn
// fail with ErrClosed, as do writes after Close. A store of WithTx has
// nothing to close.
func (s *Store) Close() error { return s.w.Close() }

// SubscribeWork returns a channel that receives when this store has
// committed work for the engine's loops (a new event, a payout to hand
// over, an event sent again), and cancel, which ends the subscription
// (payoutkit.Store.SubscribeWork). The loops of an engine over this store
// subscribe by themselves, so that they claim such work at once instead of
// at their next poll. Work committed by
// other processes, or in a caller's transaction (WithTx), is left to the
// poll.
func (s *Store) SubscribeWork() (ch <-chan struct{}, cancel func()) { return s.d.work.Subscribe() }

// ts is a time as SQLite stores it: NULL for the zero time, otherwise
// INTEGER microseconds since the Unix epoch (UTC, microsecond precision).
// textListJSON is a list of texts as json_each reads it.
func textListJSON(list []string) any {
	b, _ := json.Marshal(list) // strings always encode
	return string(b)
}

func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Truncate(time.Microsecond).UnixMicro()
}

func open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if strings.TrimSpace(dsn) == "" {
		return nil, errors.New("sqlstore: empty DSN: give a SQLite file path or a postgres:// URL")
	}
	if lower := strings.ToLower(dsn); strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://") {
		return nil, errors.New("sqlstore: a postgres:// URL is a PostgreSQL database: open it with storage/postgres")
	}
	path, params, err := parseSQLiteDSN(dsn)
	if err != nil {
		return nil, err
	}
	if cfg.existing {
		// Before anything is written beside it (the priority file): a
		// missing database is the caller's mistake, named as such.
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: no SQLite database at %s", ErrNoSchema, path)
		}
		if params.Get("mode") == "" {
			params.Set("mode", "rw") // SQLite's own open creates nothing either
		}
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
	if params.Get("mode") != "ro" && !cfg.existing {
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
	// fewer checkpoints write less (docs/PERFORMANCE.md). A _pragma of the
	// DSN that sets it wins.
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

	s := newStore(wdb, rdb, cfg, path)
	s.d.priorityPath, s.d.priority, s.d.priorityWriter = priorityFile(path), claim, cfg.priority
	opened = true
	return s, nil
}

// ownedSQLiteParams are the DSN parameters the store sets itself: a
// caller's values for them are dropped, because the store's guarantees
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

// Dialect returns "sqlite", the database this store runs on.
func (s *Store) Dialect() string { return "sqlite" }
