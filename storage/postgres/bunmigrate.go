package postgres

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// AddMigrations adds payoutkit's PostgreSQL schema to a program's bun
// migrations, one bun migration per schema version ("payoutkit_0001_init",
// ...), so that the program's own migrator creates and upgrades payoutkit's
// tables with its own. Each one runs payoutkit's migrations up to its
// version, with the same rules as Open and New: in one transaction, under
// a PostgreSQL advisory lock, recorded in schema_migrations, so that a store
// opened afterwards finds its schema current and migrates nothing.
//
// Of opts, WithLogger is the one that matters: each migration applied is
// logged there (slog.Default() unless set).
//
// Rolling back is not supported: a payoutkit migration's Down fails.
func AddMigrations(ms *migrate.Migrations, opts ...Option) error {
	files, err := loadMigrations()
	if err != nil {
		return err
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	sqlcore.AddBunMigrations(ms, files, func(ctx context.Context, db *bun.DB, version int) error {
		return migrateBunDB(ctx, db, cfg, version)
	})
	return nil
}

// migrateBunDB brings db's payoutkit schema to version.
func migrateBunDB(ctx context.Context, db *bun.DB, cfg config, version int) error {
	s := newStore(db.DB, cfg, "the program's postgres database")
	s.d.callerDB = true
	return s.migrateTo(ctx, version)
}
