package staff_test

import (
	"context"
	"errors"
	"testing"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/staff"
)

// Each role allows what the roles below it allow, and nothing else is a
// role.
func TestRoles(t *testing.T) {
	admin, dev, viewer := payoutkit.RoleAdmin, payoutkit.RoleDeveloper, payoutkit.RoleViewer
	for _, c := range []struct {
		have, need payoutkit.Role
		ok         bool
	}{
		{admin, admin, true}, {admin, dev, true}, {admin, viewer, true},
		{dev, admin, false}, {dev, dev, true}, {dev, viewer, true},
		{viewer, admin, false}, {viewer, dev, false}, {viewer, viewer, true},
		{"", viewer, false}, {"owner", viewer, false}, {admin, "owner", false},
	} {
		if got := c.have.Allows(c.need); got != c.ok {
			t.Errorf("%q.Allows(%q) = %v; want %v", c.have, c.need, got, c.ok)
		}
	}
	for _, s := range []string{"admin", " Developer ", "VIEWER"} {
		if _, err := staff.ParseRole(s); err != nil {
			t.Errorf("ParseRole(%q): %v", s, err)
		}
	}
	if _, err := staff.ParseRole("owner"); !errors.Is(err, payoutkit.ErrInvalidInput) {
		t.Errorf("ParseRole(owner): %v; want ErrInvalidInput", err)
	}
}

// The team judges a staff call by the role stored for the user, not by the
// Role of the session value a caller hands it.
func TestAuthorizeReadsTheStoredRole(t *testing.T) {
	eng, team := newTeam(t, nil)
	ctx := context.Background()
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := team.AddUser(ctx, nw.Workspace.ID, "viewer@example.com", payoutkit.RoleViewer, payoutkit.ActorCLI)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := signIn(ctx, team, ns.Email, ns.Password)
	if err != nil {
		t.Fatal(err)
	}
	forged := sess.Session
	forged.Role = payoutkit.RoleAdmin
	c := staff.Caller{Session: forged, ClientAddr: "192.0.2.1"}
	if _, err := team.Authorize(ctx, c, payoutkit.RoleAdmin); !errors.Is(err, payoutkit.ErrForbidden) {
		t.Fatalf("a viewer's call with a forged role: %v; want ErrForbidden", err)
	}
	if err := team.StepUp(ctx, c, "123456"); !errors.Is(err, payoutkit.ErrForbidden) {
		t.Fatalf("a viewer's step-up: %v; want ErrForbidden", err)
	}
	// An engine action with a stepped-up actor is refused before it changes
	// anything.
	if _, err := eng.SetPayoutPolicy(ctx, nw.Workspace.ID, payoutkit.PolicyPatch{MaxPayout: &payoutkit.Limit{Set: true, Amount: 100}}, team.SteppedUp(c, "123456")); !errors.Is(err, payoutkit.ErrForbidden) {
		t.Fatalf("a viewer's stepped-up policy change: %v; want ErrForbidden", err)
	}
	if pol, err := eng.PayoutPolicy(ctx, nw.Workspace.ID); err != nil || pol.MaxPayout.Set {
		t.Fatalf("the policy after a refused change: %+v, %v", pol, err)
	}
	// A session of another workspace's user grants nothing here.
	other := forged
	other.WorkspaceID = "ws_other"
	if _, err := team.Authorize(ctx, staff.Caller{Session: other}, payoutkit.RoleViewer); !errors.Is(err, payoutkit.ErrUnauthorized) {
		t.Fatalf("a session naming another workspace: %v; want ErrUnauthorized", err)
	}
}
