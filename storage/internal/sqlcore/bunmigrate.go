package sqlcore

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// AddBunMigrations adds one bun migration per file to ms, named
// "payoutkit_%04d_<name>", whose Up brings the program's database to that
// file's version with migrateTo and whose Down fails: payoutkit's
// migrations are not rolled back.
func AddBunMigrations(ms *migrate.Migrations, files []Migration, migrateTo func(ctx context.Context, db *bun.DB, version int) error) {
	for _, f := range files {
		version := f.Version
		m := migrate.Migration{Name: fmt.Sprintf("payoutkit_%04d_%s", f.Version, f.Name), Comment: "payoutkit schema"}
		m.Up = func(ctx context.Context, migrator *migrate.Migrator, _ *migrate.Migration) error {
			return migrateTo(ctx, migrator.DB(), version)
		}
		m.Down = func(context.Context, *migrate.Migrator, *migrate.Migration) error {
			return fmt.Errorf("sqlstore: payoutkit migration %d cannot be rolled back", version)
		}
		ms.Add(m)
	}
}
