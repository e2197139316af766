package evm

import (
	"github.com/uptrace/bun"

	"github.com/payoutkit/payoutkit/internal/bundsn"
)

// OpenDSN opens the engine's database for New, beside the store that
// opened it: a "postgres://" or "postgresql://" URL with pgx, anything else
// as a SQLite file (a path or a "file:" URL) the way storage/sqlite opens
// it (the WAL journal, IMMEDIATE transactions, a busy timeout).
func OpenDSN(dsn string) (*bun.DB, error) { return bundsn.Open(dsn) }
