package payoutkit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/payoutkit/payoutkit"
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
		if _, err := payoutkit.ParseRole(s); err != nil {
			t.Errorf("ParseRole(%q): %v", s, err)
		}
	}
	if _, err := payoutkit.ParseRole("owner"); !errors.Is(err, payoutkit.ErrInvalidInput) {
		t.Errorf("ParseRole(owner): %v; want ErrInvalidInput", err)
	}
}

// The engine judges a staff call by the role stored for the user, not by
// the Role of the session value a caller hands it.
func TestAuthorizeReadsTheStoredRole(t *testing.T) {
	eng := newEngine(t, nil)
	ctx := context.Background()
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := eng.AddStaffWithRole(ctx, nw.Workspace.ID, "viewer@example.com", payoutkit.RoleViewer, payoutkit.ActorCLI)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := eng.SignInSession(ctx, ns.Email, ns.Password)
	if err != nil {
		t.Fatal(err)
	}
	forged := sess.Session
	forged.Role = payoutkit.RoleAdmin
	c := payoutkit.StaffCaller{Session: forged, ClientAddr: "192.0.2.1"}
	if _, err := eng.AddStaffAs(ctx, c, "x@example.com", payoutkit.RoleAdmin); !errors.Is(err, payoutkit.ErrForbidden) {
		t.Fatalf("a viewer's call with a forged role: %v; want ErrForbidden", err)
	}
	if err := eng.StepUp(ctx, c, "123456"); !errors.Is(err, payoutkit.ErrForbidden) {
		t.Fatalf("a viewer's step-up: %v; want ErrForbidden", err)
	}
	// A session of another workspace's user grants nothing here.
	other := forged
	other.WorkspaceID = "ws_other"
	if _, err := eng.Authorize(ctx, payoutkit.StaffCaller{Session: other}, payoutkit.RoleViewer); !errors.Is(err, payoutkit.ErrUnauthorized) {
		t.Fatalf("a session naming another workspace: %v; want ErrUnauthorized", err)
	}
}
