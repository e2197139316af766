package storetest

import (
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/staff"
)

// staffLog is a security log entry of a staff change, as the stores take it.
func staffLog(ws, action string) payoutkit.SecurityLogEntry {
	return payoutkit.SecurityLogEntry{WorkspaceID: ws, At: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), Action: action, Actor: "cli",
		Details: map[string]string{"k": "v"}}
}

// logActions returns the workspace's security log's actions, newest first.
func (e *env) logActions(ws string) []string {
	e.t.Helper()
	page, err := e.store.SecurityLog(e.ctx, ws, payoutkit.PageRequest{Limit: 100}.Normalize())
	noErr(e.t, err)
	var out []string
	for _, it := range page.Items {
		out = append(out, it.Action)
	}
	return out
}

// testStaffSecurity is the conformance suite of section 11's store
// methods: roles and the last admin, two-factor state, codes used once,
// the workspace's two-factor rule.
func testStaffSecurity(t *testing.T, open OpenStaff) {
	t.Run("RolesAndLastAdmin", func(t *testing.T) {
		e, _ := newStaffEnv(t, open)
		nw := e.workspace()
		ws := nw.Workspace.ID
		u, err := e.store.StaffUser(e.ctx, nw.StaffEmail)
		noErr(t, err)
		if u.Role != payoutkit.RoleAdmin {
			t.Fatalf("workspace create's login has role %q; want admin", u.Role)
		}
		noErr(t, e.store.InsertStaffUser(e.ctx, payoutkit.StaffUser{WorkspaceID: ws, Email: "dev@example.com", PasswordHash: "x",
			CreatedAt: time.Now(), Role: payoutkit.RoleDeveloper}, staffLog(ws, "staff.added")))
		list, err := e.store.StaffUsers(e.ctx, ws)
		noErr(t, err)
		roles := map[string]payoutkit.Role{}
		for _, u := range list {
			roles[u.Email] = u.Role
		}
		if len(list) != 2 || list[0].Email > list[1].Email || roles["dev@example.com"] != payoutkit.RoleDeveloper || roles[nw.StaffEmail] != payoutkit.RoleAdmin {
			t.Fatalf("StaffUsers = %+v; want both, by e-mail, with their roles", list)
		}
		// The only admin can be neither demoted nor removed.
		wantErr(t, e.store.SetStaffRole(e.ctx, ws, nw.StaffEmail, payoutkit.RoleViewer, staffLog(ws, "staff.role_changed")), payoutkit.ErrConflict)
		_, err = e.store.DeleteStaffUser(e.ctx, ws, nw.StaffEmail, staffLog(ws, "staff.removed"))
		wantErr(t, err, payoutkit.ErrConflict)
		wantErr(t, e.store.SetStaffRole(e.ctx, ws, "nobody@example.com", payoutkit.RoleViewer, staffLog(ws, "x")), payoutkit.ErrNotFound)
		if got := e.logActions(ws); len(got) != 1 || got[0] != "staff.added" {
			t.Fatalf("security log = %v; want only staff.added (a refused change logs nothing)", got)
		}
		// With a second admin, either can go.
		noErr(t, e.store.SetStaffRole(e.ctx, ws, "dev@example.com", payoutkit.RoleAdmin, staffLog(ws, "staff.role_changed")))
		noErr(t, e.store.SetStaffRole(e.ctx, ws, nw.StaffEmail, payoutkit.RoleViewer, staffLog(ws, "staff.role_changed")))
		u, err = e.store.StaffUser(e.ctx, nw.StaffEmail)
		noErr(t, err)
		if u.Role != payoutkit.RoleViewer {
			t.Fatalf("role = %q; want viewer", u.Role)
		}
		n, err := e.store.DeleteStaffUser(e.ctx, ws, nw.StaffEmail, staffLog(ws, "staff.removed"))
		noErr(t, err)
		if n != 1 {
			t.Fatalf("deleted %d", n)
		}
		_, err = e.store.DeleteStaffUser(e.ctx, ws, "dev@example.com", staffLog(ws, "staff.removed"))
		wantErr(t, err, payoutkit.ErrConflict)
		if got := e.logActions(ws); len(got) != 4 {
			t.Fatalf("security log = %v; want 4 entries", got)
		}
	})

	t.Run("ConcurrentDemotionsKeepAnAdmin", func(t *testing.T) {
		e, _ := newStaffEnv(t, open)
		nw := e.workspace()
		ws := nw.Workspace.ID
		noErr(t, e.store.InsertStaffUser(e.ctx, payoutkit.StaffUser{WorkspaceID: ws, Email: "second@example.com", PasswordHash: "x",
			CreatedAt: time.Now(), Role: payoutkit.RoleAdmin}, staffLog(ws, "staff.added")))
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, email := range []string{nw.StaffEmail, "second@example.com"} {
			wg.Go(func() {
				if i == 0 {
					errs[i] = e.store.SetStaffRole(e.ctx, ws, email, payoutkit.RoleViewer, staffLog(ws, "staff.role_changed"))
				} else {
					_, errs[i] = e.store.DeleteStaffUser(e.ctx, ws, email, staffLog(ws, "staff.removed"))
				}
			})
		}
		wg.Wait()
		list, err := e.store.StaffUsers(e.ctx, ws)
		noErr(t, err)
		admins := 0
		for _, u := range list {
			if u.Role == payoutkit.RoleAdmin {
				admins++
			}
		}
		failed := 0
		for _, err := range errs {
			if errors.Is(err, payoutkit.ErrConflict) {
				failed++
			} else {
				noErr(t, err)
			}
		}
		if admins != 1 || failed != 1 {
			t.Fatalf("after a demotion and a removal at once: %d admins, %d refused (%v); want 1 and 1", admins, failed, errs)
		}
	})

	t.Run("TOTPState", func(t *testing.T) {
		e, _ := newStaffEnv(t, open)
		nw := e.workspace()
		ws, email := nw.Workspace.ID, nw.StaffEmail
		// Nothing is used while it is off.
		wantErr(t, e.store.UseTOTPStep(e.ctx, email, 5), payoutkit.ErrConflict)
		noErr(t, e.store.SetStaffTOTP(e.ctx, email, payoutkit.StaffTOTP{Pending: "pending-secret"}, nil))
		wantErr(t, e.store.UseTOTPStep(e.ctx, email, 5), payoutkit.ErrConflict)
		codes := [][32]byte{sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))}
		on := staffLog(ws, "twofactor.enabled")
		noErr(t, e.store.SetStaffTOTP(e.ctx, email, payoutkit.StaffTOTP{Secret: "sealed", LastStep: 10, RecoveryHashes: codes}, &on))
		u, err := e.store.StaffUser(e.ctx, email)
		noErr(t, err)
		if u.TOTPSecret != "sealed" || u.TOTPPending != "" || u.TOTPLastStep != 10 || u.RecoveryCodes != 2 || !u.TwoFactor() {
			t.Fatalf("user = %+v", u)
		}
		// A step at or before the last is refused; a later one moves it.
		wantErr(t, e.store.UseTOTPStep(e.ctx, email, 10), payoutkit.ErrConflict)
		wantErr(t, e.store.UseTOTPStep(e.ctx, email, 9), payoutkit.ErrConflict)
		noErr(t, e.store.UseTOTPStep(e.ctx, email, 11))
		wantErr(t, e.store.UseTOTPStep(e.ctx, email, 11), payoutkit.ErrConflict)
		// Of concurrent uses of one step, one wins.
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for range 8 {
			wg.Go(func() {
				if e.store.UseTOTPStep(e.ctx, email, 12) == nil {
					mu.Lock()
					wins++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("%d concurrent uses of one step passed; want 1", wins)
		}
		// A recovery code is used once.
		noErr(t, e.store.UseRecoveryCode(e.ctx, email, codes[0]))
		wantErr(t, e.store.UseRecoveryCode(e.ctx, email, codes[0]), payoutkit.ErrNotFound)
		wantErr(t, e.store.UseRecoveryCode(e.ctx, email, sha256.Sum256([]byte("never"))), payoutkit.ErrNotFound)
		u, err = e.store.StaffUser(e.ctx, email)
		noErr(t, err)
		if u.RecoveryCodes != 1 || u.TOTPLastStep != 12 {
			t.Fatalf("user = %+v", u)
		}
		// Turning it off forgets the secret and the codes, not the step.
		off := staffLog(ws, "twofactor.reset")
		noErr(t, e.store.SetStaffTOTP(e.ctx, email, payoutkit.StaffTOTP{LastStep: u.TOTPLastStep}, &off))
		wantErr(t, e.store.UseRecoveryCode(e.ctx, email, codes[1]), payoutkit.ErrNotFound)
		u, err = e.store.StaffUser(e.ctx, email)
		noErr(t, err)
		if u.TwoFactor() || u.RecoveryCodes != 0 || u.TOTPLastStep != 12 {
			t.Fatalf("user = %+v", u)
		}
		wantErr(t, e.store.SetStaffTOTP(e.ctx, "nobody@example.com", payoutkit.StaffTOTP{}, nil), payoutkit.ErrNotFound)
		if got := e.logActions(ws); len(got) != 2 || got[0] != "twofactor.reset" || got[1] != "twofactor.enabled" {
			t.Fatalf("security log = %v", got)
		}
	})

	t.Run("RequireTwoFactorAndLastSignIn", func(t *testing.T) {
		e, _ := newStaffEnv(t, open)
		nw := e.workspace()
		ws := nw.Workspace.ID
		w, err := e.store.Workspace(e.ctx, ws)
		noErr(t, err)
		if w.RequireTwoFactor {
			t.Fatal("a new workspace requires two-factor sign-in")
		}
		noErr(t, e.store.SetRequireTwoFactor(e.ctx, ws, true, staffLog(ws, "twofactor.required")))
		w, err = e.store.Workspace(e.ctx, ws)
		noErr(t, err)
		if !w.RequireTwoFactor {
			t.Fatal("RequireTwoFactor did not stick")
		}
		wantErr(t, e.store.SetRequireTwoFactor(e.ctx, "ws_unknown", true, staffLog("ws_unknown", "x")), payoutkit.ErrNotFound)

		u, err := e.store.StaffUser(e.ctx, nw.StaffEmail)
		noErr(t, err)
		if !u.LastSignInAt.IsZero() {
			t.Fatalf("LastSignInAt = %v before any sign-in", u.LastSignInAt)
		}
		ns, err := e.signIn(nw.StaffEmail, nw.StaffPassword)
		noErr(t, err)
		u, err = e.store.StaffUser(e.ctx, nw.StaffEmail)
		noErr(t, err)
		if !u.LastSignInAt.Equal(ns.Session.CreatedAt) {
			t.Fatalf("LastSignInAt = %v; want %v", u.LastSignInAt, ns.Session.CreatedAt)
		}
	})

	t.Run("TwoFactorSignIn", func(t *testing.T) {
		e, clock := newStaffEnv(t, open)
		nw := e.workspace()
		ns, err := e.signIn(nw.StaffEmail, nw.StaffPassword)
		noErr(t, err)
		caller := staff.Caller{Session: ns.Session, ClientAddr: "192.0.2.7"}
		setup, err := e.team.TOTPSetup(e.ctx, caller)
		noErr(t, err)
		code := func() string {
			c, err := totp.GenerateCodeCustom(setup.Secret, clock.Now(), totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
			noErr(t, err)
			return c
		}
		codes, err := e.team.EnableTOTP(e.ctx, caller, code())
		noErr(t, err)
		if len(codes) != staff.RecoveryCodes {
			t.Fatalf("%d recovery codes", len(codes))
		}
		// The password alone no longer starts a session.
		st, err := e.team.SignIn(e.ctx, nw.StaffEmail, nw.StaffPassword, "192.0.2.7")
		noErr(t, err)
		if st.Pending == "" || st.Session.Token != "" {
			t.Fatalf("BeginSignIn = %+v; want a pending second step", st)
		}
		// The code that turned it on was used: the same step is refused.
		_, err = e.team.FinishSignIn(e.ctx, st.Pending, code(), "192.0.2.7")
		wantErr(t, err, payoutkit.ErrUnauthorized)
		clock.Add(30 * time.Second)
		c := code()
		_, err = e.team.FinishSignIn(e.ctx, st.Pending, c, "192.0.2.7")
		noErr(t, err)
		_, err = e.team.FinishSignIn(e.ctx, st.Pending, c, "192.0.2.7")
		wantErr(t, err, payoutkit.ErrUnauthorized)
		// A recovery code works once.
		_, err = e.team.FinishSignIn(e.ctx, st.Pending, codes[0], "192.0.2.7")
		noErr(t, err)
		_, err = e.team.FinishSignIn(e.ctx, st.Pending, codes[0], "192.0.2.7")
		wantErr(t, err, payoutkit.ErrUnauthorized)
		// An altered or expired pending state is refused.
		clock.Add(30 * time.Second)
		_, err = e.team.FinishSignIn(e.ctx, st.Pending+"x", code(), "")
		wantErr(t, err, payoutkit.ErrUnauthorized)
		clock.Add(10 * time.Minute)
		_, err = e.team.FinishSignIn(e.ctx, st.Pending, code(), "")
		wantErr(t, err, payoutkit.ErrUnauthorized)
		// Wrong codes count toward the sign-in limit: the failures above
		// and three more lock the e-mail, even with a right code.
		st, err = e.team.SignIn(e.ctx, nw.StaffEmail, nw.StaffPassword, "")
		noErr(t, err)
		for range 5 {
			_, err = e.team.FinishSignIn(e.ctx, st.Pending, "000000", "")
			if _, locked := errors.AsType[*staff.SignInLockedError](err); locked {
				break
			}
			wantErr(t, err, payoutkit.ErrUnauthorized)
		}
		clock.Add(30 * time.Second)
		_, err = e.team.FinishSignIn(e.ctx, st.Pending, code(), "")
		if _, locked := errors.AsType[*staff.SignInLockedError](err); !locked {
			t.Fatalf("after wrong codes, err = %v; want the sign-in locked", err)
		}
		// Each outcome is in the security log, never a code.
		page, err := e.eng.SecurityLog(e.ctx, nw.Workspace.ID, payoutkit.PageRequest{Limit: 100})
		noErr(t, err)
		seen := map[string]bool{}
		for _, it := range page.Items {
			seen[it.Action] = true
			for _, v := range it.Details {
				if v == c || v == codes[0] || v == setup.Secret {
					t.Fatalf("the security log holds a code or secret: %+v", it)
				}
			}
		}
		for _, a := range []string{staff.ActionTwoFactorOn, staff.ActionSignInSucceeded, staff.ActionSignInFailed, staff.ActionSignInThrottled} {
			if !seen[a] {
				t.Errorf("the security log has no %s entry", a)
			}
		}
	})
}
