// Package postgres is payoutkit's durable store on PostgreSQL, for when one
// machine is not enough: a payoutkit.Store that several instances of a
// server may share, through pgx's database/sql driver.
//
// Open takes a "postgres://" or "postgresql://" URL and migrates the
// schema before it returns, so a Store is always ready to use. New does the
// same over a *bun.DB the program already has, and WithTx binds a store to
// a bun.Tx of the program's, so that payoutkit's writes commit or roll back
// with the program's own. That is all bun is here: the caller's handle on
// the database, and its dialect's name. The store's own statements are
// plain SQL through database/sql, which pgx prepares and caches per
// connection.
//
// Every method that moves money is one transaction holding the balance
// change, its ledger entry, the customer's totals and its event. The
// database itself enforces the money rules: a conditional UPDATE refuses an
// overdraft, UNIQUE constraints refuse a second payout or order with the
// same id and a second ledger entry for the same cause, CHECK constraints
// refuse negative balances.
//
// The money movements are single statements (data-modifying CTEs), group
// committed: one transaction carries the writes queued meanwhile, sent
// pipelined (one round trip for the batch), without savepoints, and holds a
// workspace's balance row once per batch instead of once per payout. Point
// reads that arrive together go together, as one pgx batch; claims go in
// one round trip with their plan settings. Dispatchers on several instances
// claim outbox events with SELECT ... FOR UPDATE SKIP LOCKED. The store
// keeps its growing tables' planner statistics fresh itself. The
// repository's docs/STORAGE.md explains each of these.
package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/wake"
	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// Errors for conditions that no payoutkit sentinel describes. Both are
// internal errors to an API caller (a 500), but an operator or a retry loop
// can tell them apart with errors.Is. storage/sqlite returns the same
// values.
var (
	// ErrBusy reports that a lock wait or serialization failed. Retrying
	// later may succeed.
	ErrBusy = sqlcore.ErrBusy
	// ErrReadOnly reports that the database refuses writes: a hot standby,
	// or default_transaction_read_only.
	ErrReadOnly = sqlcore.ErrReadOnly
	// ErrClosed reports a write submitted to a Store after (or while) it
	// was closed. Nothing of that write was applied.
	ErrClosed = sqlcore.ErrClosed
	// ErrNoSchema reports that a store opened WithExistingSchema found no
	// payoutkit tables in the database (or its search_path's schema).
	ErrNoSchema = sqlcore.ErrNoSchema
	// ErrSchemaOutdated reports that a store opened WithExistingSchema found
	// a schema older than this binary's: opening it without that option
	// migrates it.
	ErrSchemaOutdated = sqlcore.ErrSchemaOutdated
)

// Store is a payoutkit.Store in a PostgreSQL database. It is safe for
// concurrent use, and several Stores (in one process or many) may share one
// database.
//
// Besides the methods listed here, it has every other method of
// payoutkit.Store (the reads, the listings,
// the workspaces, keys, staff and sessions): their statements are the same
// on both databases, and it shares them with storage/sqlite.
type Store struct {
	d *db
	// w runs the store's writes and reads: the database's own pool (*db),
	// or the caller's transaction (WithTx).
	w writer
	// ops are the operations whose statements are the same on both
	// databases (the reads, the administrative writes), run through w.
	ops
}

// ops is sqlcore.Ops embedded under a name of this package.
type ops = sqlcore.Ops

var (
	_ payoutkit.Store = (*Store)(nil)
)

// db is a store's database: its pool, committers, grouped reads and
// statistics keeper, shared by the store and its views in the caller's
// transactions (WithTx).
type db struct {
	sqldb *sql.DB
	log   *slog.Logger
	// name identifies the database in errors and logs, without secrets.
	name string
	// committers group-commit the money movements, the outbox's writes and
	// the claims; batch is the last, which takes the writes of no
	// workspace.
	committers []*committer
	batch      *committer
	// workspaceCommitters is how many of committers take the writes of
	// workspaces.
	workspaceCommitters int
	// observeCommit is WithCommitObserver's function, or nil.
	observeCommit func(writes int, d time.Duration)
	// callerDB is set when the pool is the caller's (New): Close leaves it
	// open.
	callerDB bool
	// existing is set by WithExistingSchema: opening checks the schema
	// instead of migrating it.
	existing bool
	// work tells this process's dispatchers that a write committed work
	// for them (SubscribeWork).
	work wake.Signal
	// stats keeps the planner statistics (statistics.go);
	// statisticsInterval is config's.
	stats              *statistics
	statisticsInterval time.Duration
	// written counts the committers' writes; statsPoke tells the
	// statistics keeper of each analyzeMinChanges more.
	written   atomic.Int64
	statsPoke chan struct{}
	// reads groups the point reads (readgroup.go).
	reads *readGroups
	// handoffs is where the next hand-off claim starts in the queue.
	handoffs sqlcore.HandoffCursor
}

