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

// newClockedEnv is newEnv with an engine on a clock the test moves.
func newClockedEnv(t *testing.T, open Open) (*env, *fakeClock) {
	t.Helper()
	e := newEnv(t, open)
	clock := &fakeClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	eng, err := payoutkit.New(e.store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.eng = eng
	return e, clock
}

func testStaff(t *testing.T, open Open) {
	t.Run("SessionLifecycle", func(t *testing.T) {
		e, clock := newClockedEnv(t, open)
		nw := e.workspace()
		ns, err := e.eng.SignInSession(e.ctx, nw.StaffEmail, nw.StaffPassword)
		noErr(t, err)
		if len(ns.Token) < 22 || ns.Session.WorkspaceID != nw.Workspace.ID || ns.Session.StaffEmail != nw.StaffEmail {
			t.Fatalf("session = %+v, token %q", ns.Session, ns.Token)
		}
		stored, err := e.store.StaffSession(e.ctx, ns.Session.TokenHash)
		noErr(t, err)
		if string(stored.TokenHash[:]) == ns.Token {
			t.Fatal("the store holds the token itself")
		}
		s := must[payoutkit.StaffSession](t)(e.eng.StaffSession(e.ctx, ns.Token))
		if s.WorkspaceID != nw.Workspace.ID || !s.CreatedAt.Equal(clock.Now()) {
			t.Fatalf("StaffSession = %+v", s)
		}
		_, err = e.eng.StaffSession(e.ctx, ns.Token+"x")
		wantErr(t, err, payoutkit.ErrUnauthorized)

		// Use keeps it alive past the idle timeout...
		for range 3 {
			clock.Add(payoutkit.DefaultSessionIdleTimeout - time.Minute)
			must[payoutkit.StaffSession](t)(e.eng.StaffSession(e.ctx, ns.Token))
		}
		// ...but not idleness.
		clock.Add(payoutkit.DefaultSessionIdleTimeout)
		_, err = e.eng.StaffSession(e.ctx, ns.Token)
		wantErr(t, err, payoutkit.ErrUnauthorized)
		_, err = e.store.StaffSession(e.ctx, ns.Session.TokenHash)
		wantErr(t, err, payoutkit.ErrNotFound) // an expired session is deleted

		// Sign-out ends it.
		ns = must[payoutkit.NewSession](t)(e.eng.SignInSession(e.ctx, nw.StaffEmail, nw.StaffPassword))
		noErr(t, e.eng.EndSession(e.ctx, ns.Token))
		_, err = e.eng.StaffSession(e.ctx, ns.Token)
		wantErr(t, err, payoutkit.ErrUnauthorized)
		noErr(t, e.eng.EndSession(e.ctx, ns.Token)) // twice is fine
	})

	t.Run("AbsoluteExpiry", func(t *testing.T) {
		e, clock := newClockedEnv(t, open)
		nw := e.workspace()
		ns := must[payoutkit.NewSession](t)(e.eng.SignInSession(e.ctx, nw.StaffEmail, nw.StaffPassword))
		// Used every 11 hours, it lives until 7 days after the sign-in.
		for clock.Now().Sub(ns.Session.CreatedAt) < payoutkit.DefaultSessionMaxAge-11*time.Hour {
			clock.Add(11 * time.Hour)
			must[payoutkit.StaffSession](t)(e.eng.StaffSession(e.ctx, ns.Token))
		}
		clock.Add(ns.Session.CreatedAt.Add(payoutkit.DefaultSessionMaxAge).Sub(clock.Now()) - time.Minute)
		must[payoutkit.StaffSession](t)(e.eng.StaffSession(e.ctx, ns.Token))
		clock.Add(time.Minute)
		_, err := e.eng.StaffSession(e.ctx, ns.Token)
		wantErr(t, err, payoutkit.ErrUnauthorized)
	})

	t.Run("PurgeOnSignIn", func(t *testing.T) {
		e, clock := newClockedEnv(t, open)
		nw := e.workspace()
		old := must[payoutkit.NewSession](t)(e.eng.SignInSession(e.ctx, nw.StaffEmail, nw.StaffPassword))
		clock.Add(payoutkit.DefaultSessionIdleTimeout + time.Second)
		fresh := must[payoutkit.NewSession](t)(e.eng.SignInSession(e.ctx, nw.StaffEmail, nw.StaffPassword))
		_, err := e.store.StaffSession(e.ctx, old.Session.TokenHash)
		wantErr(t, err, payoutkit.ErrNotFound)
		must[payoutkit.StaffSession](t)(e.store.StaffSession(e.ctx, fresh.Session.TokenHash))
	})

	t.Run("WrongPasswordAndUnknownEmail", func(t *testing.T) {
		e, _ := newClockedEnv(t, open)
		nw := e.workspace()
		_, errWrong := e.eng.SignInSession(e.ctx, nw.StaffEmail, nw.StaffPassword+"x")
		_, errUnknown := e.eng.SignInSession(e.ctx, "nobody@example.com", nw.StaffPassword)
		wantErr(t, errWrong, payoutkit.ErrUnauthorized)
		wantErr(t, errUnknown, payoutkit.ErrUnauthorized)
		if errWrong.Error() != errUnknown.Error() {
			t.Fatalf("messages differ: %q and %q", errWrong, errUnknown)
		}
		// The e-mail is matched case-insensitively.
		must[payoutkit.NewSession](t)(e.eng.SignInSession(e.ctx, " "+strings.ToUpper(nw.StaffEmail), nw.StaffPassword))
	})

	t.Run("Throttle", func(t *testing.T) {
		e, clock := newClockedEnv(t, open)
		nw := e.workspace()
		for i := range payoutkit.DefaultSignInMaxFailures {
			_, err := e.eng.SignInSession(e.ctx, nw.StaffEmail, "wrong password")
			if !errors.Is(err, payoutkit.ErrUnauthorized) {
				t.Fatalf("failure %d: %v", i+1, err)
			}
			clock.Add(time.Minute)
		}
		_, err := e.eng.SignInSession(e.ctx, nw.StaffEmail, nw.StaffPassword)
		locked, ok := errors.AsType[*payoutkit.SignInLockedError](err)
		if !ok {
			t.Fatalf("sign-in after %d failures = %v; want a SignInLockedError", payoutkit.DefaultSignInMaxFailures, err)
		}
		if want := payoutkit.DefaultSignInWindow - 5*time.Minute; locked.RetryAfter != want {
			t.Fatalf("RetryAfter = %v; want %v", locked.RetryAfter, want)
		}
		// Another e-mail is not locked.
		other := e.workspace()
		must[payoutkit.NewSession](t)(e.eng.SignInSession(e.ctx, other.StaffEmail, other.StaffPassword))
		// The window passes; the right password works and clears the count.
		clock.Add(locked.RetryAfter)
		must[payoutkit.NewSession](t)(e.eng.SignInSession(e.ctx, nw.StaffEmail, nw.StaffPassword))
		f := must[payoutkit.SignInFailures](t)(e.store.SignInFailures(e.ctx, nw.StaffEmail))
		if f.Count != 0 {
			t.Fatalf("failures after a sign-in = %+v", f)
		}
	})

	t.Run("ThrottleWindowRestarts", func(t *testing.T) {
		e, clock := newClockedEnv(t, open)
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
		e, clock := newClockedEnv(t, open)
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
		e, _ := newClockedEnv(t, open)
		nw := e.workspace()
		other := e.workspace()
		added := must[payoutkit.NewStaff](t)(e.eng.AddStaff(e.ctx, nw.Workspace.ID, "Ops@Example.com"))
		if added.Email != "ops@example.com" || len(added.Password) < 12 {
			t.Fatalf("AddStaff = %+v", added)
		}
		_, err := e.eng.AddStaff(e.ctx, other.Workspace.ID, "ops@example.com")
		wantErr(t, err, payoutkit.ErrInvalidInput) // e-mails are unique across workspaces
		_, err = e.eng.AddStaff(e.ctx, nw.Workspace.ID, "not an e-mail")
		wantErr(t, err, payoutkit.ErrInvalidInput)
		_, err = e.eng.AddStaff(e.ctx, "ws_missing", "x@example.com")
		wantErr(t, err, payoutkit.ErrNotFound)

		s1 := must[payoutkit.NewSession](t)(e.eng.SignInSession(e.ctx, added.Email, added.Password))
		s2 := must[payoutkit.NewSession](t)(e.eng.SignInSession(e.ctx, added.Email, added.Password))
		first := must[payoutkit.NewSession](t)(e.eng.SignInSession(e.ctx, nw.StaffEmail, nw.StaffPassword))

		// Another workspace cannot remove them.
		if n := must[int](t)(e.eng.RemoveStaff(e.ctx, other.Workspace.ID, added.Email)); n != 0 {
			t.Fatalf("removed %d staff of another workspace", n)
		}
		if n := must[int](t)(e.eng.RemoveStaff(e.ctx, nw.Workspace.ID, "OPS@example.com")); n != 1 {
			t.Fatalf("RemoveStaff = %d; want 1", n)
		}
		for _, s := range []payoutkit.NewSession{s1, s2} {
			_, err := e.eng.StaffSession(e.ctx, s.Token)
			wantErr(t, err, payoutkit.ErrUnauthorized)
		}
		must[payoutkit.StaffSession](t)(e.eng.StaffSession(e.ctx, first.Token))
		_, err = e.eng.SignInSession(e.ctx, added.Email, added.Password)
		wantErr(t, err, payoutkit.ErrUnauthorized)
		if n := must[int](t)(e.eng.RemoveStaff(e.ctx, nw.Workspace.ID, added.Email)); n != 0 {
			t.Fatalf("removing twice = %d", n)
		}
	})

	t.Run("ChangePassword", func(t *testing.T) {
		e, _ := newClockedEnv(t, open)
		nw := e.workspace()
		here := must[payoutkit.NewSession](t)(e.eng.SignInSession(e.ctx, nw.StaffEmail, nw.StaffPassword))
		elsewhere := must[payoutkit.NewSession](t)(e.eng.SignInSession(e.ctx, nw.StaffEmail, nw.StaffPassword))

		err := e.eng.ChangePassword(e.ctx, here.Session, "not the password", "a new long password")
		wantErr(t, err, payoutkit.ErrInvalidInput)
		err = e.eng.ChangePassword(e.ctx, here.Session, nw.StaffPassword, "short")
		wantErr(t, err, payoutkit.ErrInvalidInput)
		must[payoutkit.StaffSession](t)(e.eng.StaffSession(e.ctx, elsewhere.Token)) // nothing changed yet

		noErr(t, e.eng.ChangePassword(e.ctx, here.Session, nw.StaffPassword, "a new long password"))
		must[payoutkit.StaffSession](t)(e.eng.StaffSession(e.ctx, here.Token))
		_, err = e.eng.StaffSession(e.ctx, elsewhere.Token)
		wantErr(t, err, payoutkit.ErrUnauthorized)
		_, err = e.eng.SignInSession(e.ctx, nw.StaffEmail, nw.StaffPassword)
		wantErr(t, err, payoutkit.ErrUnauthorized)
		must[payoutkit.NewSession](t)(e.eng.SignInSession(e.ctx, nw.StaffEmail, "a new long password"))
	})
}
