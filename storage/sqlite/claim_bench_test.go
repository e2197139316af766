package sqlite

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/payoutkit/payoutkit/storage/internal/sqltest"
)

// BenchmarkClaimEventsBacklog: what one claim costs on SQLite with another
// workspace's backlog of pending events (sqltest.BenchClaimEventsBacklog).
//
//	go test -run XXX -bench ClaimEventsBacklog ./storage/sqlite
func BenchmarkClaimEventsBacklog(b *testing.B) {
	sqltest.BenchClaimEventsBacklog(b, func(b *testing.B) sqltest.BacklogStore {
		s, err := Open(b.Context(), filepath.Join(b.TempDir(), "claim.db"), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return sqltest.BacklogStore{Store: s, Writer: s.writer(), TS: s.ts}
	})
}
