package payoutkit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
)

// SignIn, which starts no session, counts and honours the same per-e-mail
// failures as SignInSession: after SignInMaxFailures wrong passwords the
// right one is refused too, by either, until the window has passed.
func TestSignInIsThrottled(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	eng := newEngine(t, &payoutkit.Config{Now: func() time.Time { return now }, SignInMaxFailures: 3, SignInWindow: time.Minute})
	ctx := context.Background()
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme", StaffEmail: "ops@example.com", StaffPassword: "correct horse battery"})
	if err != nil {
		t.Fatal(err)
	}
	if u, err := eng.SignIn(ctx, "Ops@Example.com", "correct horse battery"); err != nil || u.WorkspaceID != nw.Workspace.ID {
		t.Fatalf("SignIn = %+v, %v", u, err)
	}
	for range 3 {
		if _, err := eng.SignIn(ctx, "ops@example.com", "wrong password!!"); !errors.Is(err, payoutkit.ErrUnauthorized) {
			t.Fatalf("wrong password: %v", err)
		}
	}
	var locked *payoutkit.SignInLockedError
	if _, err := eng.SignIn(ctx, "ops@example.com", "correct horse battery"); !errors.As(err, &locked) || locked.RetryAfter != time.Minute {
		t.Fatalf("SignIn after 3 failures = %v; want a *SignInLockedError", err)
	}
	if _, err := eng.SignInSession(ctx, "ops@example.com", "correct horse battery"); !errors.As(err, &locked) {
		t.Fatalf("SignInSession after 3 failures of SignIn = %v; want a *SignInLockedError", err)
	}
	now = now.Add(time.Minute)
	if _, err := eng.SignIn(ctx, "ops@example.com", "correct horse battery"); err != nil {
		t.Fatalf("SignIn once the window passed: %v", err)
	}
	// A success forgets the failures.
	for range 2 {
		if _, err := eng.SignInSession(ctx, "ops@example.com", "wrong password!!"); !errors.Is(err, payoutkit.ErrUnauthorized) {
			t.Fatalf("wrong password: %v", err)
		}
	}
	if _, err := eng.SignIn(ctx, "ops@example.com", "correct horse battery"); err != nil {
		t.Fatalf("SignIn after 2 failures: %v", err)
	}
}

// ResetStaffPassword gives a login a new password, returned once, and ends
// every session of theirs; the old password no longer signs in. A login of
// another workspace, or none, is ErrNotFound.
func TestResetStaffPassword(t *testing.T) {
	eng := newEngine(t, nil)
	ctx := context.Background()
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme", StaffEmail: "ops@example.com", StaffPassword: "correct horse battery"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Other"})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := eng.SignInSession(ctx, "ops@example.com", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ ws, email string }{{other.Workspace.ID, "ops@example.com"}, {nw.Workspace.ID, "nobody@example.com"}, {"ws_nope", "ops@example.com"}} {
		if _, err := eng.ResetStaffPassword(ctx, c.ws, c.email); !errors.Is(err, payoutkit.ErrNotFound) {
			t.Fatalf("ResetStaffPassword(%s, %s) = %v; want ErrNotFound", c.ws, c.email, err)
		}
	}
	if _, err := eng.StaffSession(ctx, sess.Token); err != nil {
		t.Fatalf("a refused reset ended the session: %v", err)
	}
	ns, err := eng.ResetStaffPassword(ctx, nw.Workspace.ID, "Ops@Example.com")
	if err != nil || ns.Email != "ops@example.com" || len(ns.Password) < 20 {
		t.Fatalf("ResetStaffPassword = %+v, %v", ns, err)
	}
	if _, err := eng.StaffSession(ctx, sess.Token); !errors.Is(err, payoutkit.ErrUnauthorized) {
		t.Fatalf("the session after a reset: %v; want it ended", err)
	}
	if _, err := eng.SignIn(ctx, "ops@example.com", "correct horse battery"); !errors.Is(err, payoutkit.ErrUnauthorized) {
		t.Fatalf("the old password after a reset: %v", err)
	}
	if u, err := eng.SignIn(ctx, "ops@example.com", ns.Password); err != nil || u.WorkspaceID != nw.Workspace.ID {
		t.Fatalf("the new password: %+v, %v", u, err)
	}
}
