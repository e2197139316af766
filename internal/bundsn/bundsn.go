// Package bundsn opens a *bun.DB from a payoutkit database DSN, as the
// processors' stores (processor/evm, processor/bitcoin) keep their tables
// beside the engine's: a "postgres://" or "postgresql://" URL with pgx,
// anything else as a SQLite file (a path or a "file:" URL) the way
// storage/sqlite opens it (the WAL journal, IMMEDIATE transactions, a busy
// timeout, foreign keys).
package bundsn

import (
	"database/sql"
	"net/url"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL driver
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // the SQLite driver
)

// Open opens dsn's database.
func Open(dsn string) (*bun.DB, error) {
	lower := strings.ToLower(dsn)
	if strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://") {
		sqldb, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, err
		}
		return bun.NewDB(sqldb, pgdialect.New()), nil
	}
	path := strings.TrimPrefix(dsn, "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	q := url.Values{"_txlock": {"immediate"}, "_pragma": {"journal_mode(WAL)", "busy_timeout(10000)", "foreign_keys(1)"}}
	sqldb, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	return bun.NewDB(sqldb, sqlitedialect.New()), nil
}
