package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
)

// newClockEnv is newEnv with an engine on a clock the test moves, starting
// at a quarter past an hour, so that windows start inside an hour.
func newClockEnv(t *testing.T, open Open) (*env, *clock) {
	t.Helper()
	store := open(t)
	t.Cleanup(func() { store.Close() })
	c := &clock{t: time.Date(2026, 3, 1, 10, 15, 0, 0, time.UTC)}
	eng, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Now: c.now})
	if err != nil {
		t.Fatalf("payoutkit.New: %v", err)
	}
	return &env{t: t, ctx: t.Context(), store: store, eng: eng}, c
}

func (e *env) policy(ws string, patch payoutkit.PolicyPatch) payoutkit.PayoutPolicy {
	e.t.Helper()
	p, err := e.eng.SetPayoutPolicy(e.ctx, ws, patch, payoutkit.ActorCLI)
	if err != nil {
		e.t.Fatalf("SetPayoutPolicy: %v", err)
	}
	return p
}

func limit(s string) *payoutkit.Limit {
	if s == "" {
		return &payoutkit.Limit{}
	}
	a, err := payoutkit.ParseAmount(s)
	if err != nil {
		panic(err)
	}
	l := payoutkit.LimitOf(a)
	return &l
}

// wantRefusal fails unless err is target with exactly the message.
func wantRefusal(t *testing.T, err, target error, message string) {
	t.Helper()
	if !errors.Is(err, target) || err.Error() != message {
		t.Fatalf("err = %v; want %v %q", err, target, message)
	}
}

