package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
)

func testOutbox(t *testing.T, open Open) {
	t.Run("NoWebhookURLNothingAttempted", func(t *testing.T) {
		e := newEnv(t, open)
		nw, err := e.eng.CreateWorkspace(e.ctx, payoutkit.CreateWorkspaceRequest{Name: "No URL"})
		noErr(t, err)
		ws := nw.Workspace.ID
		e.fund(ws, "10.00")
		must[payoutkit.Payout](t)(first(e.payout(ws, "po-1", "4.00")))
		must[payoutkit.Payout](t)(e.eng.FailPayout(e.ctx, ws, "po-1", "bounced"))
		claim := func() []payoutkit.Event {
			return must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, "w", time.Now().Add(time.Hour), time.Now().Add(2*time.Hour), 100, nil))
		}
		// Kept as history, failed without an attempt, never claimed.
		page := must[payoutkit.Page[payoutkit.Event]](t)(e.store.Events(e.ctx, ws, payoutkit.PageRequest{}))
		if len(page.Items) != 3 {
			t.Fatalf("%d events; want 3", len(page.Items))
		}
		for _, ev := range page.Items {
			if ev.State != payoutkit.DeliveryFailed || ev.Attempts != 0 || ev.LastError != payoutkit.NoWebhookURLError || !ev.NextAttemptAt.IsZero() {
				t.Fatalf("event of a workspace without a URL: %+v", ev.EventDelivery)
			}
		}
		if got := claim(); len(got) != 0 {
			t.Fatalf("claimed %d events of a workspace without a URL", len(got))
		}
		// A URL set later does not send them; a resend does.
		must[payoutkit.Workspace](t)(e.eng.SetWebhookURL(e.ctx, ws, "https://hooks.example/late", payoutkit.ActorCLI))
		if got := claim(); len(got) != 0 {
			t.Fatalf("setting a URL sent %d older events", len(got))
		}
		noErr(t, e.eng.ResendEvent(e.ctx, ws, page.Items[2].ID))
		if got := claim(); len(got) != 1 || got[0].ID != page.Items[2].ID {
			t.Fatalf("after a resend, claimed %v", got)
		}
		// New events of the workspace are pending now.
		must[payoutkit.Payout](t)(first(e.payout(ws, "po-2", "1.00")))
		evs := must[[]payoutkit.Event](t)(e.store.SubjectEvents(e.ctx, ws, "payout:po-2"))
		if len(evs) != 1 || evs[0].State != payoutkit.DeliveryPending {
			t.Fatalf("event after the URL was set: %+v", evs)
		}
	})

	t.Run("EventsRecordedWithChanges", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "10.00")
		must[payoutkit.Payout](t)(first(e.payout(ws, "po-1", "4.00")))
		must[payoutkit.Payout](t)(e.eng.CompletePayout(e.ctx, ws, "po-1", payoutkit.Completion{TxID: "tx-1"}))
		must[payoutkit.Payout](t)(first(e.payout(ws, "po-2", "1.00")))
		must[payoutkit.Payout](t)(e.eng.FailPayout(e.ctx, ws, "po-2", "bounced"))
		// Refused requests record nothing.
		_, _, _ = e.payout(ws, "po-3", "1000.00")
		_, _ = e.eng.CompletePayout(e.ctx, ws, "po-1", payoutkit.Completion{TxID: "again"})

		page := must[payoutkit.Page[payoutkit.Event]](t)(e.store.Events(e.ctx, ws, payoutkit.PageRequest{}))
		wantTypes := []payoutkit.EventType{
			payoutkit.EventPayoutFailed, payoutkit.EventPayoutSubmitted,
			payoutkit.EventPayoutCompleted, payoutkit.EventPayoutSubmitted, payoutkit.EventOrderPaid,
		}
		if len(page.Items) != len(wantTypes) {
			t.Fatalf("%d events; want %d", len(page.Items), len(wantTypes))
		}
		for i, ev := range page.Items {
			if ev.Type != wantTypes[i] {
				t.Fatalf("event %d is %s; want %s", i, ev.Type, wantTypes[i])
			}
			var body struct {
				ID          string          `json:"id"`
				Type        string          `json:"type"`
				CreatedAt   time.Time       `json:"created_at"`
				WorkspaceID string          `json:"workspace_id"`
				Data        json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(ev.Body, &body); err != nil {
				t.Fatalf("event body %s: %v", ev.Body, err)
			}
			if body.ID != ev.ID || len(ev.ID) < 20 || ev.ID[:4] != "evt_" || body.Type != string(ev.Type) ||
				body.WorkspaceID != ws || body.CreatedAt.IsZero() || ev.State != payoutkit.DeliveryPending {
				t.Fatalf("event %+v with body %s", ev, ev.Body)
			}
			got := must[payoutkit.Event](t)(e.store.Event(e.ctx, ws, ev.ID))
			if string(got.Body) != string(ev.Body) {
				t.Fatal("Event returns other bytes than Events")
			}
		}
		var completed payoutkit.Payout
		if err := json.Unmarshal(dataOf(t, page.Items[2].Body), &completed); err != nil {
			t.Fatal(err)
		}
		if completed.PayoutID != "po-1" || completed.Status != payoutkit.PayoutCompleted || completed.TxID != "tx-1" {
			t.Fatalf("payout.completed data = %+v", completed)
		}
		_, err := e.store.Event(e.ctx, e.workspace().Workspace.ID, page.Items[0].ID)
		wantErr(t, err, payoutkit.ErrNotFound)
	})

	t.Run("ClaimOrderAndLeases", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "10.00") // order.paid
		must[payoutkit.Payout](t)(first(e.payout(ws, "po-1", "1.00")))
		must[payoutkit.Payout](t)(e.eng.CompletePayout(e.ctx, ws, "po-1", payoutkit.Completion{TxID: "tx"}))
		must[payoutkit.Payout](t)(first(e.payout(ws, "po-2", "1.00")))
		now := time.Now().Add(time.Minute)
		lease := now.Add(30 * time.Second)

		// po-1's completion waits behind its submission.
		a := must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, "A", now, lease, 10, nil))
		if got := subjects(a); got != "order.paid payout.submitted/po-1 payout.submitted/po-2" {
			t.Fatalf("first claim = %s", got)
		}
		// Leased events are not handed to another dispatcher.
		if b := must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, "B", now, lease, 10, nil)); len(b) != 0 {
			t.Fatalf("B claimed %s while A holds the lease", subjects(b))
		}
		byType := func(evs []payoutkit.Event, sub string) payoutkit.Event {
			for _, ev := range evs {
				if ev.Subject == sub && ev.Type != payoutkit.EventPayoutCompleted {
					return ev
				}
			}
			t.Fatalf("no event for %s", sub)
			return payoutkit.Event{}
		}
		sub1 := byType(a, "payout:po-1")
		// A retry scheduled later keeps po-1's completion blocked.
		retryAt := now.Add(10 * time.Second)
		noErr(t, e.store.RecordAttempt(e.ctx, "A",
			payoutkit.DeliveryAttempt{EventID: sub1.ID, Attempt: 1, At: now, StatusCode: 500, Latency: time.Millisecond, Error: "status 500", ResponseHead: "oops"},
			payoutkit.EventDelivery{State: payoutkit.DeliveryPending, Attempts: 1, NextAttemptAt: retryAt, LastError: "status 500"}))
		// Only the lease owner may record.
		wantErr(t, e.store.RecordAttempt(e.ctx, "B", payoutkit.DeliveryAttempt{EventID: byType(a, "payout:po-2").ID, Attempt: 1, At: now},
			payoutkit.EventDelivery{State: payoutkit.DeliveryDelivered, Attempts: 1}), payoutkit.ErrConflict)
		if b := must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, "B", now, lease, 10, nil)); len(b) != 0 {
			t.Fatalf("B claimed %s before the retry is due", subjects(b))
		}
		// After A's leases expire, B gets what is due, in order.
		later := lease.Add(time.Second)
		b := must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, "B", later, later.Add(time.Minute), 10, nil))
		if got := subjects(b); got != "order.paid payout.submitted/po-1 payout.submitted/po-2" {
			t.Fatalf("claim after lease expiry = %s", got)
		}
		deliver := func(owner string, ev payoutkit.Event, at time.Time) {
			t.Helper()
			if err := e.store.RecordAttempt(e.ctx, owner,
				payoutkit.DeliveryAttempt{EventID: ev.ID, Attempt: ev.Attempts + 1, At: at, StatusCode: 200, Latency: 2 * time.Millisecond, ResponseHead: "success"},
				payoutkit.EventDelivery{State: payoutkit.DeliveryDelivered, Attempts: ev.Attempts + 1}); err != nil {
				t.Fatal(err)
			}
		}
		for _, ev := range b {
			deliver("B", ev, later)
		}
		c := must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, "C", later, later.Add(time.Minute), 10, nil))
		if got := subjects(c); got != "payout.completed/po-1" {
			t.Fatalf("claim after po-1 submitted was delivered = %s", got)
		}
		// Giving up on an event also releases its subject's next event.
		noErr(t, e.store.RecordAttempt(e.ctx, "C",
			payoutkit.DeliveryAttempt{EventID: c[0].ID, Attempt: 1, At: later, Error: "connection refused"},
			payoutkit.EventDelivery{State: payoutkit.DeliveryFailed, Attempts: 1, LastError: "connection refused"}))
		if d := must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, "D", later, later.Add(time.Minute), 10, nil)); len(d) != 0 {
			t.Fatalf("nothing should be pending, claimed %s", subjects(d))
		}

		attempts := must[[]payoutkit.DeliveryAttempt](t)(e.store.DeliveryAttempts(e.ctx, ws, sub1.ID))
		if len(attempts) != 2 || attempts[0].StatusCode != 500 || attempts[0].ResponseHead != "oops" ||
			attempts[0].Latency != time.Millisecond || attempts[1].StatusCode != 200 || attempts[1].Attempt != 2 {
			t.Fatalf("attempts = %+v", attempts)
		}
		// The delivered attempt reads back whole, as a failed one does.
		delivered := attempts[1]
		if delivered.EventID != sub1.ID || !delivered.At.Equal(later.Truncate(time.Microsecond)) && !delivered.At.Equal(later) ||
			delivered.Latency != 2*time.Millisecond || delivered.ResponseHead != "success" || delivered.Error != "" {
			t.Fatalf("delivered attempt = %+v", delivered)
		}
		failed := must[payoutkit.Event](t)(e.store.Event(e.ctx, ws, c[0].ID))
		if failed.State != payoutkit.DeliveryFailed || failed.LastError != "connection refused" || failed.Attempts != 1 {
			t.Fatalf("failed event state %+v", failed.EventDelivery)
		}

		// Resending a failed event makes it due again.
		noErr(t, e.store.ResendEvent(e.ctx, ws, failed.ID, later))
		r := must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, "E", later, later.Add(time.Minute), 10, nil))
		if len(r) != 1 || r[0].ID != failed.ID || string(r[0].Body) != string(c[0].Body) {
			t.Fatalf("resend claim = %s", subjects(r))
		}
		// Resending a delivered event keeps its delivered attempt in its
		// history, before the attempts that follow.
		noErr(t, e.store.ResendEvent(e.ctx, ws, sub1.ID, later))
		if again := must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, "F", later, later.Add(time.Minute), 10, nil)); len(again) != 1 || again[0].ID != sub1.ID || again[0].Attempts != 2 {
			t.Fatalf("claim after resending a delivered event = %+v", again)
		}
		noErr(t, e.store.RecordAttempt(e.ctx, "F",
			payoutkit.DeliveryAttempt{EventID: sub1.ID, Attempt: 3, At: later, StatusCode: 502, Error: "status 502", ResponseHead: "bad gateway"},
			payoutkit.EventDelivery{State: payoutkit.DeliveryFailed, Attempts: 3, LastError: "status 502"}))
		history := must[[]payoutkit.DeliveryAttempt](t)(e.store.DeliveryAttempts(e.ctx, ws, sub1.ID))
		if len(history) != 3 || history[0].StatusCode != 500 || history[1] != delivered || history[2].StatusCode != 502 || history[2].Attempt != 3 {
			t.Fatalf("attempts after a resend = %+v; want the 500, the delivered one, the 502", history)
		}
		wantErr(t, e.store.ResendEvent(e.ctx, ws, "evt_missing", later), payoutkit.ErrNotFound)
	})

	t.Run("ClaimLimit", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "10.00")
		for i := range 5 {
			must[payoutkit.Payout](t)(first(e.payout(ws, "po-"+string(rune('a'+i)), "1.00")))
		}
		now := time.Now().Add(time.Minute)
		seen := map[string]bool{}
		for _, owner := range []string{"A", "B", "C"} {
			for _, ev := range must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, owner, now, now.Add(time.Minute), 2, nil)) {
				if seen[ev.ID] {
					t.Fatalf("%s claimed %s twice", owner, ev.ID)
				}
				seen[ev.ID] = true
			}
		}
		if len(seen) != 6 {
			t.Fatalf("claimed %d distinct events; want 6", len(seen))
		}
	})

	// A dispatcher passes over the workspaces whose share of workers is
	// busy, so that one workspace's backlog never delays another's.
	t.Run("ClaimEventsPassingOver", func(t *testing.T) {
		e := newEnv(t, open)
		claimer := e.store
		a, b := e.workspace().Workspace.ID, e.workspace().Workspace.ID
		e.fund(a, "10.00")
		for i := range 3 {
			must[payoutkit.Payout](t)(first(e.payout(a, "po-"+string(rune('a'+i)), "1.00")))
		}
		e.fund(b, "10.00") // after all of a's events
		now := time.Now().Add(time.Minute)
		got := must[[]payoutkit.Event](t)(claimer.ClaimEvents(e.ctx, "A", now, now.Add(time.Minute), 2, []string{a}))
		if len(got) != 1 || got[0].WorkspaceID != b || got[0].Type != payoutkit.EventOrderPaid {
			t.Fatalf("claim passing over %s = %s; want b's order.paid alone", a, subjects(got))
		}
		got = must[[]payoutkit.Event](t)(claimer.ClaimEvents(e.ctx, "A", now, now.Add(time.Minute), 10, nil))
		if len(got) != 4 {
			t.Fatalf("claim passing over nothing = %s; want a's 4 events", subjects(got))
		}
		for _, ev := range got {
			if ev.WorkspaceID != a {
				t.Fatalf("claimed %s of another workspace", ev.ID)
			}
		}
	})
}

