package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
)

// testPayoutsPerDay: PayoutsPerDay counts the workspace's payouts per UTC
// day of creation and by status, for the whole days that [from, to)
// touches, leaving out other workspaces; the engine's PayoutsPerDay fills in the
// days without payouts.
func testPayoutsPerDay(t *testing.T, open Open) {
	e := newEnv(t, open)
	day0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var now atomic.Pointer[time.Time]
	now.Store(&day0)
	eng, err := payoutkit.New(e.store, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Now: func() time.Time { return *now.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	ws := e.workspace().Workspace.ID
	other := e.workspace().Workspace.ID
	e.fund(ws, "1000.00")
	e.fund(other, "1000.00")
	n := 0
	create := func(ws string, at time.Time) string {
		t.Helper()
		now.Store(&at)
		n++
		id := fmt.Sprintf("po-%d", n)
		must[payoutkit.Payout](t)(func() (payoutkit.Payout, error) {
			p, _, err := eng.CreatePayout(e.ctx, ws, payoutRequest(id, "1.00"))
			return p, err
		}())
		return id
	}
	us := time.Microsecond
	create(ws, day0.Add(-us))                  // the day before: outside
	a := create(ws, day0)                      // day 0's first instant
	b := create(ws, day0.Add(24*time.Hour-us)) // day 0's last
	create(ws, day0.Add(24*time.Hour))         // day 1
	c := create(ws, day0.Add(24*time.Hour+time.Hour))
	create(ws, day0.Add(3*24*time.Hour+12*time.Hour)) // day 3
	d := create(ws, day0.Add(3*24*time.Hour+13*time.Hour))
	create(ws, day0.Add(4*24*time.Hour)) // to: outside
	create(other, day0.Add(time.Hour))   // another workspace
	later := day0.Add(10 * 24 * time.Hour)
	now.Store(&later)
	must[payoutkit.Payout](t)(eng.CompletePayout(e.ctx, ws, a, payoutkit.Completion{TxID: "tx-a"}))
	must[payoutkit.Payout](t)(eng.FailPayout(e.ctx, ws, b, "no"))
	must[payoutkit.Payout](t)(eng.CompletePayout(e.ctx, ws, c, payoutkit.Completion{TxID: "tx-c"}))
	must[payoutkit.Payout](t)(eng.FailPayout(e.ctx, ws, d, "no"))

	got, err := e.store.PayoutsPerDay(e.ctx, ws, day0, day0.Add(4*24*time.Hour))
	noErr(t, err)
	want := []payoutkit.DayCount{
		{Day: day0, Completed: 1, Failed: 1},
		{Day: day0.AddDate(0, 0, 1), Completed: 1, InProgress: 1},
		{Day: day0.AddDate(0, 0, 3), Failed: 1, InProgress: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("PayoutsPerDay (-want +got):\n%s", diff)
	}
	for _, g := range got {
		if g.Day.Location() != time.UTC {
			t.Fatalf("day %v is not in UTC", g.Day)
		}
	}
	got, err = e.store.PayoutsPerDay(e.ctx, ws, day0.Add(24*time.Hour+time.Hour), day0.Add(24*time.Hour+time.Hour+us))
	noErr(t, err)
	if diff := cmp.Diff([]payoutkit.DayCount{{Day: day0.AddDate(0, 0, 1), Completed: 1, InProgress: 1}}, got); diff != "" {
		t.Fatalf("one microsecond's range counts its whole day (-want +got):\n%s", diff)
	}
	got, err = e.store.PayoutsPerDay(e.ctx, ws, day0.AddDate(1, 0, 0), day0.AddDate(1, 1, 0))
	if err != nil || len(got) != 0 {
		t.Fatalf("an empty range: %v, %v; want nothing", got, err)
	}
	_, err = e.store.PayoutsPerDay(e.ctx, "ws_missing", day0, day0.AddDate(0, 0, 1))
	wantErr(t, err, payoutkit.ErrNotFound)

	// The engine: the last 5 days up to day 4, one entry a day.
	at := day0.Add(4*24*time.Hour + 10*time.Hour)
	now.Store(&at)
	dense, err := eng.PayoutsPerDay(e.ctx, ws, 5)
	noErr(t, err)
	wantDense := []payoutkit.DayCount{
		{Day: day0, Completed: 1, Failed: 1},
		{Day: day0.AddDate(0, 0, 1), Completed: 1, InProgress: 1},
		{Day: day0.AddDate(0, 0, 2)},
		{Day: day0.AddDate(0, 0, 3), Failed: 1, InProgress: 1},
		{Day: day0.AddDate(0, 0, 4), InProgress: 1},
	}
	if diff := cmp.Diff(wantDense, dense); diff != "" {
		t.Fatalf("engine's PayoutsPerDay (-want +got):\n%s", diff)
	}
	_, err = eng.PayoutsPerDay(e.ctx, ws, 0)
	wantErr(t, err, payoutkit.ErrInvalidInput)
}

// testPayoutDayCounters: after random creates (some held for approval,
// some refused by the balance or a taken id), completions, failures,
// approvals and rejections, the day counters that PayoutsPerDay reads equal
// a count over the payouts themselves, day by day.
func testPayoutDayCounters(t *testing.T, open Open) {
	e := newEnv(t, open)
	c := &clock{}
	eng := e.clocked(c)
	ws := e.workspace().Workspace.ID
	other := e.workspace().Workspace.ID
	e.fund(ws, "500.00")
	e.fund(other, "500.00")
	e.policy(ws, payoutkit.PolicyPatch{ApprovalOver: limit("20")})
	day0 := time.Date(2026, 5, 10, 0, 0, 0, 0, time.UTC)
	rnd := rand.New(rand.NewPCG(24, 1))
	var open_ []string // submitted payouts, held or not
	held := map[string]bool{}
	for i := range 300 {
		// Creation times over 6 days, often on a day's first or last
		// microsecond.
		at := day0.Add(time.Duration(rnd.IntN(6)) * 24 * time.Hour)
		switch rnd.IntN(3) {
		case 0:
		case 1:
			at = at.Add(24*time.Hour - time.Microsecond)
		default:
			at = at.Add(time.Duration(rnd.Int64N(int64(24 * time.Hour / time.Microsecond))))
		}
		c.set(at)
		switch op := rnd.IntN(10); {
		case op < 5 || len(open_) == 0:
			n := rnd.IntN(400) // sometimes taken: the same request again
			id, amount := fmt.Sprintf("po-%d", n), fmt.Sprintf("%d.00", 1+n%30)
			if rnd.IntN(20) == 0 {
				id, amount = fmt.Sprintf("big-%d", i), "100000.00" // refused by the balance
			}
			p, replayed, err := eng.CreatePayout(e.ctx, ws, payoutRequest(id, amount))
			if errors.Is(err, payoutkit.ErrInsufficientBalance) {
				e.fund(ws, "200.00")
				continue
			}
			noErr(t, err)
			if !replayed {
				open_ = append(open_, id)
				held[id] = p.Approval == payoutkit.ApprovalPending
			}
			if i%7 == 0 {
				must[payoutkit.Payout](t)(func() (payoutkit.Payout, error) {
					p, _, err := eng.CreatePayout(e.ctx, other, payoutRequest(id, "1.00"))
					return p, err
				}())
			}
		default:
			k := rnd.IntN(len(open_))
			id := open_[k]
			open_ = append(open_[:k], open_[k+1:]...)
			switch {
			case held[id] && rnd.IntN(2) == 0:
				must[payoutkit.Payout](t)(eng.RejectPayout(e.ctx, ws, id, "", payoutkit.ActorCLI))
				continue
			case held[id]:
				must[payoutkit.Payout](t)(eng.ApprovePayout(e.ctx, ws, id, payoutkit.ActorCLI))
			}
			if rnd.IntN(2) == 0 {
				must[payoutkit.Payout](t)(eng.CompletePayout(e.ctx, ws, id, payoutkit.Completion{TxID: "tx-" + id}))
			} else {
				must[payoutkit.Payout](t)(eng.FailPayout(e.ctx, ws, id, "no"))
			}
		}
	}

	want := map[time.Time]*payoutkit.DayCount{}
	var days []time.Time
	for p, err := range e.allPayouts(ws) {
		noErr(t, err)
		day := p.CreatedAt.UTC().Truncate(24 * time.Hour)
		d := want[day]
		if d == nil {
			d = &payoutkit.DayCount{Day: day}
			want[day] = d
			days = append(days, day)
		}
		switch p.Status {
		case payoutkit.PayoutCompleted:
			d.Completed++
		case payoutkit.PayoutFailed:
			d.Failed++
		default:
			d.InProgress++
		}
	}
	slices.SortFunc(days, time.Time.Compare)
	var wantList []payoutkit.DayCount
	for _, d := range days {
		wantList = append(wantList, *want[d])
	}
	if len(wantList) < 5 {
		t.Fatalf("only %d days with payouts", len(wantList))
	}
	got, err := e.store.PayoutsPerDay(e.ctx, ws, day0.AddDate(0, 0, -1), day0.AddDate(0, 0, 8))
	noErr(t, err)
	if diff := cmp.Diff(wantList, got); diff != "" {
		t.Fatalf("day counters against a count over the payouts (-want +got):\n%s", diff)
	}
	// The audit checks the counters too: their sums against the payouts'
	// counts by state.
	a := e.audit(ws)
	var n [3]int64
	for _, d := range wantList {
		n[0], n[1], n[2] = n[0]+int64(d.InProgress), n[1]+int64(d.Completed), n[2]+int64(d.Failed)
	}
	if a.PayoutCounts != n || a.DayCounters != n {
		t.Fatalf("audit counts payouts %v and day counters %v; want %v", a.PayoutCounts, a.DayCounters, n)
	}
	a.DayCounters[2]++
	var ae *payoutkit.AuditError
	if err := a.Check(); !errors.As(err, &ae) {
		t.Fatalf("Check with a day counter off by one = %v; want an AuditError", err)
	}
}
