package postgres

import (
	"io"
	"log/slog"
	"testing"

	"github.com/payoutkit/payoutkit/storage/internal/sqltest"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// BenchmarkClaimEventsBacklog: what one claim costs on PostgreSQL with
// another workspace's backlog of pending events
// (sqltest.BenchClaimEventsBacklog).
//
//	go test -run XXX -bench ClaimEventsBacklog ./storage/postgres
func BenchmarkClaimEventsBacklog(b *testing.B) {
	sqltest.BenchClaimEventsBacklog(b, func(b *testing.B) sqltest.BacklogStore {
		s, err := Open(b.Context(), pgtest.Postgres(b), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return sqltest.BacklogStore{Store: s, Writer: s.writer(), TS: s.ts}
	})
}