func testControls(t *testing.T, open Open) {
	t.Run("Policy", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		p := must[payoutkit.PayoutPolicy](t)(e.eng.PayoutPolicy(e.ctx, ws))
		if p != payoutkit.DefaultPayoutPolicy() || p.Controls() {
			t.Fatalf("new workspace's policy = %+v", p)
		}
		on, week := true, 7*24*time.Hour
		p = e.policy(ws, payoutkit.PolicyPatch{MaxPayout: limit("500"), DailyLimit: limit("1000"), AddressAllowlist: &on, CoolingOff: &week})
		want := `{"max_payout":"500.00","daily_limit":"1000.00","approval_over":null,"address_allowlist":true,"cooling_off":"168h0m0s"}`
		if b := string(must[[]byte](t)(p.MarshalJSON())); b != want {
			t.Fatalf("policy = %s; want %s", b, want)
		}
		p = e.policy(ws, payoutkit.PolicyPatch{MaxPayout: limit(""), ApprovalOver: limit("250")})
		want = `{"max_payout":null,"daily_limit":"1000.00","approval_over":"250.00","address_allowlist":true,"cooling_off":"168h0m0s"}`
		if b := string(must[[]byte](t)(p.MarshalJSON())); b != want {
			t.Fatalf("policy after the patch = %s; want %s", b, want)
		}
		if again := must[payoutkit.PayoutPolicy](t)(e.eng.PayoutPolicy(e.ctx, ws)); again != p {
			t.Fatalf("stored policy = %+v; want %+v", again, p)
		}
		_, err := e.eng.SetPayoutPolicy(e.ctx, ws, payoutkit.PolicyPatch{MaxPayout: &payoutkit.Limit{Set: true}}, payoutkit.ActorCLI)
		wantErr(t, err, payoutkit.ErrInvalidInput)
		_, err = e.eng.PayoutPolicy(e.ctx, "ws_unknown")
		wantErr(t, err, payoutkit.ErrNotFound)
		log := must[payoutkit.Page[payoutkit.SecurityLogEntry]](t)(e.eng.SecurityLog(e.ctx, ws, payoutkit.PageRequest{}))
		if len(log.Items) != 2 || log.Items[0].Action != payoutkit.ActionPolicyChanged || log.Items[0].Actor != "cli" ||
			log.Items[0].Details["max_payout"] != "null" || log.Items[0].Details["approval_over"] != "250.00" ||
			log.Items[1].Details["daily_limit"] != "1000.00" {
			t.Fatalf("security log = %+v", log.Items)
		}
	})

	t.Run("MaxPayout", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "1000.00")
		e.policy(ws, payoutkit.PolicyPatch{MaxPayout: limit("500")})
		_, _, err := e.payout(ws, "po-big", "500.01")
		wantRefusal(t, err, payoutkit.ErrPayoutLimit, "amount exceeds the payout limit of 500.00")
		wantErr(t, err, payoutkit.ErrInvalidInput)
		_, err = e.eng.Payout(e.ctx, ws, "po-big")
		wantErr(t, err, payoutkit.ErrNotFound)
		e.wantBalance(ws, "1000.00", "0.00")
		noErr(t, err3(e.payout(ws, "po-ok", "500.00")))
		e.wantBalance(ws, "500.00", "500.00")
	})

	t.Run("ReplayBeforePolicy", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "1000.00")
		first := must[payoutkit.Payout](t)(created(e.payout(ws, "po-1", "600.00")))
		e.policy(ws, payoutkit.PolicyPatch{MaxPayout: limit("100"), DailyLimit: limit("100")})
		again, replayed, err := e.payout(ws, "po-1", "600.00")
		if err != nil || !replayed || again.PayoutID != first.PayoutID {
			t.Fatalf("replay = %v, replayed %v; want the stored payout", err, replayed)
		}
		_, _, err = e.payout(ws, "po-1", "601.00")
		wantErr(t, err, payoutkit.ErrConflict)
	})

	t.Run("DailyLimit", func(t *testing.T) {
		e, c := newClockEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "5000.00")
		t0 := c.now()
		noErr(t, err3(e.payout(ws, "po-before", "400.00"))) // before the limit: it counts too
		e.policy(ws, payoutkit.PolicyPatch{DailyLimit: limit("1000")})
		c.set(t0.Add(10 * time.Minute))
		noErr(t, err3(e.payout(ws, "po-2", "400.00")))
		c.set(t0.Add(3 * time.Hour))
		_, _, err := e.payout(ws, "po-3", "300.00")
		wantRefusal(t, err, payoutkit.ErrPayoutLimit, "amount exceeds the 24-hour payout limit of 1000.00 (200.00 left)")
		e.wantBalance(ws, "4200.00", "800.00")
		// A failed payout frees its share.
		noErr(t, err2(e.eng.FailPayout(e.ctx, ws, "po-2", "rail down")))
		noErr(t, err3(e.payout(ws, "po-3", "300.00")))
		_, _, err = e.payout(ws, "po-4", "300.01")
		wantRefusal(t, err, payoutkit.ErrPayoutLimit, "amount exceeds the 24-hour payout limit of 1000.00 (300.00 left)")
		// The window is exactly the last 24 hours: po-before still counts
		// a microsecond before its 24 hours are up, and not at that moment.
		c.set(t0.Add(payoutkit.DailyWindow - time.Microsecond))
		_, _, err = e.payout(ws, "po-4", "300.01")
		wantErr(t, err, payoutkit.ErrPayoutLimit)
		c.set(t0.Add(payoutkit.DailyWindow))
		noErr(t, err3(e.payout(ws, "po-4", "300.01")))
		// po-before, already out of the window, fails: the window keeps
		// what it holds (po-3 and po-4).
		noErr(t, err2(e.eng.FailPayout(e.ctx, ws, "po-before", "")))
		_, _, err = e.payout(ws, "po-5", "400.00")
		wantRefusal(t, err, payoutkit.ErrPayoutLimit, "amount exceeds the 24-hour payout limit of 1000.00 (399.99 left)")
		// Later in the same hour, with po-2 (failed) out of the window.
		c.set(t0.Add(payoutkit.DailyWindow + 20*time.Minute))
		noErr(t, err3(e.payout(ws, "po-5", "399.99")))
		// A day after everything, the window is empty.
		c.set(t0.Add(3 * payoutkit.DailyWindow))
		noErr(t, err3(e.payout(ws, "po-6", "1000.00")))
		// Cleared, the limit stops nothing.
		e.policy(ws, payoutkit.PolicyPatch{DailyLimit: limit("")})
		noErr(t, err3(e.payout(ws, "po-7", "1000.00")))
		e.audit(ws)
	})

	t.Run("AddressAllowlist", func(t *testing.T) {
		e, c := newClockEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "1000.00")
		on, hour := true, time.Hour
		e.policy(ws, payoutkit.PolicyPatch{AddressAllowlist: &on, CoolingOff: &hour})
		_, _, err := e.payout(ws, "po-1", "10.00")
		wantRefusal(t, err, payoutkit.ErrForbidden, "address is not in the allowlist")
		_, err = e.eng.AddAddress(e.ctx, ws, "TRON", TronAddress[:33]+"u", "", payoutkit.ActorCLI)
		wantErr(t, err, payoutkit.ErrInvalidInput)
		_, err = e.eng.AddAddress(e.ctx, ws, "NOPE", TronAddress, "", payoutkit.ActorCLI)
		wantErr(t, err, payoutkit.ErrInvalidInput)
		added := must[payoutkit.AddressEntry](t)(e.eng.AddAddress(e.ctx, ws, "tron", TronAddress, "treasury", payoutkit.StaffActor("ops@acme.test", "192.0.2.7")))
		if added.Network != "TRON" || !added.UsableFrom.Equal(c.now().Add(time.Hour)) || added.Label != "treasury" {
			t.Fatalf("added = %+v", added)
		}
		_, err = e.eng.AddAddress(e.ctx, ws, "TRON", TronAddress, "again", payoutkit.ActorCLI)
		wantErr(t, err, payoutkit.ErrConflict)
		// A later cooling-off does not move the entry's usable_from.
		day := 24 * time.Hour
		e.policy(ws, payoutkit.PolicyPatch{CoolingOff: &day})
		_, _, err = e.payout(ws, "po-1", "10.00")
		wantRefusal(t, err, payoutkit.ErrForbidden, "address is allowlisted but usable only from "+added.UsableFrom.UTC().Format(time.RFC3339))
		e.wantBalance(ws, "1000.00", "0.00")
		c.set(added.UsableFrom)
		noErr(t, err3(e.payout(ws, "po-1", "10.00")))

		// EVM addresses are one address in any case.
		const eth = "0x52908400098527886E0F7030069857D2E4169EE7"
		eth1 := must[payoutkit.AddressEntry](t)(e.eng.AddAddress(e.ctx, ws, "ETH", strings.ToLower(eth), "", payoutkit.ActorCLI))
		_, err = e.eng.AddAddress(e.ctx, ws, "ETH", eth, "", payoutkit.ActorCLI)
		wantErr(t, err, payoutkit.ErrConflict)
		c.set(eth1.UsableFrom)
		req := payoutRequest("po-eth", "10.00")
		req.Asset, req.Network, req.Address = "USDT", "ETH", eth
		noErr(t, err3(e.eng.CreatePayout(e.ctx, ws, req)))

		book := must[[]payoutkit.AddressEntry](t)(e.eng.Addresses(e.ctx, ws))
		if len(book) != 2 || book[0].Address != TronAddress || book[1].Address != strings.ToLower(eth) {
			t.Fatalf("address book = %+v", book)
		}
		events := must[[]payoutkit.Event](t)(e.store.SubjectEvents(e.ctx, ws, "address:TRON:"+TronAddress))
		if len(events) != 1 || events[0].Type != payoutkit.EventAddressAdded || !strings.Contains(string(events[0].Body), `"label":"treasury"`) {
			t.Fatalf("address.added events = %+v", events)
		}

		if n := must[int](t)(e.eng.RemoveAddress(e.ctx, ws, "TRON", TronAddress, payoutkit.ActorCLI)); n != 1 {
			t.Fatalf("removed %d; want 1", n)
		}
		if n := must[int](t)(e.eng.RemoveAddress(e.ctx, ws, "TRON", TronAddress, payoutkit.ActorCLI)); n != 0 {
			t.Fatalf("removed %d again; want 0", n)
		}
		_, _, err = e.payout(ws, "po-2", "10.00")
		wantRefusal(t, err, payoutkit.ErrForbidden, "address is not in the allowlist")

		log := must[payoutkit.Page[payoutkit.SecurityLogEntry]](t)(e.eng.SecurityLog(e.ctx, ws, payoutkit.PageRequest{}))
		var actions []string
		for _, l := range log.Items {
			actions = append(actions, l.Action)
		}
		want := "address.removed address.removed address.added policy.changed address.added policy.changed"
		if got := strings.Join(actions, " "); got != want {
			t.Fatalf("security log = %s; want %s", got, want)
		}
		if l := log.Items[3+1]; l.Actor != "ops@acme.test" || l.ClientAddr != "192.0.2.7" || l.Details["address"] != TronAddress {
			t.Fatalf("address.added entry = %+v", l)
		}
		// Keyset pages, newest first.
		page := must[payoutkit.Page[payoutkit.SecurityLogEntry]](t)(e.eng.SecurityLog(e.ctx, ws, payoutkit.PageRequest{Limit: 4}))
		rest := must[payoutkit.Page[payoutkit.SecurityLogEntry]](t)(e.eng.SecurityLog(e.ctx, ws, payoutkit.PageRequest{Limit: 4, Cursor: page.Next}))
		if len(page.Items) != 4 || len(rest.Items) != 2 || rest.Next != "" || rest.Items[1].Action != payoutkit.ActionPolicyChanged {
			t.Fatalf("pages = %+v / %+v", page, rest)
		}
	})

	t.Run("Approval", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "1000.00")
		e.policy(ws, payoutkit.PolicyPatch{ApprovalOver: limit("100")})
		small := must[payoutkit.Payout](t)(created(e.payout(ws, "po-small", "100.00")))
		held := must[payoutkit.Payout](t)(created(e.payout(ws, "po-held", "100.01")))
		other := must[payoutkit.Payout](t)(created(e.payout(ws, "po-reject", "200.00")))
		if small.Approval != payoutkit.ApprovalNone || held.Approval != payoutkit.ApprovalPending || other.Approval != payoutkit.ApprovalPending {
			t.Fatalf("approvals = %s, %s, %s", small.Approval, held.Approval, other.Approval)
		}
		e.wantBalance(ws, "599.99", "400.01")
		evs := must[[]payoutkit.Event](t)(e.store.SubjectEvents(e.ctx, ws, "payout:po-held"))
		if len(evs) != 1 || evs[0].Type != payoutkit.EventPayoutSubmitted || !strings.Contains(string(evs[0].Body), `"approval":"pending"`) {
			t.Fatalf("held payout's events = %+v", evs)
		}
		list := must[payoutkit.List[payoutkit.Payout]](t)(e.eng.ListPayouts(e.ctx, ws, payoutkit.ListPayoutsRequest{Approval: payoutkit.ApprovalPending}))
		if len(list.Items) != 2 || list.Items[0].PayoutID != "po-reject" || list.Items[1].PayoutID != "po-held" {
			t.Fatalf("pending list = %+v", list.Items)
		}
		// Only the payout not held is claimed for hand-off.
		now := time.Now()
		ls := must[[]payoutkit.PayoutLease](t)(e.store.ClaimPayoutHandoffs(e.ctx, "o1", now, now.Add(time.Minute), 10))
		if len(ls) != 1 || ls[0].PayoutID != "po-small" {
			t.Fatalf("claimed %+v; want po-small only", ls)
		}
		_, err := e.eng.CompletePayout(e.ctx, ws, "po-held", payoutkit.Completion{TxID: "0xabc"})
		wantErr(t, err, payoutkit.ErrConflict)
		_, err = e.eng.ApprovePayout(e.ctx, ws, "po-small", payoutkit.ActorCLI)
		wantErr(t, err, payoutkit.ErrConflict)

		approved := must[payoutkit.Payout](t)(e.eng.ApprovePayout(e.ctx, ws, "po-held", payoutkit.ActorCLI))
		if approved.Approval != payoutkit.ApprovalApproved || approved.Status != payoutkit.PayoutSubmitted {
			t.Fatalf("approved = %+v", approved)
		}
		_, err = e.eng.ApprovePayout(e.ctx, ws, "po-held", payoutkit.ActorCLI)
		wantErr(t, err, payoutkit.ErrConflict)
		ls = must[[]payoutkit.PayoutLease](t)(e.store.ClaimPayoutHandoffs(e.ctx, "o1", now, now.Add(time.Minute), 10))
		if len(ls) != 1 || ls[0].PayoutID != "po-held" {
			t.Fatalf("claimed %+v; want po-held", ls)
		}

		rejected := must[payoutkit.Payout](t)(e.eng.RejectPayout(e.ctx, ws, "po-reject", "", payoutkit.ActorCLI))
		if rejected.Status != payoutkit.PayoutFailed || rejected.Approval != payoutkit.ApprovalRejected || rejected.FailureReason != "rejected: by staff" {
			t.Fatalf("rejected = %+v", rejected)
		}
		if got := must[payoutkit.Payout](t)(e.eng.Payout(e.ctx, ws, "po-reject")); got.Approval != payoutkit.ApprovalRejected || got.Status != payoutkit.PayoutFailed {
			t.Fatalf("stored rejected payout = %+v", got)
		}
		e.wantBalance(ws, "799.99", "200.01")
		evs = must[[]payoutkit.Event](t)(e.store.SubjectEvents(e.ctx, ws, "payout:po-reject"))
		if len(evs) != 2 || evs[1].Type != payoutkit.EventPayoutFailed || !strings.Contains(string(evs[1].Body), `"failure_reason":"rejected: by staff"`) {
			t.Fatalf("rejected payout's events = %+v", evs)
		}
		ledger := must[payoutkit.Page[payoutkit.LedgerEntry]](t)(e.store.Ledger(e.ctx, ws, payoutkit.PageRequest{}))
		if l := ledger.Items[0]; l.Kind != payoutkit.LedgerPayoutRefund || l.Ref != "po-reject" || l.Amount != 20000 {
			t.Fatalf("latest ledger entry = %+v", l)
		}
		_, err = e.eng.RejectPayout(e.ctx, ws, "po-reject", "again", payoutkit.ActorCLI)
		wantErr(t, err, payoutkit.ErrConflict)
		_, err = e.eng.RejectPayout(e.ctx, ws, "po-none", "", payoutkit.ActorCLI)
		wantErr(t, err, payoutkit.ErrNotFound)

		log := must[payoutkit.Page[payoutkit.SecurityLogEntry]](t)(e.eng.SecurityLog(e.ctx, ws, payoutkit.PageRequest{}))
		if len(log.Items) != 3 || log.Items[0].Action != payoutkit.ActionPayoutRejected || log.Items[1].Action != payoutkit.ActionPayoutApproved ||
			log.Items[0].Details["payout_id"] != "po-reject" {
			t.Fatalf("security log = %+v", log.Items)
		}
	})

	t.Run("DailyWindow", func(t *testing.T) { testDailyWindow(t, open) })

	t.Run("DailyLimitRace", func(t *testing.T) {
		RaceDailyLimit(t, open(t))
	})
}

