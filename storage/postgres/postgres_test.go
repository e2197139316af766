package postgres_test

import (
	"testing"

	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

func TestConformancePostgres(t *testing.T) {
	dsn := pgtest.PostgresServer(t)
	storetest.Run(t, func(t *testing.T) payoutkit.Store { return openPostgres(t, pgtest.FreshSchema(t, dsn)) })
}

func TestStaffConformancePostgres(t *testing.T) {
	dsn := pgtest.PostgresServer(t)
	storetest.RunStaff(t, func(t *testing.T) storetest.StaffStore { return openPostgres(t, pgtest.FreshSchema(t, dsn)) })
}

func openPostgres(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