// testWork checks SubscribeWork: the engine's loops in this process hear
// of committed work at once instead of at their next poll.
func testWork(t *testing.T, open Open) {
	e := newEnv(t, open)
	nw, err := e.eng.CreateWorkspace(e.ctx, payoutkit.CreateWorkspaceRequest{Name: "No URL"})
	noErr(t, err)
	ws := nw.Workspace.ID
	work, cancel := e.store.SubscribeWork()
	defer cancel()
	drain := func() {
		for {
			select {
			case <-work:
			case <-time.After(50 * time.Millisecond):
				return
			}
		}
	}
	signalled := func(what string) {
		t.Helper()
		select {
		case <-work:
		case <-time.After(5 * time.Second):
			t.Fatalf("no work signalled within 5 s of %s", what)
		}
	}
	e.fund(ws, "10.00")
	signalled("an order paid")
	drain()
	must[payoutkit.Payout](t)(first(e.payout(ws, "po-1", "4.00")))
	signalled("a payout created")
	drain()
	// The workspace has no webhook URL: its events are stored failed, and
	// a resend makes one pending again.
	page := must[payoutkit.Page[payoutkit.Event]](t)(e.store.Events(e.ctx, ws, payoutkit.PageRequest{}))
	if len(page.Items) == 0 {
		t.Fatal("no events recorded")
	}
	noErr(t, e.store.ResendEvent(e.ctx, ws, page.Items[0].ID, time.Now()))
	signalled("an event sent again")

	// A cancelled subscription does not keep the others from hearing.
	_, cancelOther := e.store.SubscribeWork()
	cancelOther()
	drain()
	must[payoutkit.Payout](t)(first(e.payout(ws, "po-2", "1.00")))
	signalled("a second payout")
}

