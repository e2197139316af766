package postgres_test

import (
	"context"
	"slices"
	"testing"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
	"github.com/payoutkit/payoutkit/storage/internal/sqltest"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// Orphans checks every table a workspace owns, every foreign key and the
// hand-off queue, counts none while the parents exist, and finds an orphan
// of each relation that no foreign key guards (migrations 0015, 0016 and
// 0017); the keys that remain refuse theirs.
func TestOrphans(t *testing.T) {
	s := openPostgres(t, pgtest.Postgres(t))
	t.Cleanup(func() { s.Close() })
	unkeyed := sqltest.Orphans(t, s, db, sqltest.Orphaning[*postgres.Store]{
		Orphans: func(ctx context.Context, s *postgres.Store) ([]sqlcore.OrphanCount, error) { return s.Orphans(ctx) },
		Query:   postgres.Query,
		ForeignKeysSQL: `SELECT c.conrelid::regclass::text, a.attname, c.confrelid::regclass::text, pa.attname
			FROM pg_constraint c
			JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
			JOIN pg_attribute pa ON pa.attrelid = c.confrelid AND pa.attnum = c.confkey[1]
			WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace`,
		WorkspaceTablesSQL: `SELECT table_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND column_name = 'workspace_id'`,
	})
	// The relations docs/STORAGE.md says the write paths keep, not a key.
	want := []string{"balances.workspace_id", "customers.workspace_id", "events.workspace_id", "ledger_entries.workspace_id",
		"payout_batches.workspace_id", "payout_days.workspace_id", "payout_handoffs.seq", "payouts.workspace_id"}
	if !slices.Equal(unkeyed, want) {
		t.Errorf("relations without a foreign key %v; want %v", unkeyed, want)
	}
}
