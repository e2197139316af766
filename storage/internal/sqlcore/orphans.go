package sqlcore

import (
	"context"
	"strings"
)

// Relation is a column of Table that names a row of Parent by its
// ParentColumn: a row whose value there names no such row is an orphan.
type Relation struct {
	Table, Column, Parent, ParentColumn string
}

// OrphanCount is how many rows of one Relation are orphans.
type OrphanCount struct {
	// Table and Column are the rows' table and the column that names their
	// parent: "payouts", "workspace_id".
	Table, Column string
	// Parent is the parent's table and column: "workspaces.id".
	Parent string
	// Count is how many of the rows name a parent that does not exist.
	Count int64
}

// Relations are the relations both databases' schemas have: the
// workspace_id of every table a workspace owns, and the other parents.
// Which of them a foreign key enforces differs (docs/STORAGE.md); the
// audit checks them all. A store adds the relations of its own tables.
var Relations = []Relation{
	{"balances", "workspace_id", "workspaces", "id"},
	{"staff_users", "workspace_id", "workspaces", "id"},
	{"api_keys", "workspace_id", "workspaces", "id"},
	{"payouts", "workspace_id", "workspaces", "id"},
	{"orders", "workspace_id", "workspaces", "id"},
	{"ledger_entries", "workspace_id", "workspaces", "id"},
	{"events", "workspace_id", "workspaces", "id"},
	{"customers", "workspace_id", "workspaces", "id"},
	{"payout_days", "workspace_id", "workspaces", "id"},
	{"staff_sessions", "workspace_id", "workspaces", "id"},
	{"payout_policies", "workspace_id", "workspaces", "id"},
	{"address_book", "workspace_id", "workspaces", "id"},
	{"security_log", "workspace_id", "workspaces", "id"},
	{"delivery_attempts", "event_id", "events", "id"},
	{"staff_sessions", "staff_email", "staff_users", "email"},
	{"staff_recovery_codes", "staff_email", "staff_users", "email"},
	{"payout_batches", "workspace_id", "workspaces", "id"},
}

// OrphansSQL counts the orphans of each of rels, in their order, as the
// columns of one row: one statement, and so one snapshot.
func OrphansSQL(rels []Relation) string {
	counts := make([]string, len(rels))
	for i, r := range rels {
		counts[i] = `(SELECT COUNT(*) FROM ` + r.Table + ` x WHERE NOT EXISTS (SELECT 1 FROM ` + r.Parent + ` p WHERE p.` +
			r.ParentColumn + ` = x.` + r.Column + `))`
	}
	return `SELECT ` + strings.Join(counts, ",\n\t")
}

// CountOrphans runs query, rels' OrphansSQL, through q: the count of every
// relation, none left out, in rels' order.
func CountOrphans(ctx context.Context, q Querier, query string, rels []Relation) ([]OrphanCount, error) {
	out := make([]OrphanCount, len(rels))
	dest := make([]any, len(rels))
	for i, r := range rels {
		out[i] = OrphanCount{Table: r.Table, Column: r.Column, Parent: r.Parent + "." + r.ParentColumn}
		dest[i] = &out[i].Count
	}
	if err := q.QueryRowContext(ctx, query).Scan(dest...); err != nil {
		return nil, err
	}
	return out, nil
}
