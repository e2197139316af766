package storetest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
)

// testPayoutsPerDay: PayoutsPerDay counts the workspace's payouts per UTC
// day of creation and by status, within [from, to) to the microsecond,
// leaving out other workspaces; the engine's PayoutsPerDay fills in the
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
	must[payoutkit.Payout](t)(eng.CompletePayout(e.ctx, ws, a, "tx-a"))
	must[payoutkit.Payout](t)(eng.FailPayout(e.ctx, ws, b, "no"))
	must[payoutkit.Payout](t)(eng.CompletePayout(e.ctx, ws, c, "tx-c"))
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
	if diff := cmp.Diff([]payoutkit.DayCount{{Day: day0.AddDate(0, 0, 1), Completed: 1}}, got); diff != "" {
		t.Fatalf("one microsecond's range (-want +got):\n%s", diff)
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