func subjects(evs []payoutkit.Event) string {
	s := ""
	for i, ev := range evs {
		if i > 0 {
			s += " "
		}
		s += string(ev.Type)
		if ev.Type != payoutkit.EventOrderPaid {
			s += "/" + ev.Subject[len("payout:"):]
		}
	}
	return s
}

func dataOf(t *testing.T, body []byte) []byte {
	var b struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	return b.Data
}

func testHandoffs(t *testing.T, open Open) {
	e := newEnv(t, open)
	ws := e.workspace().Workspace.ID
	e.fund(ws, "10.00")
	for _, id := range []string{"po-1", "po-2", "po-3"} {
		must[payoutkit.Payout](t)(first(e.payout(ws, id, "1.00")))
	}
	must[payoutkit.Payout](t)(e.eng.CompletePayout(e.ctx, ws, "po-3", payoutkit.Completion{TxID: "tx"})) // settled: never handed over
	now := time.Now().Add(time.Minute)
	got := must[[]payoutkit.PayoutLease](t)(e.store.ClaimPayoutHandoffs(e.ctx, "A", now, now.Add(time.Minute), 10))
	if len(got) != 2 || got[0].PayoutID != "po-1" || got[1].PayoutID != "po-2" || got[0].WorkspaceID != ws ||
		got[0].Owner != "A" || got[0].Token < 1 {
		t.Fatalf("claimed %+v", got)
	}
	if again := must[[]payoutkit.PayoutLease](t)(e.store.ClaimPayoutHandoffs(e.ctx, "B", now, now.Add(time.Minute), 10)); len(again) != 0 {
		t.Fatalf("leased payouts claimed again: %+v", again)
	}
	noErr(t, e.store.MarkPayoutHandedOff(e.ctx, got[0], now))
	noErr(t, e.store.MarkPayoutHandedOff(e.ctx, got[0], now)) // again under the same claim
	later := now.Add(2 * time.Minute)
	taken := must[[]payoutkit.PayoutLease](t)(e.store.ClaimPayoutHandoffs(e.ctx, "B", later, later.Add(time.Minute), 10))
	if len(taken) != 1 || taken[0].PayoutID != "po-2" || taken[0].Owner != "B" || taken[0].Token <= got[1].Token {
		t.Fatalf("after lease expiry claimed %+v; want po-2 only, with a newer token than %d", taken, got[1].Token)
	}

	// Fencing: A's lease on po-2 ran out and B claimed it; A's late record
	// is refused, B's goes through.
	wantErr(t, e.store.MarkPayoutHandedOff(e.ctx, got[1], later), payoutkit.ErrConflict)
	forged := taken[0]
	forged.Owner = "A"
	wantErr(t, e.store.MarkPayoutHandedOff(e.ctx, forged, later), payoutkit.ErrConflict)
	noErr(t, e.store.MarkPayoutHandedOff(e.ctx, taken[0], later))
	if again := must[[]payoutkit.PayoutLease](t)(e.store.ClaimPayoutHandoffs(e.ctx, "C", later.Add(time.Hour), later.Add(2*time.Hour), 10)); len(again) != 0 {
		t.Fatalf("handed-off payouts claimed again: %+v", again)
	}
	missing := got[0]
	missing.PayoutID = "po-missing"
	wantErr(t, e.store.MarkPayoutHandedOff(e.ctx, missing, later), payoutkit.ErrNotFound)
}

