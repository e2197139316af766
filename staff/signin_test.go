package staff_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/staff"
)

// SignIn counts and honours the failures of its e-mail: after
// SignInMaxFailures wrong passwords the right one is refused too, until the
// window has passed, and a success forgets them.
func TestSignInIsThrottled(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	eng, team := newTeam(t, &staff.Config{Now: func() time.Time { return now }, SignInMaxFailures: 3, SignInWindow: time.Minute})
	ctx := context.Background()
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme", StaffEmail: "ops@example.com", StaffPassword: "correct horse battery"})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := signIn(ctx, team, "Ops@Example.com", "correct horse battery"); err != nil || s.Session.WorkspaceID != nw.Workspace.ID {
		t.Fatalf("SignIn = %+v, %v", s, err)
	}
	for range 3 {
		if _, err := signIn(ctx, team, "ops@example.com", "wrong password!!"); !errors.Is(err, payoutkit.ErrUnauthorized) {
			t.Fatalf("wrong password: %v", err)
		}
	}
	var locked *staff.SignInLockedError
	if _, err := signIn(ctx, team, "ops@example.com", "correct horse battery"); !errors.As(err, &locked) || locked.RetryAfter != time.Minute {
		t.Fatalf("SignIn after 3 failures = %v; want a *SignInLockedError", err)
	}
	now = now.Add(time.Minute)
	if _, err := signIn(ctx, team, "ops@example.com", "correct horse battery"); err != nil {
		t.Fatalf("SignIn once the window passed: %v", err)
	}
	// A success forgets the failures.
	for range 2 {
		if _, err := signIn(ctx, team, "ops@example.com", "wrong password!!"); !errors.Is(err, payoutkit.ErrUnauthorized) {
			t.Fatalf("wrong password: %v", err)
		}
	}
	if _, err := signIn(ctx, team, "ops@example.com", "correct horse battery"); err != nil {
		t.Fatalf("SignIn after 2 failures: %v", err)
	}
}

// ResetPassword gives a login a new password, returned once, and ends
// every session of theirs; the old password no longer signs in. A login of
// another workspace, or none, is ErrNotFound.
func TestResetPassword(t *testing.T) {
	eng, team := newTeam(t, nil)
	ctx := context.Background()
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme", StaffEmail: "ops@example.com", StaffPassword: "correct horse battery"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Other"})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := signIn(ctx, team, "ops@example.com", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ ws, email string }{{other.Workspace.ID, "ops@example.com"}, {nw.Workspace.ID, "nobody@example.com"}, {"ws_nope", "ops@example.com"}} {
		if _, err := team.ResetPassword(ctx, c.ws, c.email); !errors.Is(err, payoutkit.ErrNotFound) {
			t.Fatalf("ResetPassword(%s, %s) = %v; want ErrNotFound", c.ws, c.email, err)
		}
	}
	if _, err := team.Session(ctx, sess.Token); err != nil {
		t.Fatalf("a refused reset ended the session: %v", err)
	}
	ns, err := team.ResetPassword(ctx, nw.Workspace.ID, "Ops@Example.com")
	if err != nil || ns.Email != "ops@example.com" || len(ns.Password) < 20 {
		t.Fatalf("ResetPassword = %+v, %v", ns, err)
	}
	if _, err := team.Session(ctx, sess.Token); !errors.Is(err, payoutkit.ErrUnauthorized) {
		t.Fatalf("the session after a reset: %v; want it ended", err)
	}
	if _, err := signIn(ctx, team, "ops@example.com", "correct horse battery"); !errors.Is(err, payoutkit.ErrUnauthorized) {
		t.Fatalf("the old password after a reset: %v", err)
	}
	if s, err := signIn(ctx, team, "ops@example.com", ns.Password); err != nil || s.Session.WorkspaceID != nw.Workspace.ID {
		t.Fatalf("the new password: %+v, %v", s, err)
	}
}
