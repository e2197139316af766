package sqlite_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// wantOpenError opens dsn and checks that it fails, without a panic, with
// an error that contains each of want.
func wantOpenError(t *testing.T, dsn string, want ...string) error {
	t.Helper()
	s, err := sqlite.Open(t.Context(), dsn, sqlite.WithBusyTimeout(100*time.Millisecond))
	if err == nil {
		s.Close()
		t.Fatalf("Open(%q) succeeded", dsn)
	}
	t.Logf("Open(%q): %v", dsn, err)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Open(%q) = %q; want it to mention %q", dsn, err, w)
		}
	}
	return err
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()

	t.Run("MissingDirectory", func(t *testing.T) {
		wantOpenError(t, filepath.Join(dir, "no", "such", "dir", "x.db"), "cannot open SQLite database", "missing or not accessible")
	})

	t.Run("NotADatabase", func(t *testing.T) {
		p := filepath.Join(dir, "garbage.db")
		if err := os.WriteFile(p, []byte(strings.Repeat("this is not a database\n", 200)), 0o600); err != nil {
			t.Fatal(err)
		}
		wantOpenError(t, p, "is not a SQLite database")
	})

	t.Run("Empty", func(t *testing.T) {
		wantOpenError(t, "", "empty DSN")
		wantOpenError(t, "file::memory:", "in-memory")
	})

	// What an operator means by a read-only database: the store can read it
	// but not write it. The store needs to write, so Open refuses it rather
	// than failing the first payout. mode=ro is SQLite's own way to say so,
	// and works for root too.
	t.Run("ReadOnlyURL", func(t *testing.T) {
		p := filepath.Join(dir, "ro.db")
		openClose(t, p)
		err := wantOpenError(t, "file:"+p+"?mode=ro", "read-only")
		if !errors.Is(err, sqlite.ErrReadOnly) {
			t.Errorf("error %v is not ErrReadOnly", err)
		}
		wantOpenError(t, "file:"+filepath.Join(dir, "missing-ro.db")+"?mode=ro", "cannot open")
	})

	t.Run("ReadOnlyFile", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("running as root: file permissions do not stop root from writing; ReadOnlyURL covers read-only databases")
		}
		p := filepath.Join(dir, "ro-file.db")
		openClose(t, p)
		for _, f := range []string{p, p + "-wal", p + "-shm"} {
			_ = os.Chmod(f, 0o444)
		}
		wantOpenError(t, p, "read-only")
	})

	t.Run("ReadOnlyDirectory", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("running as root: directory permissions do not stop root from writing")
		}
		ro := filepath.Join(dir, "ro-dir")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		wantOpenError(t, filepath.Join(ro, "x.db"), "cannot open")
	})

	t.Run("NewerSchema", func(t *testing.T) {
		p := filepath.Join(dir, "newer.db")
		openClose(t, p)
		raw, err := sql.Open("sqlite", p)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if _, err := raw.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from_the_future', 0)`); err != nil {
			t.Fatal(err)
		}
		wantOpenError(t, p, "sqlstore: database schema version 999 is newer than this binary (")
	})

}

func openClose(t *testing.T, dsn string) {
	t.Helper()
	s, err := sqlite.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// Instances starting at once on a new database migrate it once, and all
// of them open.
func TestConcurrentOpen(t *testing.T) {
	run := func(t *testing.T, dsn string, versions func() int) {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				s, err := sqlite.Open(t.Context(), dsn)
				if err == nil {
					err = s.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n, want := versions(), sqlite.Migrations(); n != want {
			t.Fatalf("schema_migrations holds %d rows; want %d", n, want)
		}
	}
	t.Run("SQLite", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "c.db")
		run(t, p, func() int {
			raw, err := sql.Open("sqlite", p)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			var n int
			if err := raw.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		})
	})
}

// Another process holding SQLite's write lock makes a write wait for the
// busy timeout and then fail with ErrBusy, not with a conflict or a hang.
func TestSQLiteBusy(t *testing.T) {
	p := filepath.Join(t.TempDir(), "busy.db")
	s, err := sqlite.Open(t.Context(), p, sqlite.WithBusyTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	eng, err := payoutkit.New(s, &payoutkit.Config{PasswordCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	nw, err := eng.CreateWorkspace(t.Context(), payoutkit.CreateWorkspaceRequest{Name: "Busy", WebhookURL: "https://hooks.example/payoutkit"})
	if err != nil {
		t.Fatal(err)
	}

	other, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err = eng.CreateOrder(t.Context(), nw.Workspace.ID, payoutkit.CreateOrderRequest{OrderID: "o1", Amount: "1.00"})
	if !errors.Is(err, sqlite.ErrBusy) || errors.Is(err, payoutkit.ErrConflict) {
		t.Fatalf("write while another process holds the lock: %v; want ErrBusy", err)
	}
	if waited := time.Since(start); waited < 80*time.Millisecond {
		t.Errorf("gave up after %v; the busy timeout is 100ms", waited)
	}
	// Reads go on meanwhile (WAL).
	if _, err := s.Balance(t.Context(), nw.Workspace.ID); err != nil {
		t.Fatalf("read while another process writes: %v", err)
	}
	if _, err := conn.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := eng.CreateOrder(t.Context(), nw.Workspace.ID, payoutkit.CreateOrderRequest{OrderID: "o1", Amount: "1.00"}); err != nil {
		t.Fatalf("write after the lock was released: %v", err)
	}
}

// A new database, and the WAL and shared-memory files beside it, are
// readable and writable by their owner alone: they hold webhook secrets.
func TestNewDatabaseIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "private.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.WorkspaceIDs(t.Context()); err != nil { // touches the WAL
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s: mode %o; want 600", filepath.Base(f), mode)
		}
	}
}