// Option configures Open and New.
type Option func(*config)

type config struct {
	logger        *slog.Logger
	maxConns      int
	observeCommit func(writes int, d time.Duration)
	// statisticsInterval is how often the store looks for tables to
	// analyze (statistics.go); tests shorten it.
	statisticsInterval time.Duration
	existing           bool
	// committers is how many committers take the workspaces' writes (0:
	// workspaceCommitters()); tests set it.
	committers int
	timeouts   Timeouts
}

// WithExistingSchema opens only a database that payoutkit has migrated to
// this binary's schema, for a tool that must find payoutkit's tables rather
// than create them in a mistyped database: Open and New apply no migration.
// A database without payoutkit's tables is ErrNoSchema; an older schema is
// ErrSchemaOutdated (opening without this option migrates it).
func WithExistingSchema() Option {
	return func(c *config) { c.existing = true }
}

// WithLogger sets where the store logs (migrations, statistics). Defaults
// to slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithMaxConns bounds the connections of the pool Open opens. Defaults to
// 4 × GOMAXPROCS, at least 8.
func WithMaxConns(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxConns = n
		}
	}
}

// WithCommitObserver has fn told of every group-commit transaction, for
// metrics: writes is how many writes the transaction carried (1 to 256) and
// d how long it took from BEGIN until every writer was answered (including,
// after an error, running its writes again one by one). fn runs on the
// goroutine that commits the group, which its writers wait on: it must
// return quickly. Several such goroutines call it concurrently. Administrative writes,
// which have transactions of their own, are not reported. Defaults to none.
func WithCommitObserver(fn func(writes int, d time.Duration)) Option {
	return func(c *config) { c.observeCommit = fn }
}

// defaultConfig is the configuration before options.
func defaultConfig() config {
	return config{
		logger:             slog.Default(),
		maxConns:           max(8, 4*runtime.GOMAXPROCS(0)),
		statisticsInterval: statisticsInterval,
	}
}

// Open connects to and migrates the PostgreSQL database named by dsn, a
// "postgres://" or "postgresql://" URL.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	s, err := open(ctx, dsn, opts...)
	if err != nil {
		return nil, err
	}
	if err := s.migrateOrCheck(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	s.warnDurability(ctx)
	s.start()
	return s, nil
}

func open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if lower := strings.ToLower(dsn); !strings.HasPrefix(lower, "postgres://") && !strings.HasPrefix(lower, "postgresql://") {
		return nil, errors.New("sqlstore: invalid PostgreSQL DSN: give a postgres:// URL")
	}
	connCfg, err := pgx.ParseConfig(dsn) // its errors redact the password
	if err != nil {
		return nil, fmt.Errorf("sqlstore: invalid PostgreSQL DSN: %w", err)
	}
	name := dsnName(connCfg)
	applyTimeouts(connCfg, cfg.timeouts)
	sqldb := stdlib.OpenDB(*connCfg)
	sqldb.SetMaxOpenConns(cfg.maxConns)
	sqldb.SetMaxIdleConns(cfg.maxConns)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	if err := sqldb.PingContext(ctx); err != nil {
		_ = sqldb.Close()
		return nil, fmt.Errorf("sqlstore: cannot connect to PostgreSQL database %s: %w", name, err)
	}
	return newStore(sqldb, cfg, name), nil
}

// dsnName names the database of cfg without secrets: its hosts (each
// once, as pgx tries them) and its database.
func dsnName(cfg *pgx.ConnConfig) string {
	hosts := []string{fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)}
	for _, fb := range cfg.Fallbacks {
		if h := fmt.Sprintf("%s:%d", fb.Host, fb.Port); !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return "postgres://" + strings.Join(hosts, ",") + "/" + cfg.Database
}

