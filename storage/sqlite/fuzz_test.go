package sqlite_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlite"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

// FuzzMoneyInvariantsSQLite runs the money fuzz against SQLite's
// statements, each input on a new database file (a copy of a migrated
// one).
func FuzzMoneyInvariantsSQLite(f *testing.F) {
	template := migratedTemplate(f)
	storetest.FuzzMoneyInvariants(f, func(t *testing.T) payoutkit.Store {
		path := filepath.Join(t.TempDir(), "test.db")
		if err := os.WriteFile(path, template, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// FuzzMoneyPathsSQLite runs the money fuzz on SQLite's every path: each
// input on a new database file, opened by Open (its writes group-committed)
// and by a program's own *bun.DB, whose transactions the store joins
// (WithTx). With -v, each input logs how many of its group commits carried
// more than one write.
func FuzzMoneyPathsSQLite(f *testing.F) {
	template := migratedTemplate(f)
	storetest.FuzzMoneyPaths(f, func(t *testing.T) storetest.PathsStore {
		path := filepath.Join(t.TempDir(), "test.db")
		if err := os.WriteFile(path, template, 0o600); err != nil {
			t.Fatal(err)
		}
		var batches, shared atomic.Int64
		s, err := sqlite.Open(t.Context(), path, sqlite.WithLogger(slog.New(slog.DiscardHandler)),
			sqlite.WithCommitObserver(func(writes int, _ time.Duration) {
				batches.Add(1)
				if writes > 1 {
					shared.Add(1)
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { t.Logf("group commits: %d, %d of them of more than one write", batches.Load(), shared.Load()) })
		db := callerSQLiteAt(t, path)
		return storetest.PathsStore{Store: s, Begin: func(ctx context.Context) (storetest.CallerTx, error) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return storetest.CallerTx{}, err
			}
			return storetest.CallerTx{Store: s.WithTx(tx), Commit: tx.Commit, Rollback: tx.Rollback}, nil
		}}
	})
}

// migratedTemplate returns the bytes of a database file that Open created
// and migrated, closed (its WAL checkpointed into it): an input's new
// database is a copy, since migrating a new file costs about a second under
// -race.
func migratedTemplate(f *testing.F) []byte {
	path := filepath.Join(f.TempDir(), "template.db")
	s, err := sqlite.Open(f.Context(), path, sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Close(); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}
