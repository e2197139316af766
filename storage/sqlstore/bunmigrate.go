package sqlstore

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// AddMigrations adds payoutkit's schema to a program's bun migrations, one
// bun migration per schema version ("payoutkit_0001_init", ...), so that
// the program's own migrator creates and upgrades payoutkit's tables with
// its own. Each one runs payoutkit's migrate up to its version, with the
// same rules as Open and New: in one transaction, under payoutkit's lock
// (SQLite's write lock, a PostgreSQL advisory lock), recorded in
// schema_migrations, so that a store opened afterwards finds its schema
// current and migrates nothing. dialectName is the *bun.DB's dialect,
// dialect.PG or dialect.SQLite.
//
// Rolling back is not supported: a payoutkit migration's Down fails.
func AddMigrations(ms *migrate.Migrations, dialectName dialect.Name) error {
	var name string
	switch dialectName {
	case dialect.PG:
		name = DialectPostgres
	case dialect.SQLite:
		name = DialectSQLite
	default:
		return fmt.Errorf("sqlstore: bun dialect %s is not supported (PostgreSQL and SQLite are)", dialectName)
	}
	files, err := loadMigrations(name)
	if err != nil {
		return err
	}
	for _, f := range files {
		version := f.version
		m := migrate.Migration{Name: fmt.Sprintf("payoutkit_%04d_%s", f.version, f.name), Comment: "payoutkit schema"}
		m.Up = func(ctx context.Context, migrator *migrate.Migrator, _ *migrate.Migration) error {
			return migrateBunDB(ctx, migrator.DB(), name, version)
		}
		m.Down = func(context.Context, *migrate.Migrator, *migrate.Migration) error {
			return fmt.Errorf("sqlstore: payoutkit migration %d cannot be rolled back", version)
		}
		ms.Add(m)
	}
	return nil
}

// migrateBunDB brings db's payoutkit schema to version.
func migrateBunDB(ctx context.Context, db *bun.DB, dialectName string, version int) error {
	s := newStore(dialectName, db, db, defaultConfig(), "the program's "+dialectName+" database")
	s.callerDB = true
	return s.migrateTo(ctx, version)
}