// RaceDailyLimit races 1,000 payouts of 5.00 against a daily limit of
// 1000.00 on one workspace, spread over one engine per store (stores that
// share one database, for a race across instances): exactly 200 are
// accepted, never more, and the balance stays sound. The suite runs it on one
// store; a store's own tests run it on several. It closes the stores.
func RaceDailyLimit(t *testing.T, stores ...payoutkit.Store) {
	var engines []*payoutkit.Engine
	for _, s := range stores {
		t.Cleanup(func() { s.Close() })
		eng, err := payoutkit.New(s, &payoutkit.Config{PasswordCost: bcrypt.MinCost})
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, eng)
	}
	e := &env{t: t, ctx: t.Context(), store: stores[0], eng: engines[0]}
	ws := e.workspace().Workspace.ID
	e.fund(ws, "10000.00")
	e.policy(ws, payoutkit.PolicyPatch{DailyLimit: limit("1000")})
	var mu sync.Mutex
	accepted, refused, one := 0, 0, ""
	Race(1000, func(i int) {
		id := fmt.Sprintf("po-%d", i)
		_, _, err := engines[i%len(engines)].CreatePayout(e.ctx, ws, payoutRequest(id, "5.00"))
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			accepted++
			one = id
		case errors.Is(err, payoutkit.ErrPayoutLimit):
			refused++
		default:
			t.Errorf("payout %d: %v", i, err)
		}
	})
	if accepted != 200 || refused != 800 {
		t.Fatalf("accepted %d, refused %d; want 200, 800", accepted, refused)
	}
	e.wantBalance(ws, "9000.00", "1000.00")
	// A failed payout frees its share, for exactly one more.
	if _, err := e.eng.FailPayout(e.ctx, ws, one, ""); err != nil {
		t.Fatal(err)
	}
	accepted = 0
	Race(20, func(i int) {
		_, _, err := engines[i%len(engines)].CreatePayout(e.ctx, ws, payoutRequest(fmt.Sprintf("po-again-%d", i), "5.00"))
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			accepted++
		} else if !errors.Is(err, payoutkit.ErrPayoutLimit) {
			t.Errorf("payout %d: %v", i, err)
		}
	})
	if accepted != 1 {
		t.Fatalf("accepted %d after a failure; want 1", accepted)
	}
	e.wantBalance(ws, "9000.00", "1000.00")
}