// New returns a store over the caller's *bun.DB on PostgreSQL, for a
// program that already has one: payoutkit's tables live beside the
// program's own, and its writes can join the program's transactions
// (WithTx). New applies payoutkit's migrations, as Open does. Close leaves
// db open: it is the caller's. Over a driver other than pgx's, reads and
// claims go one by one, without pgx's batches.
func New(ctx context.Context, bdb *bun.DB, opts ...Option) (*Store, error) {
	if bdb == nil {
		return nil, errors.New("sqlstore: New needs a *bun.DB")
	}
	if name := bdb.Dialect().Name(); name != dialect.PG {
		return nil, fmt.Errorf("sqlstore: bun dialect %s is not PostgreSQL (storage/sqlite serves SQLite)", name)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	s := newStore(bdb.DB, cfg, "caller's PostgreSQL database")
	s.d.callerDB = true
	if err := s.migrateOrCheck(ctx); err != nil {
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
// be used after tx ends, and its Close does nothing.
func (s *Store) WithTx(tx bun.Tx) *Store {
	t := &Store{d: s.d, w: callerWriter{sqlcore.CallerTx{Tx: tx.Tx}}}
	t.ops = newOps(t.w)
	return t
}

func newStore(sqldb *sql.DB, cfg config, name string) *Store {
	d := &db{sqldb: sqldb, log: cfg.logger, name: name, observeCommit: cfg.observeCommit, existing: cfg.existing,
		statisticsInterval: cfg.statisticsInterval, statsPoke: make(chan struct{}, 1), reads: newReadGroups(sqldb, readLanes),
		workspaceCommitters: cmp.Or(cfg.committers, workspaceCommitters())}
	return &Store{d: d, w: d, ops: newOps(d)}
}

// start starts the committers and the statistics keeper.
func (s *Store) start() {
	n := s.d.workspaceCommitters
	for range n + 1 { // the last one takes the writes of no workspace
		s.d.committers = append(s.d.committers, newCommitter(s.d))
	}
	s.d.batch = s.d.committers[n]
	s.d.startStatistics()
}

// newOps binds the common operations to w.
func newOps(w writer) sqlcore.Ops {
	return sqlcore.NewOps(w, sqlcore.OpsConfig{TS: ts, Translate: translate, Detach: detach,
		// The user's row is locked: a session inserted meanwhile (its
		// foreign key check locks the row too) then waits for the
		// deleting transaction and fails, instead of failing the DELETE.
		StaffLockSQL: `SELECT 1 FROM staff_users WHERE email = $1 AND workspace_id = $2 FOR UPDATE`,
		// A role change or a removal counts the workspace's admins after
		// this lock: two demotions on two instances cannot both see the
		// other admin. NO KEY UPDATE leaves the foreign-key checks of the
		// workspace's orders alone (its payouts have none since migration
		// 0015).
		WorkspaceLockSQL: `SELECT 1 FROM workspaces WHERE id = $1 FOR NO KEY UPDATE`,
		// Every change of a workspace's 24-hour window (a create judged by
		// its policy, a failure, a policy change) takes the balance row's
		// lock first: they serialise, across instances, in one order.
		LockBalanceSQL: `SELECT 1 FROM balances WHERE workspace_id = $1 FOR UPDATE`,
		InsertEventSQL: pgInsertEventSQL,
		TextList:       func(n int) string { return fmt.Sprintf("(SELECT unnest($%d::text[]))", n) },
		TextListArg:    func(list []string) any { return list },
		Param:          pgParam,
		// PostgreSQL plans from statistics: no index hints.
		From: func(table string, _ sqlcore.NewestFilter) string { return table }})
}

// Close closes the store's connections (but a caller's, New's). Writes
// still waiting for their turn fail with ErrClosed, as do writes after
// Close. A store of WithTx has nothing to close.
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

// Dialect returns "postgres", the database this store runs on.
func (s *Store) Dialect() string { return "postgres" }

// ts is a time as PostgreSQL stores it: NULL for the zero time, otherwise
// a TIMESTAMPTZ in UTC at microsecond precision.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Truncate(time.Microsecond)
}

// detach returns the context a statement runs with: ctx without its
// cancellation (its values kept). pgx answers a cancellation in the middle
// of a statement by closing the connection, and when that races with the
// statement's end, database/sql can hand the dying connection to the next
// caller, whose statement then fails with "driver: bad connection": a
// client that hangs up could fail another client's request
// (TestPostgresCancelledCallersSpareOthers). A statement takes
// milliseconds; a caller that gave up gets its answer late and drops it.
func detach(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// detached is a querier whose statements run with detach's context.
type detached struct{ q sqlcore.Querier }

func (d detached) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return d.q.ExecContext(detach(ctx), query, args...)
}

func (d detached) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return d.q.QueryContext(detach(ctx), query, args...)
}

func (d detached) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return d.q.QueryRowContext(detach(ctx), query, args...)
}
