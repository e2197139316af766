package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
)

// batchRequest is a batch of USDT on TRON payouts, id:amount each.
func batchRequest(batchID string, allOrNothing bool, items ...string) payoutkit.CreatePayoutBatchRequest {
	req := payoutkit.CreatePayoutBatchRequest{BatchID: batchID, AllOrNothing: allOrNothing}
	for _, it := range items {
		var id, amount string
		for i := range it {
			if it[i] == ':' {
				id, amount = it[:i], it[i+1:]
			}
		}
		req.Payouts = append(req.Payouts, payoutRequest(id, amount))
	}
	return req
}

// codes are a batch's result codes in order.
func codes(b payoutkit.PayoutBatch) []payoutkit.Code {
	out := make([]payoutkit.Code, len(b.Results))
	for i, r := range b.Results {
		out[i] = r.Code
	}
	return out
}

func wantCodes(t *testing.T, b payoutkit.PayoutBatch, want ...payoutkit.Code) {
	t.Helper()
	if got := codes(b); !reflect.DeepEqual(got, want) {
		t.Fatalf("result codes = %v; want %v (%+v)", got, want, b.Results)
	}
}

func testBatches(t *testing.T, open Open) {
	t.Run("AppliedInOrder", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "100.00")
		b, replayed, err := e.eng.CreatePayoutBatch(e.ctx, ws, batchRequest("b1", false, "p1:30.00", "p2:50.00", "p3:40.00", "p4:20.00"))
		noErr(t, err)
		if replayed {
			t.Fatal("a new batch answered as replayed")
		}
		wantCodes(t, b, 0, 0, payoutkit.CodeInvalidInput, 0)
		if r := b.Results[2]; r.Message != "Insufficient available balance" || r.Payout != nil {
			t.Errorf("refused item = %q %v; want the overdraft's message and no payout", r.Message, r.Payout)
		}
		if b.Accepted != 3 || b.Refused != 1 || b.AcceptedAmount.String() != "100.00" {
			t.Errorf("counts = %d accepted, %d refused, %s; want 3, 1, 100.00", b.Accepted, b.Refused, b.AcceptedAmount)
		}
		e.wantBalance(ws, "0.00", "100.00")
		p := must[payoutkit.Payout](t)(e.eng.Payout(e.ctx, ws, "p2"))
		if p.BatchID != "b1" || p.Status != payoutkit.PayoutSubmitted || !p.CreatedAt.Equal(b.CreatedAt) {
			t.Errorf("payout p2 = batch %q, %s, created %v; want b1, submitted, the batch's time %v", p.BatchID, p.Status, p.CreatedAt, b.CreatedAt)
		}
		if _, err := e.eng.Payout(e.ctx, ws, "p3"); !errors.Is(err, payoutkit.ErrNotFound) {
			t.Errorf("refused item's payout: err = %v; want ErrNotFound", err)
		}
		for _, id := range []string{"p1", "p2", "p4"} {
			evs := must[[]payoutkit.Event](t)(e.store.SubjectEvents(e.ctx, ws, "payout:"+id))
			if len(evs) != 1 || evs[0].Type != payoutkit.EventPayoutSubmitted {
				t.Errorf("events of %s = %+v; want one payout.submitted", id, evs)
			}
		}
		got := must[payoutkit.PayoutBatch](t)(e.eng.PayoutBatch(e.ctx, ws, "b1"))
		if !sameJSON(t, got, b) {
			t.Errorf("PayoutBatch =\n%+v\nwant\n%+v", got, b)
		}
		list := must[payoutkit.Page[payoutkit.PayoutBatch]](t)(e.eng.PayoutBatches(e.ctx, ws, payoutkit.PageRequest{}))
		if len(list.Items) != 1 || list.Items[0].BatchID != "b1" || list.Items[0].Accepted != 3 || list.Items[0].Results != nil {
			t.Errorf("PayoutBatches = %+v; want b1 with its counts", list.Items)
		}
		// The loops take a batch's payouts as any other.
		leases := must[[]payoutkit.PayoutLease](t)(e.store.ClaimPayoutHandoffs(e.ctx, "test", time.Now(), time.Now().Add(time.Minute), 10))
		if len(leases) != 3 {
			t.Errorf("%d hand-offs claimed; want the batch's 3 payouts", len(leases))
		}
		if _, err := e.eng.PayoutBatch(e.ctx, ws, "nope"); !errors.Is(err, payoutkit.ErrNotFound) {
			t.Errorf("unknown batch: err = %v; want ErrNotFound", err)
		}
		other := e.workspace().Workspace.ID
		if _, err := e.eng.PayoutBatch(e.ctx, other, "b1"); !errors.Is(err, payoutkit.ErrNotFound) {
			t.Errorf("another workspace's batch: err = %v; want ErrNotFound", err)
		}
	})

	t.Run("Replay", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "100.00")
		req := batchRequest("b1", false, "p1:10.00", "p2:500.00")
		initial := must[payoutkit.PayoutBatch](t)(first(e.eng.CreatePayoutBatch(e.ctx, ws, req)))
		again, replayed, err := e.eng.CreatePayoutBatch(e.ctx, ws, req)
		noErr(t, err)
		if !replayed || !sameJSON(t, again, initial) {
			t.Errorf("replay = %v, %+v; want replayed, the first answer", replayed, again)
		}
		for name, other := range map[string]payoutkit.CreatePayoutBatchRequest{
			"another amount": batchRequest("b1", false, "p1:10.00", "p2:500.01"),
			"another order":  batchRequest("b1", false, "p2:500.00", "p1:10.00"),
			"all or nothing": batchRequest("b1", true, "p1:10.00", "p2:500.00"),
			"fewer items":    batchRequest("b1", false, "p1:10.00"),
		} {
			if _, _, err := e.eng.CreatePayoutBatch(e.ctx, ws, other); !errors.Is(err, payoutkit.ErrConflict) {
				t.Errorf("%s: err = %v; want ErrConflict", name, err)
			}
		}
		e.wantBalance(ws, "90.00", "10.00")

		// Items replay as single creates do, and are not new payouts.
		b := must[payoutkit.PayoutBatch](t)(first(e.eng.CreatePayoutBatch(e.ctx, ws, batchRequest("b2", false, "p1:10.00", "p3:5.00", "p1x:1.00"))))
		wantCodes(t, b, 0, 0, 0)
		if b.Accepted != 3 || b.AcceptedAmount.String() != "6.00" || b.Results[0].Created || b.Results[0].Payout.PayoutID != "p1" {
			t.Errorf("batch with a replayed item = %d accepted, %s; want 3, 6.00 and p1 replayed", b.Accepted, b.AcceptedAmount)
		}
		b = must[payoutkit.PayoutBatch](t)(first(e.eng.CreatePayoutBatch(e.ctx, ws, batchRequest("b3", false, "p1:11.00"))))
		wantCodes(t, b, payoutkit.CodeConflict)
		e.wantBalance(ws, "84.00", "16.00")
		// Batch ids and payout ids are separate namespaces.
		if _, _, err := e.eng.CreatePayoutBatch(e.ctx, ws, batchRequest("p1", false, "q1:1.00")); err != nil {
			t.Errorf("a batch named like a payout: %v", err)
		}
	})

	t.Run("AllOrNothing", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "50.00")
		req := batchRequest("b1", true, "p1:30.00", "p2:30.00")
		_, _, err := e.eng.CreatePayoutBatch(e.ctx, ws, req)
		wantRefusal(t, err, payoutkit.ErrInsufficientBalance, "payouts[1]: Insufficient available balance")
		e.wantBalance(ws, "50.00", "0.00")
		if _, err := e.eng.Payout(e.ctx, ws, "p1"); !errors.Is(err, payoutkit.ErrNotFound) {
			t.Errorf("payout of a refused batch: err = %v; want ErrNotFound", err)
		}
		if _, err := e.eng.PayoutBatch(e.ctx, ws, "b1"); !errors.Is(err, payoutkit.ErrNotFound) {
			t.Errorf("refused batch: err = %v; want no record", err)
		}
		e.fund(ws, "10.00")
		b, replayed, err := e.eng.CreatePayoutBatch(e.ctx, ws, req)
		noErr(t, err)
		if replayed || b.Accepted != 2 {
			t.Errorf("resent batch: replayed %v, %d accepted; want judged afresh, 2", replayed, b.Accepted)
		}
		e.wantBalance(ws, "0.00", "60.00")
	})

	t.Run("Policy", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "1000.00")
		must[payoutkit.Payout](t)(first(e.payout(ws, "before", "10.00")))
		e.policy(ws, payoutkit.PolicyPatch{MaxPayout: limit("300.00"), DailyLimit: limit("100.00"), ApprovalOver: limit("25.00")})
		b := must[payoutkit.PayoutBatch](t)(first(e.eng.CreatePayoutBatch(e.ctx, ws,
			batchRequest("b1", false, "before:10.00", "p1:301.00", "p2:50.00", "p3:41.00", "p4:40.00", "p5:1.00"))))
		// before is a replay: not counted again. p2 (50) is held; p3 would
		// take the 24 hours to 101; p4 takes them to 100.
		wantCodes(t, b, 0, payoutkit.CodeInvalidInput, 0, payoutkit.CodeInvalidInput, 0, payoutkit.CodeInvalidInput)
		if msg := b.Results[1].Message; msg != "amount exceeds the payout limit of 300.00" {
			t.Errorf("payout limit message = %q", msg)
		}
		if msg := b.Results[3].Message; msg != "amount exceeds the 24-hour payout limit of 100.00 (40.00 left)" {
			t.Errorf("24-hour limit message = %q", msg)
		}
		if p := b.Results[2].Payout; p.Approval != payoutkit.ApprovalPending {
			t.Errorf("p2 approval = %s; want pending", p.Approval)
		}
		evs := must[[]payoutkit.Event](t)(e.store.SubjectEvents(e.ctx, ws, "payout:p2"))
		if len(evs) != 1 || !strings.Contains(string(evs[0].Body), `"approval":"pending"`) {
			t.Errorf("held payout's event = %+v; want its approval pending", evs)
		}
		e.wantBalance(ws, "900.00", "100.00")
		// A single create sees the batch's spending.
		if _, _, err := e.payout(ws, "after", "1.00"); !errors.Is(err, payoutkit.ErrPayoutLimit) {
			t.Errorf("single create after the batch: err = %v; want the 24-hour limit", err)
		}

		e.policy(ws, payoutkit.PolicyPatch{DailyLimit: limit(""), MaxPayout: limit(""), ApprovalOver: limit(""), AddressAllowlist: ptr(true)})
		b = must[payoutkit.PayoutBatch](t)(first(e.eng.CreatePayoutBatch(e.ctx, ws, batchRequest("b2", false, "p6:1.00"))))
		wantCodes(t, b, payoutkit.CodeForbidden)
		if b.Results[0].Message != "address is not in the allowlist" {
			t.Errorf("allowlist message = %q", b.Results[0].Message)
		}
	})

	t.Run("Leased", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "100.00")
		e.policy(ws, payoutkit.PolicyPatch{ApprovalOver: limit("5.00")})
		now := time.Now().UTC().Truncate(time.Microsecond)
		lease := payoutkit.Lease{Owner: "A", Until: now.Add(time.Minute)}
		b := payoutkit.PayoutBatch{WorkspaceID: ws, BatchID: "b1", CreatedAt: now}
		var items []payoutkit.BatchItem
		for i, amount := range []payoutkit.Amount{100, 200, 900} {
			p := payoutkit.Payout{WorkspaceID: ws, PayoutID: fmt.Sprint("po-", i), Status: payoutkit.PayoutSubmitted, Amount: amount,
				Asset: "USDT", Network: "TRON", Address: TronAddress, PayerID: "cust-1", CreatedAt: now, UpdatedAt: now,
				Approval: payoutkit.ApprovalNone, BatchID: "b1"}
			ev := payoutkit.Event{ID: "evt_batch" + randomSuffix() + p.PayoutID, WorkspaceID: ws, Type: payoutkit.EventPayoutSubmitted,
				Subject: "payout:" + p.PayoutID, CreatedAt: now, EventDelivery: payoutkit.EventDelivery{State: payoutkit.DeliveryPending, NextAttemptAt: now}}
			items = append(items, payoutkit.BatchItem{Payout: p, Event: must[payoutkit.Event](t)(ev.WithPayout(p))})
		}
		stored, created, err := e.store.CreatePayoutBatch(e.ctx, b, items, lease)
		if err != nil || !created || stored.Accepted != 3 || stored.Results[2].Payout.Approval != payoutkit.ApprovalPending {
			t.Fatalf("CreatePayoutBatch = %+v, %v, %v; want 3 accepted, the last held", stored, created, err)
		}
		// Leased to A: no other claims them before the lease ends, but the
		// held payout's hand-off, which is not leased (and waits for its
		// approval).
		during := now.Add(30 * time.Second)
		if got := must[[]payoutkit.PayoutLease](t)(e.store.ClaimPayoutHandoffs(e.ctx, "B", during, during.Add(time.Minute), 10)); len(got) != 0 {
			t.Fatalf("leased batch payouts claimed by another: %+v", got)
		}
		for _, ev := range must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, "B", during, during.Add(time.Minute), 10, nil)) {
			if strings.HasPrefix(ev.Subject, "payout:") {
				t.Fatalf("leased batch event claimed by another: %+v", ev)
			}
		}
		noErr(t, e.store.MarkPayoutHandedOff(e.ctx, payoutkit.PayoutLease{Payout: *stored.Results[0].Payout, Owner: "A", Token: 1}, during))
		after := lease.Until.Add(time.Second)
		got := must[[]payoutkit.PayoutLease](t)(e.store.ClaimPayoutHandoffs(e.ctx, "B", after, after.Add(time.Minute), 10))
		if len(got) != 1 || got[0].PayoutID != "po-1" || got[0].Token <= 1 {
			t.Fatalf("claimed after the lease %+v; want po-1 alone (po-0 handed off, po-2 held)", got)
		}
		if evs := must[[]payoutkit.Event](t)(e.store.ClaimEvents(e.ctx, "B", after, after.Add(time.Minute), 10, nil)); len(evs) != 3 {
			t.Fatalf("%d events claimed after the lease; want the batch's 3", len(evs))
		}
	})

	t.Run("UnknownWorkspace", func(t *testing.T) {
		e := newEnv(t, open)
		_, _, err := e.eng.CreatePayoutBatch(e.ctx, "ws_nope", batchRequest("b1", false, "p1:1.00"))
		wantErr(t, err, payoutkit.ErrNotFound)
	})

	t.Run("Validation", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "10.00")
		req := batchRequest("b1", false, "p1:1.00", "p1:2.00", "p3:0")
		req.Payouts[0].Address = "nope"
		_, _, err := e.eng.CreatePayoutBatch(e.ctx, ws, req)
		var pe *payoutkit.Error
		if !errors.As(err, &pe) || pe.Code != payoutkit.CodeInvalidInput {
			t.Fatalf("err = %v; want a 40000", err)
		}
		fields := map[string]bool{}
		for _, f := range pe.Fields {
			fields[f.Field] = true
		}
		for _, f := range []string{"payouts[0].address", "payouts[2].amount"} {
			if !fields[f] {
				t.Errorf("fields %v lack %s", pe.Fields, f)
			}
		}
		e.wantBalance(ws, "10.00", "0.00")
	})

	t.Run("RaceIdentical", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "1000.00")
		items := make([]string, 100)
		for i := range items {
			items[i] = fmt.Sprintf("p%d:3.00", i)
		}
		req := batchRequest("b1", false, items...)
		var created atomic.Int64
		answers := make([]payoutkit.PayoutBatch, 8)
		Race(8, func(i int) {
			b, replayed, err := e.eng.CreatePayoutBatch(e.ctx, ws, req)
			if err != nil {
				t.Errorf("batch %d: %v", i, err)
				return
			}
			if !replayed {
				created.Add(1)
			}
			answers[i] = b
		})
		if created.Load() != 1 {
			t.Errorf("%d batches created; want 1", created.Load())
		}
		for i := range answers {
			if !sameJSON(t, answers[i], answers[0]) {
				t.Errorf("answer %d differs from answer 0", i)
			}
		}
		e.wantBalance(ws, "700.00", "300.00")
	})

	t.Run("RaceSingles", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "60.00")
		var accepted atomic.Int64
		Race(9, func(i int) {
			if i == 0 {
				items := make([]string, 50)
				for j := range items {
					items[j] = fmt.Sprintf("b%d:1.00", j)
				}
				b, _, err := e.eng.CreatePayoutBatch(e.ctx, ws, batchRequest("b1", false, items...))
				if err != nil {
					t.Errorf("batch: %v", err)
					return
				}
				accepted.Add(int64(b.Accepted))
				return
			}
			for j := range 10 {
				_, _, err := e.payout(ws, fmt.Sprintf("s%d-%d", i, j), "1.00")
				switch {
				case err == nil:
					accepted.Add(1)
				case !errors.Is(err, payoutkit.ErrInsufficientBalance):
					t.Errorf("single: %v", err)
				}
			}
		})
		if accepted.Load() != 60 {
			t.Errorf("%d payouts accepted; want exactly the 60 the balance covers", accepted.Load())
		}
		e.wantBalance(ws, "0.00", "60.00")
	})
}

// sameJSON reports whether two batches render the same contract object.
func sameJSON(t *testing.T, a, b payoutkit.PayoutBatch) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	noErr(t, err)
	jb, err := json.Marshal(b)
	noErr(t, err)
	return string(ja) == string(jb)
}

func ptr[T any](v T) *T { return &v }