// A backlog's claims come in the queue's order, and what lies behind the
// last claim (leases that ended, here) is claimed, oldest first, whether a
// store reads on from where its last full claim ended or not: by a claim
// that would otherwise come up short, and once a lease's length has passed.
func testHandoffsOldestFirst(t *testing.T, open Open) {
	e := newEnv(t, open)
	ws := e.workspace().Workspace.ID
	e.fund(ws, "10.00")
	for i := 1; i <= 5; i++ {
		must[payoutkit.Payout](t)(first(e.payout(ws, fmt.Sprintf("po-%d", i), "1.00")))
	}
	t0 := time.Now().Add(time.Minute)
	claim := func(now time.Time, lease time.Duration, limit int, want ...string) {
		t.Helper()
		ls := must[[]payoutkit.PayoutLease](t)(e.store.ClaimPayoutHandoffs(e.ctx, "A", now, now.Add(lease), limit))
		var got []string
		for _, l := range ls {
			got = append(got, l.PayoutID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("claim at +%s of %d claimed %v; want %v", now.Sub(t0), limit, got, want)
		}
	}
	claim(t0, time.Hour, 2, "po-1", "po-2")
	// po-1's and po-2's leases have ended: the claim reaches them too.
	claim(t0.Add(2*time.Hour), 10*time.Hour, 5, "po-1", "po-2", "po-3", "po-4", "po-5")
	t1 := t0.Add(24 * time.Hour) // every lease ended
	claim(t1, time.Hour, 2, "po-1", "po-2")
	claim(t1, time.Hour, 2, "po-3", "po-4")
	// A lease's length after, po-1's to po-4's leases have ended: the
	// oldest first, not po-5 after them.
	claim(t1.Add(2*time.Hour), time.Hour, 2, "po-1", "po-2")
}

func testPrune(t *testing.T, open Open) {
	e := newEnv(t, open)
	ws := e.workspace().Workspace.ID
	other := e.workspace().Workspace.ID
	e.fund(ws, "10.00")
	e.fund(other, "10.00")
	for _, id := range []string{"po-1", "po-2", "po-3"} {
		must[payoutkit.Payout](t)(first(e.payout(ws, id, "1.00")))
	}
	// Deliver every event but po-3's; fail po-2's for good.
	now := time.Now()
	claimed := must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, "w", now.Add(time.Minute), now.Add(time.Hour), 100, nil))
	if len(claimed) != 5 {
		t.Fatalf("claimed %d events; want 5", len(claimed))
	}
	var kept []string
	for _, ev := range claimed {
		next := payoutkit.EventDelivery{State: payoutkit.DeliveryDelivered, Attempts: 1}
		switch ev.Subject {
		case "payout:po-2":
			next = payoutkit.EventDelivery{State: payoutkit.DeliveryFailed, Attempts: 1, LastError: "gone"}
			kept = append(kept, ev.ID)
		case "payout:po-3":
			next = payoutkit.EventDelivery{State: payoutkit.DeliveryPending, Attempts: 1, NextAttemptAt: now.Add(time.Hour)}
			kept = append(kept, ev.ID)
		}
		noErr(t, e.store.RecordAttempt(e.ctx, "w", payoutkit.DeliveryAttempt{EventID: ev.ID, Attempt: 1, At: now, StatusCode: 200}, next))
	}
	// Nothing is old enough yet.
	if n := must[int](t)(e.store.PruneEvents(e.ctx, now.Add(-time.Hour), 100)); n != 0 {
		t.Fatalf("pruned %d events newer than the cutoff", n)
	}
	// Batches of two, across workspaces, until only failed and pending remain.
	total := 0
	for range 5 {
		n := must[int](t)(e.store.PruneEvents(e.ctx, now.Add(time.Hour), 2))
		if n > 2 {
			t.Fatalf("a batch of %d; limit 2", n)
		}
		total += n
	}
	if total != 3 {
		t.Fatalf("pruned %d events; want the 3 delivered ones", total)
	}
	var left []string
	for _, w := range []string{ws, other} {
		for _, ev := range must[payoutkit.Page[payoutkit.Event]](t)(e.store.Events(e.ctx, w, payoutkit.PageRequest{})).Items {
			left = append(left, ev.ID)
		}
	}
	slices.Sort(left)
	slices.Sort(kept)
	if !slices.Equal(left, kept) {
		t.Fatalf("events left %v; want the failed and pending ones %v", left, kept)
	}
	for _, id := range kept {
		if a := must[[]payoutkit.DeliveryAttempt](t)(e.store.DeliveryAttempts(e.ctx, ws, id)); len(a) != 1 {
			t.Fatalf("attempts of a kept event: %v", a)
		}
	}
	// Money and its history stay.
	e.wantBalance(ws, "7.00", "3.00")
	if p := must[payoutkit.Page[payoutkit.LedgerEntry]](t)(e.store.Ledger(e.ctx, ws, payoutkit.PageRequest{})); len(p.Items) != 4 {
		t.Fatalf("ledger has %d entries after pruning; want 4", len(p.Items))
	}
}

