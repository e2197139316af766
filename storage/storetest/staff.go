package storetest

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/staff"
)

// fakeClock is a clock that tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// StaffStore is a store of both the engine's state and the staff's
// identity, as every store of this repository is.
type StaffStore interface {
	payoutkit.Store
	staff.Store
}

// OpenStaff returns a new, empty store for one test of RunStaff.
type OpenStaff func(t *testing.T) StaffStore

// RunStaff runs the staff suite: package staff's team over the store, and
// the store's staff methods directly.
func RunStaff(t *testing.T, open OpenStaff) {
	t.Run("Logins", func(t *testing.T) { testLogins(t, open) })
	t.Run("Staff", func(t *testing.T) { testStaff(t, open) })
	t.Run("StaffSecurity", func(t *testing.T) { testStaffSecurity(t, open) })
}

// staffEnv is one staff test's engine and team over a fresh store, both on
// a clock the test moves.
type staffEnv struct {
	*env
	store StaffStore
	team  *staff.Team
}

func newStaffEnv(t *testing.T, open OpenStaff) (*staffEnv, *fakeClock) {
	t.Helper()
	store := open(t)
	e := newEnv(t, func(*testing.T) payoutkit.Store { return store })
	clock := &fakeClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	eng, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.eng = eng
	team, err := staff.New(store, &staff.Config{PasswordCost: bcrypt.MinCost, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &staffEnv{env: e, store: store, team: team}, clock
}

// signIn starts a session of a user without two-factor sign-in.
func (e *staffEnv) signIn(email, password string) (staff.NewSession, error) {
	st, err := e.team.SignIn(e.ctx, email, password, "")
	if err == nil && st.Pending != "" {
		return staff.NewSession{}, errors.New("two-factor sign-in is on")
	}
	return st.Session, err
}

// testLogins checks the first staff login that CreateWorkspace makes, and
// the security log that sign-ins are appended to.
func testLogins(t *testing.T, open OpenStaff) {
	t.Run("SecurityLog", func(t *testing.T) {
		e, _ := newStaffEnv(t, open)
		ws := e.workspace().Workspace.ID
		noErr(t, e.store.AppendSecurityLog(e.ctx, payoutkit.SecurityLogEntry{
			WorkspaceID: ws, At: time.Now().UTC().Truncate(time.Microsecond), Action: "key.created",
			Actor: "api:pk_abc", ClientAddr: "198.51.100.1", Details: map[string]string{"prefix": "pk_abc"},
		}))
		log := must[payoutkit.Page[payoutkit.SecurityLogEntry]](t)(e.eng.SecurityLog(e.ctx, ws, payoutkit.PageRequest{}))
		if len(log.Items) != 1 || log.Items[0].Actor != "api:pk_abc" || log.Items[0].ClientAddr != "198.51.100.1" || log.Items[0].Details["prefix"] != "pk_abc" {
			t.Fatalf("security log = %+v", log.Items)
		}
		wantErr(t, e.store.AppendSecurityLog(e.ctx, payoutkit.SecurityLogEntry{WorkspaceID: "ws_unknown", At: time.Now().UTC(), Action: "key.created", Actor: "cli"}), payoutkit.ErrNotFound)
		_, err := e.eng.SecurityLog(e.ctx, "ws_unknown", payoutkit.PageRequest{})
		wantErr(t, err, payoutkit.ErrNotFound)
	})

	t.Run("CreateAndSignIn", func(t *testing.T) {
		e, _ := newStaffEnv(t, open)
		nw, err := e.eng.CreateWorkspace(e.ctx, payoutkit.CreateWorkspaceRequest{
			Name: "Acme", WebhookURL: "https://crm.example/hooks", StaffEmail: "Ops@Example.com", StaffPassword: "correct horse battery",
		})
		if err != nil {
			t.Fatal(err)
		}
		ws := must[payoutkit.Workspace](t)(e.eng.Workspace(e.ctx, nw.Workspace.ID))
		if ws.Name != "Acme" || ws.WebhookURL != "https://crm.example/hooks" || !strings.HasPrefix(ws.WebhookSecret, "whsec_") || len(ws.WebhookSecret) < 49 {
			t.Fatalf("workspace = %+v", ws)
		}
		ns, err := e.signIn("ops@example.com", "correct horse battery")
		if err != nil || ns.Session.WorkspaceID != ws.ID {
			t.Fatalf("SignIn = %+v, %v", ns, err)
		}
		u := must[payoutkit.StaffUser](t)(e.store.StaffUser(e.ctx, "ops@example.com"))
		if strings.Contains(u.PasswordHash, "correct horse") {
			t.Fatal("password stored in plain text")
		}
		for _, c := range [][2]string{{"ops@example.com", "wrong password!!"}, {"nobody@example.com", "correct horse battery"}} {
			_, err := e.signIn(c[0], c[1])
			wantErr(t, err, payoutkit.ErrUnauthorized)
		}
		e.wantBalance(ws.ID, "0.00", "0.00")
		// The e-mail is unique across workspaces.
		_, err = e.eng.CreateWorkspace(e.ctx, payoutkit.CreateWorkspaceRequest{Name: "Other", StaffEmail: "ops@example.com"})
		wantErr(t, err, payoutkit.ErrInvalidInput)
	})

	t.Run("GeneratedStaffLogin", func(t *testing.T) {
		e, _ := newStaffEnv(t, open)
		if ids := must[[]string](t)(e.store.WorkspaceIDs(e.ctx)); len(ids) != 0 {
			t.Fatalf("a new store has workspaces %v", ids)
		}
		nw := e.workspace()
		if ids := must[[]string](t)(e.store.WorkspaceIDs(e.ctx)); len(ids) != 1 || ids[0] != nw.Workspace.ID {
			t.Fatalf("WorkspaceIDs = %v; want [%s]", ids, nw.Workspace.ID)
		}
		if nw.StaffEmail == "" || len(nw.StaffPassword) < 12 {
			t.Fatalf("generated login %q / %q", nw.StaffEmail, nw.StaffPassword)
		}
		if _, err := e.signIn(nw.StaffEmail, nw.StaffPassword); err != nil {
			t.Fatal(err)
		}
	})

}

func testStaff(t *testing.T, open OpenStaff) {
	t.Run("SessionLifecycle", func(t *testing.T) {
		e, clock := newStaffEnv(t, open)
		nw := e.workspace()
		ns, err := e.signIn(nw.StaffEmail, nw.StaffPassword)
		noErr(t, err)
		if len(ns.Token) < 22 || ns.Session.WorkspaceID != nw.Workspace.ID || ns.Session.StaffEmail != nw.StaffEmail {
			t.Fatalf("session = %+v, token %q", ns.Session, ns.Token)
		}
		stored, err := e.store.StaffSession(e.ctx, ns.Session.TokenHash)
		noErr(t, err)
		if string(stored.TokenHash[:]) == ns.Token {
			t.Fatal("the store holds the token itself")
		}
		s := must[payoutkit.StaffSession](t)(e.team.Session(e.ctx, ns.Token))
		if s.WorkspaceID != nw.Workspace.ID || !s.CreatedAt.Equal(clock.Now()) {
			t.Fatalf("StaffSession = %+v", s)
		}
		_, err = e.team.Session(e.ctx, ns.Token+"x")
		wantErr(t, err, payoutkit.ErrUnauthorized)

		// Use keeps it alive past the idle timeout...
		for range 3 {
			clock.Add(staff.DefaultSessionIdleTimeout - time.Minute)
			must[payoutkit.StaffSession](t)(e.team.Session(e.ctx, ns.Token))
		}
		// ...but not idleness.
		clock.Add(staff.DefaultSessionIdleTimeout)
		_, err = e.team.Session(e.ctx, ns.Token)
		wantErr(t, err, payoutkit.ErrUnauthorized)
		_, err = e.store.StaffSession(e.ctx, ns.Session.TokenHash)
		wantErr(t, err, payoutkit.ErrNotFound) // an expired session is deleted

		// Sign-out ends it.
		ns = must[staff.NewSession](t)(e.signIn(nw.StaffEmail, nw.StaffPassword))
		noErr(t, e.team.EndSession(e.ctx, ns.Token))
		_, err = e.team.Session(e.ctx, ns.Token)
		wantErr(t, err, payoutkit.ErrUnauthorized)
		noErr(t, e.team.EndSession(e.ctx, ns.Token)) // twice is fine
	})

	t.Run("AbsoluteExpiry", func(t *testing.T) {
		e, clock := newStaffEnv(t, open)
		nw := e.workspace()
		ns := must[staff.NewSession](t)(e.signIn(nw.StaffEmail, nw.StaffPassword))
		// Used every 11 hours, it lives until 7 days after the sign-in.
		for clock.Now().Sub(ns.Session.CreatedAt) < staff.DefaultSessionMaxAge-11*time.Hour {
			clock.Add(11 * time.Hour)
			must[payoutkit.StaffSession](t)(e.team.Session(e.ctx, ns.Token))
		}
		clock.Add(ns.Session.CreatedAt.Add(staff.DefaultSessionMaxAge).Sub(clock.Now()) - time.Minute)
		must[payoutkit.StaffSession](t)(e.team.Session(e.ctx, ns.Token))
		clock.Add(time.Minute)
		_, err := e.team.Session(e.ctx, ns.Token)
		wantErr(t, err, payoutkit.ErrUnauthorized)
	})

	t.Run("PurgeOnSignIn", func(t *testing.T) {
		e, clock := newStaffEnv(t, open)
		nw := e.workspace()
		old := must[staff.NewSession](t)(e.signIn(nw.StaffEmail, nw.StaffPassword))
		clock.Add(staff.DefaultSessionIdleTimeout + time.Second)
		fresh := must[staff.NewSession](t)(e.signIn(nw.StaffEmail, nw.StaffPassword))
		_, err := e.store.StaffSession(e.ctx, old.Session.TokenHash)
		wantErr(t, err, payoutkit.ErrNotFound)
		must[payoutkit.StaffSession](t)(e.store.StaffSession(e.ctx, fresh.Session.TokenHash))
	})

	t.Run("WrongPasswordAndUnknownEmail", func(t *testing.T) {
		e, _ := newStaffEnv(t, open)
		nw := e.workspace()
		_, errWrong := e.signIn(nw.StaffEmail, nw.StaffPassword+"x")
		_, errUnknown := e.signIn("nobody@example.com", nw.StaffPassword)
		wantErr(t, errWrong, payoutkit.ErrUnauthorized)
		wantErr(t, errUnknown, payoutkit.ErrUnauthorized)
		if errWrong.Error() != errUnknown.Error() {
			t.Fatalf("messages differ: %q and %q", errWrong, errUnknown)
		}
		// The e-mail is matched case-insensitively.
		must[staff.NewSession](t)(e.signIn(" "+strings.ToUpper(nw.StaffEmail), nw.StaffPassword))
	})

	t.Run("Throttle", func(t *testing.T) {
		e, clock := newStaffEnv(t, open)
		nw := e.workspace()
		for i := range staff.DefaultSignInMaxFailures {
			_, err := e.signIn(nw.StaffEmail, "wrong password")
			if !errors.Is(err, payoutkit.ErrUnauthorized) {
				t.Fatalf("failure %d: %v", i+1, err)
			}
			clock.Add(time.Minute)
		}
		_, err := e.signIn(nw.StaffEmail, nw.StaffPassword)
		locked, ok := errors.AsType[*staff.SignInLockedError](err)
		if !ok {
			t.Fatalf("sign-in after %d failures = %v; want a SignInLockedError", staff.DefaultSignInMaxFailures, err)
		}
		if want := staff.DefaultSignInWindow - 5*time.Minute; locked.RetryAfter != want {
			t.Fatalf("RetryAfter = %v; want %v", locked.RetryAfter, want)
		}
		// Another e-mail is not locked.
		other := e.workspace()
		must[staff.NewSession](t)(e.signIn(other.StaffEmail, other.StaffPassword))
		// The window passes; the right password works and clears the count.
		clock.Add(locked.RetryAfter)
		must[staff.NewSession](t)(e.signIn(nw.StaffEmail, nw.StaffPassword))
		f := must[payoutkit.SignInFailures](t)(e.store.SignInFailures(e.ctx, nw.StaffEmail))
		if f.Count != 0 {
			t.Fatalf("failures after a sign-in = %+v", f)
		}
	})

	t.Run("ThrottleWindowRestarts", func(t *testing.T) {
		e, clock := newStaffEnv(t, open)
		const email = "someone@example.com"
		window := 15 * time.Minute
		f := must[payoutkit.SignInFailures](t)(e.store.RecordSignInFailure(e.ctx, email, clock.Now(), window))
		start := f.WindowStart
		clock.Add(window - time.Second)
		f = must[payoutkit.SignInFailures](t)(e.store.RecordSignInFailure(e.ctx, email, clock.Now(), window))
		if f.Count != 2 || !f.WindowStart.Equal(start) {
			t.Fatalf("second failure in the window = %+v", f)
		}
		clock.Add(time.Second)
		f = must[payoutkit.SignInFailures](t)(e.store.RecordSignInFailure(e.ctx, email, clock.Now(), window))
		if f.Count != 1 || !f.WindowStart.Equal(clock.Now()) {
			t.Fatalf("failure after the window = %+v", f)
		}
		got := must[payoutkit.SignInFailures](t)(e.store.SignInFailures(e.ctx, email))
		if got.Count != 1 || !got.WindowStart.Equal(clock.Now()) {
			t.Fatalf("SignInFailures = %+v", got)
		}
		if f := must[payoutkit.SignInFailures](t)(e.store.SignInFailures(e.ctx, "nobody@example.com")); f.Count != 0 {
			t.Fatalf("an unknown e-mail has failures: %+v", f)
		}
	})

	t.Run("ConcurrentFailuresAllCount", func(t *testing.T) {
		e, clock := newStaffEnv(t, open)
		const email = "racer@example.com"
		var wg sync.WaitGroup
		var errs atomic.Int32
		for range 20 {
			wg.Go(func() {
				if _, err := e.store.RecordSignInFailure(e.ctx, email, clock.Now(), time.Hour); err != nil {
					errs.Add(1)
				}
			})
		}
		wg.Wait()
		if f := must[payoutkit.SignInFailures](t)(e.store.SignInFailures(e.ctx, email)); f.Count != 20 || errs.Load() != 0 {
			t.Fatalf("after 20 concurrent failures: %+v, %d errors", f, errs.Load())
		}
	})

	t.Run("AddRemoveStaff", func(t *testing.T) {
		e, _ := newStaffEnv(t, open)
		nw := e.workspace()
		other := e.workspace()
		added := must[staff.NewUser](t)(e.team.AddUser(e.ctx, nw.Workspace.ID, "Ops@Example.com", payoutkit.RoleViewer, payoutkit.ActorCLI))
		if added.Email != "ops@example.com" || len(added.Password) < 12 {
			t.Fatalf("AddStaff = %+v", added)
		}
		_, err := e.team.AddUser(e.ctx, other.Workspace.ID, "ops@example.com", payoutkit.RoleViewer, payoutkit.ActorCLI)
		wantErr(t, err, payoutkit.ErrInvalidInput) // e-mails are unique across workspaces
		_, err = e.team.AddUser(e.ctx, nw.Workspace.ID, "not an e-mail", payoutkit.RoleViewer, payoutkit.ActorCLI)
		wantErr(t, err, payoutkit.ErrInvalidInput)
		_, err = e.team.AddUser(e.ctx, "ws_missing", "x@example.com", payoutkit.RoleViewer, payoutkit.ActorCLI)
		wantErr(t, err, payoutkit.ErrNotFound)

		s1 := must[staff.NewSession](t)(e.signIn(added.Email, added.Password))
		s2 := must[staff.NewSession](t)(e.signIn(added.Email, added.Password))
		first := must[staff.NewSession](t)(e.signIn(nw.StaffEmail, nw.StaffPassword))

		// Another workspace cannot remove them.
		if n := must[int](t)(e.team.RemoveUser(e.ctx, other.Workspace.ID, added.Email, payoutkit.ActorCLI)); n != 0 {
			t.Fatalf("removed %d staff of another workspace", n)
		}
		if n := must[int](t)(e.team.RemoveUser(e.ctx, nw.Workspace.ID, "OPS@example.com", payoutkit.ActorCLI)); n != 1 {
			t.Fatalf("RemoveStaff = %d; want 1", n)
		}
		for _, s := range []staff.NewSession{s1, s2} {
			_, err := e.team.Session(e.ctx, s.Token)
			wantErr(t, err, payoutkit.ErrUnauthorized)
		}
		must[payoutkit.StaffSession](t)(e.team.Session(e.ctx, first.Token))
		_, err = e.signIn(added.Email, added.Password)
		wantErr(t, err, payoutkit.ErrUnauthorized)
		if n := must[int](t)(e.team.RemoveUser(e.ctx, nw.Workspace.ID, added.Email, payoutkit.ActorCLI)); n != 0 {
			t.Fatalf("removing twice = %d", n)
		}
	})

	t.Run("ChangePassword", func(t *testing.T) {
		e, _ := newStaffEnv(t, open)
		nw := e.workspace()
		here := must[staff.NewSession](t)(e.signIn(nw.StaffEmail, nw.StaffPassword))
		elsewhere := must[staff.NewSession](t)(e.signIn(nw.StaffEmail, nw.StaffPassword))

		err := e.team.ChangePassword(e.ctx, here.Session, "not the password", "a new long password")
		wantErr(t, err, payoutkit.ErrInvalidInput)
		err = e.team.ChangePassword(e.ctx, here.Session, nw.StaffPassword, "short")
		wantErr(t, err, payoutkit.ErrInvalidInput)
		must[payoutkit.StaffSession](t)(e.team.Session(e.ctx, elsewhere.Token)) // nothing changed yet

		noErr(t, e.team.ChangePassword(e.ctx, here.Session, nw.StaffPassword, "a new long password"))
		must[payoutkit.StaffSession](t)(e.team.Session(e.ctx, here.Token))
		_, err = e.team.Session(e.ctx, elsewhere.Token)
		wantErr(t, err, payoutkit.ErrUnauthorized)
		_, err = e.signIn(nw.StaffEmail, nw.StaffPassword)
		wantErr(t, err, payoutkit.ErrUnauthorized)
		must[staff.NewSession](t)(e.signIn(nw.StaffEmail, "a new long password"))
	})
}
