package sqlite

import (
	"context"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// OrphanCount is one kind of orphan that Store.Orphans counts: Count rows
// of Table whose Column names no row of Parent (its table and column,
// "workspaces.id"). storage/postgres's is the same type.
type OrphanCount = sqlcore.OrphanCount

// orphansSQL counts the orphans of every relation of the schema: on SQLite,
// those both databases share (sqlcore.Relations).
var orphansSQL = sqlcore.OrphansSQL(sqlcore.Relations)

// Orphans counts the rows whose parent row does not exist: the rows of
// every table a workspace owns (balances, staff users, API keys, payouts,
// orders, ledger entries, events, customers, day counters, sessions,
// policies, address book, security log) whose workspace_id names no
// workspace, the delivery attempts whose event is gone, and the sessions
// and recovery codes whose staff user is gone. It returns every relation it
// checks, in a fixed order, with a count of 0 where it found none, from one
// statement and so one snapshot; it reads every row of those tables.
//
// SQLite's foreign keys refuse every such row while they are on: Open
// turns them on for its connections; a database handed to New has them
// only if its connections do (SQLite's default is off). Orphans is for
// audits (the server's audit command), which run it on both databases; it
// is not a method of payoutkit.Store, and memstore, which refuses every
// row of an unknown workspace and never removes one, has none.
func (s *Store) Orphans(ctx context.Context) ([]OrphanCount, error) {
	out, err := sqlcore.CountOrphans(ctx, s.w.Reader(), orphansSQL, sqlcore.Relations)
	if err != nil {
		return nil, translate(ctx, "orphans", err)
	}
	return out, nil
}