func testHealth(t *testing.T, open Open) {
	e := newEnv(t, open)
	older := e.workspace().Workspace.ID
	second := e.workspace().Workspace.ID
	if ids := must[[]string](t)(e.store.WorkspaceIDs(e.ctx)); !slices.Equal(ids, []string{older, second}) {
		t.Fatalf("WorkspaceIDs = %v; want %v, oldest first", ids, []string{older, second})
	}
	if h := must[payoutkit.OutboxHealth](t)(e.store.OutboxHealth(e.ctx)); h != (payoutkit.OutboxHealth{}) {
		t.Fatalf("health of an empty outbox: %+v", h)
	}
	e.fund(older, "10.00")
	must[payoutkit.Payout](t)(first(e.payout(older, "po-1", "1.00")))
	noURL, err := e.eng.CreateWorkspace(e.ctx, payoutkit.CreateWorkspaceRequest{Name: "No URL"})
	noErr(t, err)
	e.fund(noURL.Workspace.ID, "1.00") // recorded failed, not sent
	h := must[payoutkit.OutboxHealth](t)(e.store.OutboxHealth(e.ctx))
	evs := must[payoutkit.Page[payoutkit.Event]](t)(e.store.Events(e.ctx, older, payoutkit.PageRequest{}))
	oldest := evs.Items[len(evs.Items)-1].CreatedAt
	if h.Pending != 2 || h.Failed != 0 || h.NotSent != 1 || h.Delivered != 0 || !h.OldestPending.Equal(oldest) {
		t.Fatalf("health %+v; want 2 pending (oldest %v), 1 not sent, none failed", h, oldest)
	}
	wantHealthByState(t, e, h, older, second, noURL.Workspace.ID)
}

