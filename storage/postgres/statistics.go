package postgres

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// PostgreSQL plans a statement prepared on a connection once, generically,
// after its first few runs, and keeps that plan until the table's statistics
// change. A store opened on a new database makes those plans while its
// tables are nearly empty and have no statistics, when every index looks as
// cheap as the next: a look-up of a payout by its id can then walk a listing
// index of the whole workspace instead, and it stays so until the next
// ANALYZE. Autovacuum analyzes a table after a tenth of it changed, but only
// once a minute, and never when it is off. So the store analyzes its growing
// tables itself when they have changed by more than their size since their
// last statistics: a few times while a new database fills, rarely after,
// and never where autovacuum keeps up.

// statisticsInterval is how often the store looks at its tables' change
// counts at least. It also looks each time its committers have written
// analyzeMinChanges more rows (statisticsPoke), at most every
// statisticsQuiet: a new database under load is analyzed within a second
// of filling, where its first plans, made on empty tables, held a hot
// workspace's hand-offs and webhooks still for the five seconds a first
// look took. An idle server looks every statisticsInterval and does
// nothing in between.
const (
	statisticsInterval = 5 * time.Second
	statisticsQuiet    = 500 * time.Millisecond
)

// analyzeMinChanges is how many changes a table without statistics takes
// before the store analyzes it.
const analyzeMinChanges = 1000

// growingTables are the tables whose plans depend on their size.
var growingTables = []string{"payouts", "events", "delivery_attempts", "ledger_entries", "orders", "customers"}

// staleTablesSQL names the growing tables of the store's schema changed by
// more than $2 plus their size at their last statistics, or, when $3 (the
// store has just written $2 rows), that have never had statistics: the
// change counts PostgreSQL keeps reach pg_stat_user_tables up to a second
// late, and a new database's first plans are the ones to mend. Among those the
// role may analyze (it owns them, or is a superuser): for another table
// ANALYZE does not fail but skips it with a warning in the server's log,
// which would come back at every check.
const staleTablesSQL = `SELECT t.relname FROM pg_stat_user_tables t JOIN pg_class c ON c.oid = t.relid
	WHERE t.schemaname = current_schema() AND t.relname = ANY($1)
		AND (t.n_mod_since_analyze > $2 + GREATEST(c.reltuples, 0) OR $3 AND c.reltuples < 0)
		AND (pg_has_role(c.relowner, 'USAGE') OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user))
	ORDER BY t.relname`

// statistics is the goroutine that keeps a store's statistics.
type statistics struct {
	stop context.CancelFunc
	done sync.WaitGroup
}

// startStatistics starts keeping the statistics of the store's tables
// (statisticsInterval) until Close.
func (d *db) startStatistics() {
	interval := d.statisticsInterval
	if interval <= 0 {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	d.stats = &statistics{stop: stop}
	d.stats.done.Go(func() {
		t := time.NewTimer(interval)
		defer t.Stop()
		lastLook := time.Now()
		for {
			wrote := false
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-d.statsPoke:
				if time.Since(lastLook) < min(statisticsQuiet, interval) {
					continue // the next poke, or the timer, looks
				}
				wrote = true
			}
			lastLook = time.Now()
			t.Reset(interval)
			_, err := d.analyzeStale(ctx, wrote)
			switch {
			case err == nil || ctx.Err() != nil:
			case isPgCode(err, pgInsufficientPrivilege):
				// A role that does not own the tables: leave the
				// statistics to autovacuum, and say so once.
				d.log.Warn("sqlstore: this role may not analyze the tables; leaving their statistics to autovacuum", "database", d.name, "err", err)
				return
			default:
				// The database away for a moment: try at the next tick.
				d.log.Debug("sqlstore: analyzing tables", "database", d.name, "err", err)
			}
		}
	})
}

// countWrites counts n writes the committers made, and pokes the statistics
// keeper each time they reach another analyzeMinChanges.
func (d *db) countWrites(n int) {
	total := d.written.Add(int64(n))
	if total/analyzeMinChanges != (total-int64(n))/analyzeMinChanges {
		select {
		case d.statsPoke <- struct{}{}:
		default:
		}
	}
}

// stopStatistics stops the statistics goroutine and waits for it.
func (d *db) stopStatistics() {
	if d.stats != nil {
		d.stats.stop()
		d.stats.done.Wait()
	}
}

// analyzeStale analyzes the growing tables that changed by more than their
// size since their last statistics (or, when wrote, have none yet), and
// returns their names. SKIP_LOCKED passes over a table that another session
// (autovacuum, another instance) is analyzing.
func (d *db) analyzeStale(ctx context.Context, wrote bool) ([]string, error) {
	ctx = detach(ctx) // a cancelled statement could spoil its pooled connection
	rows, err := d.sqldb.QueryContext(ctx, staleTablesSQL, growingTables, analyzeMinChanges, wrote)
	if err != nil {
		return nil, err
	}
	names, err := sqlcore.Collect(rows, func(sc sqlcore.Scanner) (string, error) {
		var name string
		err := sc.Scan(&name)
		return name, err
	})
	if err != nil {
		return nil, err
	}
	// Only names of growingTables go into the statement.
	stale := slices.DeleteFunc(names, func(n string) bool { return !slices.Contains(growingTables, n) })
	if len(stale) == 0 {
		return nil, nil
	}
	if _, err := d.sqldb.ExecContext(ctx, "ANALYZE (SKIP_LOCKED) "+strings.Join(stale, ", ")); err != nil {
		return nil, err
	}
	d.log.Debug("sqlstore: analyzed tables", "database", d.name, "tables", stale)
	return stale, nil
}
