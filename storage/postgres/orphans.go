package postgres

import (
	"context"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// OrphanCount is one kind of orphan that Store.Orphans counts: Count rows
// of Table whose Column names no row of Parent (its table and column,
// "workspaces.id"). storage/sqlite's is the same type.
type OrphanCount = sqlcore.OrphanCount

// relations are the relations of PostgreSQL's schema: those both databases
// share, and the hand-off queue's rows (migration 0016), which name their
// payout by its seq.
var relations = append(sqlcore.Relations[:len(sqlcore.Relations):len(sqlcore.Relations)],
	sqlcore.Relation{Table: "payout_handoffs", Column: "seq", Parent: "payouts", ParentColumn: "seq"})

// orphansSQL counts the orphans of every relation of the schema.
var orphansSQL = sqlcore.OrphansSQL(relations)

// Orphans counts the rows whose parent row does not exist: the rows of
// every table a workspace owns (balances, staff users, API keys, payouts,
// orders, ledger entries, events, customers, day counters, sessions,
// policies, address book, security log) whose workspace_id names no
// workspace, the delivery attempts whose event is gone, the sessions and
// recovery codes whose staff user is gone, and the hand-off queue's rows
// whose payout is gone. It returns every relation it checks, in a fixed
// order, with a count of 0 where it found none, from one statement and so
// one snapshot; it reads every row of those tables.
//
// No foreign key refuses such a row of payouts, ledger_entries, events,
// customers, payout_days or balances (migrations 0015 and 0017), nor of
// payout_handoffs (0016); the other relations keep theirs. The store's
// write paths keep those rows whole instead: each is written only by a
// statement that finds its workspace first (the balance row that its
// debit, credit or settlement moves, or the workspace's own row), so that
// a write for an unknown workspace writes nothing and is refused as
// payoutkit.ErrNotFound; a balance row is written with its workspace, a
// hand-off row beside its payout; and nothing deletes a workspace. Orphans is
// how an audit (the server's audit command, on both databases) checks
// that they did; it is not a method of payoutkit.Store, and memstore,
// which refuses every row of an unknown workspace and never removes one,
// has none.
func (s *Store) Orphans(ctx context.Context) ([]OrphanCount, error) {
	out, err := sqlcore.CountOrphans(ctx, s.w.Reader(), orphansSQL, relations)
	if err != nil {
		return nil, translate(ctx, "orphans", err)
	}
	return out, nil
}
