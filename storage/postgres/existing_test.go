package postgres_test

import (
	"errors"
	"testing"

	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// WithExistingSchema opens a migrated database, and refuses one without
// payoutkit's tables and an older schema, migrating nothing.
func TestOpenWithExistingSchema(t *testing.T) {
	ctx := t.Context()
	fresh := pgtest.Postgres(t)
	for range 2 { // the first refusal created nothing
		if _, err := postgres.Open(ctx, fresh, postgres.WithExistingSchema()); !errors.Is(err, postgres.ErrNoSchema) {
			t.Fatalf("Open(an empty schema): %v; want ErrNoSchema", err)
		}
	}

	old := pgtest.Postgres(t)
	s, err := postgres.OpenAtVersion(ctx, old, 1)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for range 2 {
		if _, err := postgres.Open(ctx, old, postgres.WithExistingSchema()); !errors.Is(err, postgres.ErrSchemaOutdated) {
			t.Fatalf("Open(an older schema): %v; want ErrSchemaOutdated", err)
		}
	}
	s2, err := postgres.Open(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	s3, err := postgres.Open(ctx, old, postgres.WithExistingSchema())
	if err != nil {
		t.Fatalf("Open(a migrated database): %v", err)
	}
	if err := s3.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	s3.Close()
}