func created[A, B any](a A, _ B, err error) (A, error) { return a, err }

func err2[A any](_ A, err error) error { return err }

func err3[A, B any](_ A, _ B, err error) error { return err }

// testDailyWindow drives one workspace with a daily limit through a random
// walk of payouts, failures and clock jumps (within a second, within an
// hour, across hours, past whole days) and checks after each step that the 24-hour sum the
// store judges by is exactly the one recomputed from the payouts: a payout
// of one cent more than what is left is refused naming what is left, and
// one of exactly what is left is accepted.
func testDailyWindow(t *testing.T, open Open) {
	e, c := newClockEnv(t, open)
	ws := e.workspace().Workspace.ID
	e.fund(ws, "1000000.00")
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 8 { // payouts before the limit count too
		c.set(c.now().Add(time.Duration(rng.IntN(180)) * time.Minute))
		noErr(t, err3(e.payout(ws, fmt.Sprintf("pre-%d", i), payoutkit.Amount(100+rng.IntN(10000)).String())))
	}
	const limit = payoutkit.Amount(50000_00)
	l := payoutkit.LimitOf(limit)
	e.policy(ws, payoutkit.PolicyPatch{DailyLimit: &l})
	spent := func() payoutkit.Amount {
		var sum payoutkit.Amount
		from := c.now().Add(-payoutkit.DailyWindow)
		for p, err := range e.allPayouts(ws) {
			noErr(t, err)
			if p.Status != payoutkit.PayoutFailed && p.CreatedAt.After(from) {
				sum += p.Amount
			}
		}
		return sum
	}
	type made struct {
		id string
		at time.Time
	}
	var submitted []made
	n := 0
	for step := range 400 {
		switch r := rng.IntN(10); {
		case r < 2: // within a store's sqlcore.WindowLag, or just past it
			c.set(c.now().Add(time.Duration(rng.IntN(1500)) * time.Millisecond))
		case r < 4:
			c.set(c.now().Add(time.Duration(rng.IntN(40*60)) * time.Second))
		case r < 5:
			c.set(c.now().Add(time.Duration(rng.IntN(30)) * time.Hour))
		case r < 8 && len(submitted) > 0:
			// Mostly one that the window's edge has just passed, whose
			// hour is the window's boundary hour.
			k := rng.IntN(len(submitted))
			edge := c.now().Add(-payoutkit.DailyWindow)
			for i, s := range submitted {
				if !s.at.After(edge) && s.at.After(edge.Add(-time.Hour)) {
					k = i
				}
			}
			noErr(t, err2(e.eng.FailPayout(e.ctx, ws, submitted[k].id, "")))
			submitted = append(submitted[:k], submitted[k+1:]...)
		}
		left := limit - spent()
		n++
		_, _, err := e.payout(ws, fmt.Sprintf("over-%d", n), (left + 1).String())
		want := "amount exceeds the 24-hour payout limit of " + limit.String() + " (" + left.String() + " left)"
		if !errors.Is(err, payoutkit.ErrPayoutLimit) || err.Error() != want {
			t.Fatalf("step %d: payout of %s = %v; want %q", step, left+1, err, want)
		}
		if left == 0 {
			continue
		}
		amount := min(left, payoutkit.Amount(1+rng.IntN(20000_00)))
		if rng.IntN(4) == 0 {
			amount = left
		}
		id := fmt.Sprintf("po-%d", n)
		if err := err3(e.payout(ws, id, amount.String())); err != nil {
			t.Fatalf("step %d: payout of %s with %s left: %v", step, amount, left, err)
		}
		submitted = append(submitted, made{id, c.now()})
	}
	e.audit(ws)
}

