package staff_test

import (
	"context"
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/staff"
	"github.com/payoutkit/payoutkit/storage/memstore"
	"golang.org/x/crypto/bcrypt"
)

// newTeam returns an engine and a team over one new in-memory store.
func newTeam(t testing.TB, cfg *staff.Config) (*payoutkit.Engine, *staff.Team) {
	t.Helper()
	store := memstore.New()
	eng, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	if cfg == nil {
		cfg = &staff.Config{}
	}
	cfg.PasswordCost = bcrypt.MinCost
	team, err := staff.New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return eng, team
}

// signIn starts a session of a user without two-factor sign-in.
func signIn(ctx context.Context, team *staff.Team, email, password string) (staff.NewSession, error) {
	st, err := team.SignIn(ctx, email, password, "")
	return st.Session, err
}