// testHealthNotSent holds that OutboxHealth counts each event in the field
// of its EventState: an event given up on after a receiver's refusals is
// failed, one never sent for want of a URL (recorded so, or due after the
// URL was removed) is not sent, and a resent one is pending again.
func testHealthNotSent(t *testing.T, open Open) {
	e := newEnv(t, open)
	ws := e.workspace().Workspace.ID
	e.fund(ws, "10.00")
	must[payoutkit.Payout](t)(first(e.payout(ws, "po-1", "1.00")))
	noURL, err := e.eng.CreateWorkspace(e.ctx, payoutkit.CreateWorkspaceRequest{Name: "No URL"})
	noErr(t, err)
	quiet := noURL.Workspace.ID
	e.fund(quiet, "5.00")
	must[payoutkit.Payout](t)(first(e.payout(quiet, "po-q", "1.00")))

	// ws's order.paid is refused for good; its payout.submitted comes due
	// after the URL was removed.
	now := time.Now()
	claimed := must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, "w", now.Add(time.Hour), now.Add(2*time.Hour), 10, nil))
	if got := subjects(claimed); got != "order.paid payout.submitted/po-1" {
		t.Fatalf("claimed %s", got)
	}
	for i, next := range []payoutkit.EventDelivery{
		{State: payoutkit.DeliveryFailed, Attempts: 1, LastError: "connection refused"},
		{State: payoutkit.DeliveryFailed, Attempts: 1, LastError: payoutkit.NoWebhookURLError},
	} {
		noErr(t, e.store.RecordAttempt(e.ctx, "w",
			payoutkit.DeliveryAttempt{EventID: claimed[i].ID, Attempt: 1, At: now, Error: next.LastError}, next))
	}
	h := must[payoutkit.OutboxHealth](t)(e.store.OutboxHealth(e.ctx))
	if h != (payoutkit.OutboxHealth{Failed: 1, NotSent: 3}) {
		t.Fatalf("health %+v; want 1 failed, 3 not sent", h)
	}
	wantHealthByState(t, e, h, ws, quiet)
	for ev, want := range map[string]payoutkit.EventState{claimed[0].ID: payoutkit.EventStateFailed, claimed[1].ID: payoutkit.EventStateNotSent} {
		if got := must[payoutkit.Event](t)(e.store.Event(e.ctx, ws, ev)).EventState(); got != want {
			t.Errorf("event %s is %s; want %s", ev, got, want)
		}
	}

	// A resend makes a not-sent event pending, and one delivered after a
	// URL is set counts as delivered.
	quietEvents := must[payoutkit.Page[payoutkit.Event]](t)(e.store.Events(e.ctx, quiet, payoutkit.PageRequest{}))
	resent := quietEvents.Items[0]
	must[payoutkit.Workspace](t)(e.eng.SetWebhookURL(e.ctx, quiet, "https://hooks.example/late", payoutkit.ActorCLI))
	noErr(t, e.store.ResendEvent(e.ctx, quiet, resent.ID, now))
	h = must[payoutkit.OutboxHealth](t)(e.store.OutboxHealth(e.ctx))
	if h.Pending != 1 || h.Failed != 1 || h.NotSent != 2 || h.Delivered != 0 || !h.OldestPending.Equal(resent.CreatedAt) {
		t.Fatalf("health after a resend %+v; want 1 pending (recorded %v), 1 failed, 2 not sent", h, resent.CreatedAt)
	}
	wantHealthByState(t, e, h, ws, quiet)
	again := must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, "w", now.Add(time.Hour), now.Add(2*time.Hour), 10, nil))
	if len(again) != 1 || again[0].ID != resent.ID {
		t.Fatalf("after a resend, claimed %s", subjects(again))
	}
	noErr(t, e.store.RecordAttempt(e.ctx, "w",
		payoutkit.DeliveryAttempt{EventID: resent.ID, Attempt: 1, At: now, StatusCode: 200, ResponseHead: "success"},
		payoutkit.EventDelivery{State: payoutkit.DeliveryDelivered, Attempts: 1}))
	h = must[payoutkit.OutboxHealth](t)(e.store.OutboxHealth(e.ctx))
	if h != (payoutkit.OutboxHealth{Delivered: 1, Failed: 1, NotSent: 2}) {
		t.Fatalf("health after delivering the resent event %+v; want 1 delivered, 1 failed, 2 not sent", h)
	}
	wantHealthByState(t, e, h, ws, quiet)
}

