package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/staff"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// storeConfig is what the server asks of its store, whichever database -db
// names.
type storeConfig struct {
	log *slog.Logger
	// observeCommit is told of every group-commit transaction (metrics).
	observeCommit func(writes int, d time.Duration)
	// admin opens the store for one administrative command beside a running
	// server: on SQLite it waits longer for the write lock and takes its
	// next turn (sqlite.WithPriorityWrites).
	admin bool
	// existing opens only a database that serve (or workspace create, or
	// migrate) has made and brought to this binary's schema: a mistyped
	// -db is refused, never created (WithExistingSchema).
	existing bool
}

// storeOption sets a storeConfig field.
type storeOption func(*storeConfig)

// withCommitObserver sets storeConfig.observeCommit.
func withCommitObserver(fn func(writes int, d time.Duration)) storeOption {
	return func(c *storeConfig) { c.observeCommit = fn }
}

// asAdmin sets storeConfig.admin and storeConfig.existing: an admin command
// finds its database, and never creates or migrates one.
func asAdmin() storeOption { return func(c *storeConfig) { c.admin, c.existing = true, true } }

// creating clears storeConfig.existing, for the commands that may make the
// database (serve, workspace create) or migrate it (migrate).
func creating() storeOption { return func(c *storeConfig) { c.existing = false } }

// isPostgres reports whether dsn names a PostgreSQL database rather than a
// SQLite file.
func isPostgres(dsn string) bool {
	lower := strings.ToLower(dsn)
	return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
}

// sqlStore is the store a -db opens, *sqlite.Store or *postgres.Store:
// the engine's store, which keeps the staff's identity beside it
// (staff.Store), and what the audit asks of those two beyond them.
type sqlStore interface {
	payoutkit.Store
	staff.Store
	// Orphans counts the rows whose workspace or parent row is gone.
	Orphans(ctx context.Context) ([]sqlite.OrphanCount, error)
}

// openDSN opens the database named by dsn: a "postgres://" or
// "postgresql://" URL with storage/postgres, anything else (a file path or
// a "file:" URL) with storage/sqlite.
func openDSN(ctx context.Context, dsn string, opts ...storeOption) (sqlStore, error) {
	var c storeConfig
	for _, o := range opts {
		o(&c)
	}
	if isPostgres(dsn) {
		po := []postgres.Option{postgres.WithLogger(c.log)}
		if c.observeCommit != nil {
			po = append(po, postgres.WithCommitObserver(c.observeCommit))
		}
		if c.existing {
			po = append(po, postgres.WithExistingSchema())
		}
		s, err := postgres.Open(ctx, dsn, po...)
		if err != nil {
			return nil, explainOpen(dsn, err)
		}
		return s, nil
	}
	so := []sqlite.Option{sqlite.WithLogger(c.log)}
	if c.observeCommit != nil {
		so = append(so, sqlite.WithCommitObserver(c.observeCommit))
	}
	if c.admin {
		so = append(so, sqlite.WithBusyTimeout(adminBusyTimeout), sqlite.WithPriorityWrites())
	}
	if c.existing {
		so = append(so, sqlite.WithExistingSchema())
	}
	s, err := sqlite.Open(ctx, dsn, so...)
	if err != nil {
		return nil, explainOpen(dsn, err)
	}
	return s, nil
}

// explainOpen says what the user can do about a database that an admin
// command will not open: a -db that names none, or a schema that serve or
// migrate must upgrade first. Other errors pass as they are.
func explainOpen(dsn string, err error) error {
	// storage/postgres's errors are the same values.
	switch {
	case errors.Is(err, sqlite.ErrNoSchema) && isPostgres(dsn):
		return fmt.Errorf("%s holds no payoutkit database (no payoutkit tables in its schema): check -db; serve or workspace create makes one", describeDSN(dsn))
	case errors.Is(err, sqlite.ErrNoSchema):
		if _, serr := os.Stat(sqlitePath(dsn)); errors.Is(serr, fs.ErrNotExist) {
			return fmt.Errorf("no database at %s: check -db (nothing was created); serve or workspace create makes one", sqlitePath(dsn))
		}
		return fmt.Errorf("%s is not a payoutkit database (it has no payoutkit tables): check -db; serve or workspace create makes one", sqlitePath(dsn))
	case errors.Is(err, sqlite.ErrSchemaOutdated):
		return fmt.Errorf("%w; run `server migrate -db %s` (or start serve on it) to upgrade it first", err, describeDSN(dsn))
	}
	return err
}

// sqlitePath is the file of a SQLite DSN: the path itself, or a "file:"
// URL's path ("" when it names none).
func sqlitePath(dsn string) string {
	rest, ok := strings.CutPrefix(dsn, "file:")
	if !ok {
		return dsn
	}
	if strings.HasPrefix(rest, "//") {
		u, err := url.Parse(dsn)
		if err != nil {
			return ""
		}
		return u.Path
	}
	p, _, _ := strings.Cut(rest, "?")
	if unescaped, err := url.PathUnescape(p); err == nil {
		return unescaped
	}
	return p
}
