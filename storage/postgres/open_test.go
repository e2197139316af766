package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"

	"github.com/jackc/pgx/v5"

	"github.com/payoutkit/payoutkit/storage/postgres"
)

// wantOpenError opens dsn and checks that it fails, without a panic, with
// an error that contains each of want.
func wantOpenError(t *testing.T, dsn string, want ...string) error {
	t.Helper()
	s, err := postgres.Open(t.Context(), dsn)
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
	t.Run("Postgres", func(t *testing.T) {
		wantOpenError(t, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", "cannot connect to PostgreSQL")
		err := wantOpenError(t, "postgres://u:s3cret@127.0.0.1:1/none?sslmode=nonsense", "invalid PostgreSQL DSN")
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error shows the password: %v", err)
		}
	})

	t.Run("PostgresNewerSchema", func(t *testing.T) {
		dsn := pgtest.Postgres(t)
		openPostgres(t, dsn).Close()
		conn, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(t.Context(), `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from_the_future', now())`); err != nil {
			t.Fatal(err)
		}
		wantOpenError(t, dsn, "sqlstore: database schema version 999 is newer than this binary (")
	})

	t.Run("PostgresReadOnly", func(t *testing.T) {
		dsn := pgtest.Postgres(t)
		openPostgres(t, dsn).Close()
		// A hot standby behaves the same: every transaction is read-only.
		err := wantOpenError(t, dsn+"&default_transaction_read_only=on", "read-only")
		if !errors.Is(err, postgres.ErrReadOnly) {
			t.Errorf("error %v is not ErrReadOnly", err)
		}
	})
}

// Instances starting at once on a new database migrate it once, and all
// of them open.
func TestConcurrentOpen(t *testing.T) {
	run := func(t *testing.T, dsn string, versions func() int) {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				s, err := postgres.Open(t.Context(), dsn)
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
		if n, want := versions(), postgres.Migrations(); n != want {
			t.Fatalf("schema_migrations holds %d rows; want %d", n, want)
		}
	}
	t.Run("Postgres", func(t *testing.T) {
		dsn := pgtest.Postgres(t)
		run(t, dsn, func() int {
			conn, err := pgx.Connect(t.Context(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			var n int
			if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		})
	})
}
