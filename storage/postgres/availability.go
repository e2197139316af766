package postgres

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Timeouts bound how long a dead or stalled database server can hold the
// store's connections. A zero member takes its default; the defaults never
// cut a healthy group commit, which takes milliseconds. A DSN that sets
// connect_timeout, statement_timeout or idle_in_transaction_session_timeout
// itself keeps its own.
type Timeouts struct {
	// Connect bounds each connection attempt, per host of the DSN
	// (default 5 s).
	Connect time.Duration
	// KeepAlive is how long a connection may be idle before TCP probes
	// its peer, and the interval of the probes; three unanswered probes
	// drop it (default 10 s).
	KeepAlive time.Duration
	// Statement is the server's statement_timeout (default 60 s): a
	// statement waiting longer, for a lock held by a stalled session, is
	// cancelled. It is longer than a group commit's own bound (30 s),
	// which closes the connection instead: a COMMIT cancelled by the
	// server while it waits for a synchronous standby reports success,
	// committed locally only, and the store must report it as unknown.
	Statement time.Duration
	// IdleInTransaction is the server's
	// idle_in_transaction_session_timeout (default 60 s): a session whose
	// client vanished mid-transaction releases its locks.
	IdleInTransaction time.Duration
}

// WithTimeouts sets the store's timeouts (see Timeouts) for the pool Open
// opens.
func WithTimeouts(t Timeouts) Option {
	return func(c *config) { c.timeouts = t }
}

func (t Timeouts) withDefaults() Timeouts {
	if t.Connect <= 0 {
		t.Connect = 5 * time.Second
	}
	if t.KeepAlive <= 0 {
		t.KeepAlive = 10 * time.Second
	}
	if t.Statement <= 0 {
		t.Statement = 60 * time.Second
	}
	if t.IdleInTransaction <= 0 {
		t.IdleInTransaction = 60 * time.Second
	}
	return t
}

// applyTimeouts sets t on cfg where the DSN did not set its own.
func applyTimeouts(cfg *pgx.ConnConfig, t Timeouts) {
	t = t.withDefaults()
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = t.Connect
	}
	d := &net.Dialer{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: t.KeepAlive, Interval: t.KeepAlive, Count: 3}}
	cfg.DialFunc = d.DialContext
	for name, v := range map[string]time.Duration{"statement_timeout": t.Statement, "idle_in_transaction_session_timeout": t.IdleInTransaction} {
		if _, set := cfg.RuntimeParams[name]; !set && !strings.Contains(cfg.RuntimeParams["options"], name) {
			cfg.RuntimeParams[name] = strconv.FormatInt(v.Milliseconds(), 10)
		}
	}
}

// Durability is what the primary promises about an acknowledged commit:
// its synchronous_commit, and the standbys named by
// synchronous_standby_names that it waits for (none: a commit is
// acknowledged once on its own disk, and a failover to a standby can lose
// it).
type Durability struct {
	SynchronousCommit        string
	SynchronousStandbyNames  string
	SynchronousStandbysReady int
}

// Replicated reports whether an acknowledged commit is on a standby too.
func (d Durability) Replicated() bool {
	switch d.SynchronousCommit {
	case "on", "remote_write", "remote_apply":
		return d.SynchronousStandbyNames != ""
	}
	return false
}

// String says what the settings promise, for logs and probes.
func (d Durability) String() string {
	if !d.Replicated() {
		return fmt.Sprintf("synchronous_commit=%s with no synchronous standby: an acknowledged payout can be lost on failover", d.SynchronousCommit)
	}
	return fmt.Sprintf("synchronous_commit=%s, synchronous_standby_names=%q (%d synchronous standby streaming)",
		d.SynchronousCommit, d.SynchronousStandbyNames, d.SynchronousStandbysReady)
}

// Durability reads the primary's replication settings.
func (s *Store) Durability(ctx context.Context) (Durability, error) {
	var d Durability
	err := s.d.sqldb.QueryRowContext(ctx, `SELECT current_setting('synchronous_commit'), current_setting('synchronous_standby_names'),
		(SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum'))`).
		Scan(&d.SynchronousCommit, &d.SynchronousStandbyNames, &d.SynchronousStandbysReady)
	if err != nil {
		return Durability{}, translate(ctx, "durability", err)
	}
	return d, nil
}

// warnDurability logs, once at open, when an acknowledged commit is not on a
// standby: a single database is a valid choice, but the operator should
// know what it risks.
func (s *Store) warnDurability(ctx context.Context) {
	var standby bool
	if err := s.d.sqldb.QueryRowContext(ctx, `SELECT pg_is_in_recovery()`).Scan(&standby); err == nil && standby {
		s.d.log.InfoContext(ctx, "sqlstore: the database is a standby: reads only", "database", s.d.name)
		return
	}
	d, err := s.Durability(ctx)
	switch {
	case err != nil:
		s.d.log.WarnContext(ctx, "sqlstore: cannot read the replication settings", "database", s.d.name, "err", err)
	case !d.Replicated():
		s.d.log.WarnContext(ctx, "sqlstore: the PostgreSQL primary has no synchronous standby: an acknowledged payout can be lost on failover",
			"database", s.d.name, "synchronous_commit", d.SynchronousCommit, "synchronous_standby_names", d.SynchronousStandbyNames)
	default:
		s.d.log.InfoContext(ctx, "sqlstore: commits wait for a synchronous standby", "database", s.d.name,
			"synchronous_commit", d.SynchronousCommit, "synchronous_standby_names", d.SynchronousStandbyNames)
	}
}