// allPayouts lists every payout of the workspace.
func (e *env) allPayouts(ws string) func(yield func(payoutkit.Payout, error) bool) {
	return func(yield func(payoutkit.Payout, error) bool) {
		req := payoutkit.ListPayoutsRequest{Limit: payoutkit.MaxListLimit}
		for {
			page, err := e.eng.ListPayouts(e.ctx, ws, req)
			if err != nil {
				yield(payoutkit.Payout{}, err)
				return
			}
			for _, p := range page.Items {
				if !yield(p, nil) {
					return
				}
			}
			if page.NextCursor == "" {
				return
			}
			req.Cursor = page.NextCursor
		}
	}
}

// ControlsAcrossStores checks, with two stores on one database (two
// instances), that a change of a workspace's controls made through one
// takes effect on the other's next create, although that one judged the
// workspace's creates before (and may judge them from memory).
func ControlsAcrossStores(t *testing.T, a, b payoutkit.Store) {
	var engines [2]*payoutkit.Engine
	for i, s := range []payoutkit.Store{a, b} {
		t.Cleanup(func() { s.Close() })
		eng, err := payoutkit.New(s, &payoutkit.Config{PasswordCost: bcrypt.MinCost})
		if err != nil {
			t.Fatal(err)
		}
		engines[i] = eng
	}
	ea := &env{t: t, ctx: t.Context(), store: a, eng: engines[0]}
	eb := &env{t: t, ctx: t.Context(), store: b, eng: engines[1]}
	ws := ea.workspace().Workspace.ID
	ea.fund(ws, "1000.00")
	on, none := true, time.Duration(0)
	eb.policy(ws, payoutkit.PolicyPatch{AddressAllowlist: &on, CoolingOff: &none, MaxPayout: limit("100")})
	must[payoutkit.AddressEntry](t)(eb.eng.AddAddress(eb.ctx, ws, "TRON", TronAddress, "", payoutkit.ActorCLI))
	n := 0
	// twice accepts two payouts of amount on a, the second judged as the
	// first left the workspace's controls in a's memory.
	twice := func(amount string) {
		t.Helper()
		for range 2 {
			n++
			noErr(t, err3(ea.payout(ws, fmt.Sprintf("po-%d", n), amount)))
		}
	}
	refused := func(amount string, target error, message string) {
		t.Helper()
		n++
		_, _, err := ea.payout(ws, fmt.Sprintf("po-%d", n), amount)
		wantRefusal(t, err, target, message)
	}
	twice("10.00")
	eb.policy(ws, payoutkit.PolicyPatch{MaxPayout: limit("5")})
	refused("10.00", payoutkit.ErrPayoutLimit, "amount exceeds the payout limit of 5.00")
	eb.policy(ws, payoutkit.PolicyPatch{MaxPayout: limit(""), DailyLimit: limit("70")})
	twice("10.00") // 40 of 70
	refused("30.01", payoutkit.ErrPayoutLimit, "amount exceeds the 24-hour payout limit of 70.00 (30.00 left)")
	twice("10.00") // 60
	// A failure through b frees its share for a's next create.
	noErr(t, err2(eb.eng.FailPayout(eb.ctx, ws, "po-1", "")))
	twice("10.00") // 70
	refused("0.01", payoutkit.ErrPayoutLimit, "amount exceeds the 24-hour payout limit of 70.00 (0.00 left)")
	eb.policy(ws, payoutkit.PolicyPatch{DailyLimit: limit("")})
	twice("10.00")
	if removed := must[int](t)(eb.eng.RemoveAddress(eb.ctx, ws, "TRON", TronAddress, payoutkit.ActorCLI)); removed != 1 {
		t.Fatalf("removed %d; want 1", removed)
	}
	refused("10.00", payoutkit.ErrForbidden, "address is not in the allowlist")
	off := false
	eb.policy(ws, payoutkit.PolicyPatch{AddressAllowlist: &off})
	twice("200.00") // no controls at all
	ea.wantBalance(ws, "510.00", "490.00")
}
