package sqlcore_test

import (
	"os"
	"testing"

	"github.com/payoutkit/payoutkit/storage/internal/sqlcore"
)

// Both stores' migrations are numbered from 1 without gaps, and every
// schema change is made on both.
func TestMigrationsNumbered(t *testing.T) {
	root := os.DirFS("../..")
	load := func(d string) []sqlcore.Migration {
		ms, err := sqlcore.LoadMigrations(root, d+"/migrations", d)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 || ms[0].Version != 1 {
			t.Fatalf("%s migrations %+v", d, ms)
		}
		return ms
	}
	s, p := load("sqlite"), load("postgres")
	if len(s) != len(p) {
		t.Fatalf("%d SQLite migrations, %d PostgreSQL ones: every schema change is made on both", len(s), len(p))
	}
	for i := range s {
		if s[i].Name != p[i].Name {
			t.Errorf("migration %d is %q on SQLite, %q on PostgreSQL", i+1, s[i].Name, p[i].Name)
		}
	}
}