// wantHealthByState fails unless h's counts are those of the EventState of
// every event of the workspaces, which must be all the store holds.
func wantHealthByState(t *testing.T, e *env, h payoutkit.OutboxHealth, workspaces ...string) {
	t.Helper()
	var got payoutkit.OutboxHealth
	for _, ws := range workspaces {
		for _, ev := range must[payoutkit.Page[payoutkit.Event]](t)(e.store.Events(e.ctx, ws, payoutkit.PageRequest{Limit: payoutkit.MaxListLimit})).Items {
			switch ev.EventState() {
			case payoutkit.EventStatePending:
				got.Pending++
			case payoutkit.EventStateDelivered:
				got.Delivered++
			case payoutkit.EventStateFailed:
				got.Failed++
			case payoutkit.EventStateNotSent:
				got.NotSent++
			default:
				t.Fatalf("event %s in state %q", ev.ID, ev.EventState())
			}
		}
	}
	got.OldestPending = h.OldestPending
	if got != h {
		t.Fatalf("health %+v; the events' states count %+v", h, got)
	}
}

// testCreateLeased: a create leased to its engine (payoutkit.Lease) stores
// the payout's hand-off and its event claimed by the lease's owner. No claim
// takes them before the lease ends; the owner records both without a claim,
// with the first claim's fencing token; once the lease has ended, any
// engine claims what is left, with a newer token, and the owner's late
// records are refused. A held payout's hand-off and the event of a
// workspace without a webhook URL are not leased.
func testCreateLeased(t *testing.T, open Open) {
	e := newEnv(t, open)
	ws := e.workspace().Workspace.ID
	e.fund(ws, "100.00")
	now := time.Now().UTC().Truncate(time.Microsecond)
	lease := payoutkit.Lease{Owner: "A", Until: now.Add(time.Minute)}
	create := func(ws, id string, l payoutkit.Lease) (payoutkit.Payout, payoutkit.Event) {
		t.Helper()
		p := payoutkit.Payout{WorkspaceID: ws, PayoutID: id, Status: payoutkit.PayoutSubmitted, Amount: 100, Asset: "USDT", Network: "TRON",
			Address: TronAddress, PayerID: "cust-1", CreatedAt: now, UpdatedAt: now}
		ev := payoutkit.Event{ID: "evt_leased" + randomSuffix() + id, WorkspaceID: ws, Type: payoutkit.EventPayoutSubmitted,
			Subject: "payout:" + id, CreatedAt: now, EventDelivery: payoutkit.EventDelivery{State: payoutkit.DeliveryPending, NextAttemptAt: now}}
		ev = must[payoutkit.Event](t)(ev.WithPayout(p))
		stored, created, err := e.store.CreatePayout(e.ctx, p, ev, l)
		if err != nil || !created {
			t.Fatalf("CreatePayout(%s) = %v, %v", id, created, err)
		}
		return stored, ev
	}
	p1, ev1 := create(ws, "po-1", lease)
	p2, ev2 := create(ws, "po-2", lease)
	// Before the lease ends, no claim takes either: the events claimed are
	// the funding order's only.
	during := now.Add(30 * time.Second)
	if got := must[[]payoutkit.PayoutLease](t)(e.store.ClaimPayoutHandoffs(e.ctx, "B", during, during.Add(time.Minute), 10)); len(got) != 0 {
		t.Fatalf("leased payouts claimed by another: %+v", got)
	}
	for _, ev := range must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, "B", during, during.Add(time.Minute), 10, nil)) {
		if strings.HasPrefix(ev.Subject, "payout:") {
			t.Fatalf("leased event claimed by another: %+v", ev)
		}
	}
	// The owner records po-1's hand-off and delivery without a claim.
	noErr(t, e.store.MarkPayoutHandedOff(e.ctx, payoutkit.PayoutLease{Payout: p1, Owner: "A", Token: 1}, during))
	noErr(t, e.store.RecordAttempt(e.ctx, "A", payoutkit.DeliveryAttempt{EventID: ev1.ID, Attempt: 1, At: during, StatusCode: 200},
		payoutkit.EventDelivery{State: payoutkit.DeliveryDelivered, Attempts: 1}))
	// After the lease, po-2's are anyone's; A's late records are refused.
	after := lease.Until.Add(time.Second)
	got := must[[]payoutkit.PayoutLease](t)(e.store.ClaimPayoutHandoffs(e.ctx, "B", after, after.Add(time.Minute), 10))
	if len(got) != 1 || got[0].PayoutID != p2.PayoutID || got[0].Token <= 1 {
		t.Fatalf("claimed after the lease %+v; want po-2 alone, with a token above 1", got)
	}
	evs := must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, "B", after, after.Add(time.Minute), 10, nil))
	if len(evs) != 1 || evs[0].ID != ev2.ID || string(evs[0].Body) != string(ev2.Body) {
		t.Fatalf("events claimed after the lease %+v; want po-2's alone", evs)
	}
	wantErr(t, e.store.MarkPayoutHandedOff(e.ctx, payoutkit.PayoutLease{Payout: p2, Owner: "A", Token: 1}, after), payoutkit.ErrConflict)
	wantErr(t, e.store.RecordAttempt(e.ctx, "A", payoutkit.DeliveryAttempt{EventID: ev2.ID, Attempt: 1, At: after, StatusCode: 200},
		payoutkit.EventDelivery{State: payoutkit.DeliveryDelivered, Attempts: 1}), payoutkit.ErrConflict)
	noErr(t, e.store.MarkPayoutHandedOff(e.ctx, got[0], after))

	// A held payout's hand-off is not leased: once approved it is claimed
	// at once. Its event is, with the hold in its body.
	e.policy(ws, payoutkit.PolicyPatch{ApprovalOver: limit("0.50")})
	held, heldEv := create(ws, "po-held", lease)
	if held.Approval != payoutkit.ApprovalPending {
		t.Fatalf("po-held approval %q; want pending", held.Approval)
	}
	must[payoutkit.Payout](t)(e.eng.ApprovePayout(e.ctx, ws, "po-held", payoutkit.ActorCLI))
	if got := must[[]payoutkit.PayoutLease](t)(e.store.ClaimPayoutHandoffs(e.ctx, "B", during, during.Add(time.Minute), 10)); len(got) != 1 || got[0].PayoutID != "po-held" {
		t.Fatalf("approved payout claimed %+v; want po-held at once", got)
	}
	heldEv = must[payoutkit.Event](t)(heldEv.WithPayout(held))
	noErr(t, e.store.RecordAttempt(e.ctx, "A", payoutkit.DeliveryAttempt{EventID: heldEv.ID, Attempt: 1, At: during, StatusCode: 200},
		payoutkit.EventDelivery{State: payoutkit.DeliveryDelivered, Attempts: 1}))
	if evs := must[[]payoutkit.Event](t)(e.store.SubjectEvents(e.ctx, ws, "payout:po-held")); len(evs) != 1 ||
		string(evs[0].Body) != string(heldEv.Body) || evs[0].State != payoutkit.DeliveryDelivered {
		t.Fatalf("held payout's event %+v; want its body with the hold, delivered", evs)
	}

	// A workspace without a webhook URL keeps the event failed, unleased.
	nw := must[payoutkit.NewWorkspace](t)(e.eng.CreateWorkspace(e.ctx, payoutkit.CreateWorkspaceRequest{Name: "No hooks"}))
	e.fund(nw.Workspace.ID, "10.00")
	_, quiet := create(nw.Workspace.ID, "po-quiet", lease)
	stored := must[payoutkit.Event](t)(e.store.Event(e.ctx, nw.Workspace.ID, quiet.ID))
	if stored.State != payoutkit.DeliveryFailed || stored.LastError != payoutkit.NoWebhookURLError {
		t.Fatalf("event of a workspace without a URL %+v; want failed, not sent", stored.EventDelivery)
	}
	e.audit(ws)
}
