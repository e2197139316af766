package sqlite

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// AddMigrations adds payoutkit's SQLite schema to a program's bun
// migrations, one bun migration per schema version ("payoutkit_0001_init",
// ...), so that the program's own migrator creates and upgrades payoutkit's
// tables with its own. Each one runs payoutkit's migrations up to its
// version, with the same rules as Open and New: in one transaction, under
// SQLite's write lock, recorded in schema_migrations, so that a store
// opened afterwards finds its schema current and migrates nothing.
//
// Rolling back is not supported: a payoutkit migration's Down fails.
func AddMigrations(ms *migrate.Migrations) error {
	files, err := loadMigrations()
	if err != nil {
		return err
	}
	for _, f := range files {
		version := f.Version
		m := migrate.Migration{Name: fmt.Sprintf("payoutkit_%04d_%s", f.Version, f.Name), Comment: "payoutkit schema"}
		m.Up = func(ctx context.Context, migrator *migrate.Migrator, _ *migrate.Migration) error {
			return migrateBunDB(ctx, migrator.DB(), version)
		}
		m.Down = func(context.Context, *migrate.Migrator, *migrate.Migration) error {
			return fmt.Errorf("sqlstore: payoutkit migration %d cannot be rolled back", version)
		}
		ms.Add(m)
	}
	return nil
}

// migrateBunDB brings db's payoutkit schema to version.
func migrateBunDB(ctx context.Context, db *bun.DB, version int) error {
	s := newStore(db.DB, db.DB, defaultConfig(), "the program's sqlite database")
	s.d.callerDB = true
	return s.migrateTo(ctx, version)
}
