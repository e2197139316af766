package storetest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/payoutkit/payoutkit"
)

func testPayouts(t *testing.T, open Open) {
	t.Run("CreateDebits", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "100.00")
		p, replayed, err := e.eng.CreatePayout(e.ctx, ws, payoutkit.CreatePayoutRequest{
			PayoutID: "po-1", Amount: "25", Asset: "usdt", Network: "tron", Address: TronAddress, PayerID: "cust-42",
		})
		if err != nil || replayed {
			t.Fatalf("CreatePayout = %v, replayed %v", err, replayed)
		}
		want := payoutkit.Payout{
			WorkspaceID: ws, PayoutID: "po-1", Status: payoutkit.PayoutSubmitted, Amount: 2500,
			Asset: "USDT", Network: "TRON", Address: TronAddress, PayerID: "cust-42",
			CreatedAt: p.CreatedAt, UpdatedAt: p.CreatedAt, Approval: payoutkit.ApprovalNone,
		}
		if diff := cmp.Diff(want, p); diff != "" {
			t.Fatalf("created payout (-want +got):\n%s", diff)
		}
		got := must[payoutkit.Payout](t)(e.eng.Payout(e.ctx, ws, "po-1"))
		if diff := cmp.Diff(p, got); diff != "" {
			t.Fatalf("stored payout (-created +stored):\n%s", diff)
		}
		e.wantBalance(ws, "75.00", "25.00")
	})

	t.Run("Overdraft", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "10.00")
		_, _, err := e.payout(ws, "po-big", "10.01")
		wantErr(t, err, payoutkit.ErrInsufficientBalance)
		wantErr(t, err, payoutkit.ErrInvalidInput)
		if err.Error() != "Insufficient available balance" || payoutkit.CodeOf(err) != payoutkit.CodeInvalidInput {
			t.Fatalf("overdraft error = %q (code %d)", err, payoutkit.CodeOf(err))
		}
		_, err = e.eng.Payout(e.ctx, ws, "po-big")
		wantErr(t, err, payoutkit.ErrNotFound)
		e.wantBalance(ws, "10.00", "0.00")
		// The exact balance is payable.
		if _, _, err := e.payout(ws, "po-all", "10.00"); err != nil {
			t.Fatal(err)
		}
		e.wantBalance(ws, "0.00", "10.00")
		// An empty workspace cannot pay anything.
		other := e.workspace().Workspace.ID
		_, _, err = e.payout(other, "po-1", "0.01")
		wantErr(t, err, payoutkit.ErrInsufficientBalance)
	})

	t.Run("Validation", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "100.00")
		ok := payoutRequest("po-ok", "1.00")
		cases := []struct {
			field  string
			mutate func(*payoutkit.CreatePayoutRequest)
		}{
			{"payout_id", func(r *payoutkit.CreatePayoutRequest) { r.PayoutID = "" }},
			{"payout_id", func(r *payoutkit.CreatePayoutRequest) { r.PayoutID = "has space" }},
			{"payout_id", func(r *payoutkit.CreatePayoutRequest) { r.PayoutID = strings.Repeat("a", 129) }},
			{"amount", func(r *payoutkit.CreatePayoutRequest) { r.Amount = "" }},
			{"amount", func(r *payoutkit.CreatePayoutRequest) { r.Amount = "0" }},
			{"amount", func(r *payoutkit.CreatePayoutRequest) { r.Amount = "0.00" }},
			{"amount", func(r *payoutkit.CreatePayoutRequest) { r.Amount = "-1.00" }},
			{"amount", func(r *payoutkit.CreatePayoutRequest) { r.Amount = "1.001" }},
			{"amount", func(r *payoutkit.CreatePayoutRequest) { r.Amount = "1e2" }},
			{"amount", func(r *payoutkit.CreatePayoutRequest) { r.Amount = " 1.00" }},
			{"amount", func(r *payoutkit.CreatePayoutRequest) { r.Amount = "1000000000.01" }},
			{"asset", func(r *payoutkit.CreatePayoutRequest) { r.Asset = "" }},
			{"asset", func(r *payoutkit.CreatePayoutRequest) { r.Asset = "DOGS" }},
			{"network", func(r *payoutkit.CreatePayoutRequest) { r.Network = "" }},
			{"network", func(r *payoutkit.CreatePayoutRequest) { r.Network = "BTC" }},
			{"address", func(r *payoutkit.CreatePayoutRequest) { r.Address = "" }},
			{"address", func(r *payoutkit.CreatePayoutRequest) { r.Address = " " + TronAddress }},
			{"address", func(r *payoutkit.CreatePayoutRequest) { r.Address = TronAddress[:33] + "u" }},
			{"address", func(r *payoutkit.CreatePayoutRequest) { r.Address = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed" }},
			{"payer_id", func(r *payoutkit.CreatePayoutRequest) { r.PayerID = "" }},
			{"payer_id", func(r *payoutkit.CreatePayoutRequest) { r.PayerID = "bad\nid" }},
			{"payer_id", func(r *payoutkit.CreatePayoutRequest) { r.PayerID = strings.Repeat("é", 129) }},
			{"payer_id", func(r *payoutkit.CreatePayoutRequest) { r.PayerID = "bad\xffutf8" }},
		}
		for _, c := range cases {
			req := ok
			c.mutate(&req)
			_, _, err := e.eng.CreatePayout(e.ctx, ws, req)
			wantErr(t, err, payoutkit.ErrInvalidInput)
			pe, _ := err.(*payoutkit.Error)
			if pe == nil || len(pe.Fields) != 1 || pe.Fields[0].Field != c.field || !strings.Contains(pe.Message, c.field) {
				t.Errorf("%+v: error %#v does not name field %s alone", req, err, c.field)
			}
		}
		e.wantBalance(ws, "100.00", "0.00")
		if page := must[payoutkit.Page[payoutkit.Payout]](t)(e.store.Payouts(e.ctx, ws, payoutkit.PayoutFilter{}, payoutkit.PageRequest{})); len(page.Items) != 0 {
			t.Fatalf("invalid requests stored %d payouts", len(page.Items))
		}
		// Several bad fields are all named.
		_, _, err := e.eng.CreatePayout(e.ctx, ws, payoutkit.CreatePayoutRequest{})
		if pe, _ := err.(*payoutkit.Error); pe == nil || len(pe.Fields) != 6 {
			t.Fatalf("empty request: %v", err)
		}
	})

	t.Run("ReplayAndConflict", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "100.00")
		first := must[payoutkit.Payout](t)(first(e.payout(ws, "po-1", "25.00")))
		again, replayed, err := e.eng.CreatePayout(e.ctx, ws, payoutkit.CreatePayoutRequest{
			PayoutID: "po-1", Amount: "25", Asset: "Usdt", Network: "Tron", Address: TronAddress, PayerID: "cust-1",
		})
		if err != nil || !replayed {
			t.Fatalf("replay: replayed %v, err %v", replayed, err)
		}
		if diff := cmp.Diff(first, again); diff != "" {
			t.Fatalf("replay returned another payout:\n%s", diff)
		}
		for _, req := range []payoutkit.CreatePayoutRequest{
			payoutRequest("po-1", "25.01"),
			func() payoutkit.CreatePayoutRequest {
				r := payoutRequest("po-1", "25.00")
				r.PayerID = "cust-2"
				return r
			}(),
			func() payoutkit.CreatePayoutRequest { r := payoutRequest("po-1", "25.00"); r.Asset = "TRX"; return r }(),
		} {
			_, _, err := e.eng.CreatePayout(e.ctx, ws, req)
			wantErr(t, err, payoutkit.ErrConflict)
		}
		// A replay is answered even when the balance could no longer cover it,
		// and after the payout settled.
		if _, _, err := e.payout(ws, "po-2", "75.00"); err != nil {
			t.Fatal(err)
		}
		must[payoutkit.Payout](t)(e.eng.FailPayout(e.ctx, ws, "po-1", "bounced"))
		again, replayed, err = e.payout(ws, "po-1", "25.00")
		if err != nil || !replayed || again.Status != payoutkit.PayoutFailed {
			t.Fatalf("replay after failure: %+v, %v, %v", again, replayed, err)
		}
		e.wantBalance(ws, "25.00", "75.00")
	})

	t.Run("CompleteAndFail", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		e.fund(ws, "100.00")
		must[payoutkit.Payout](t)(first(e.payout(ws, "po-ok", "30.00")))
		must[payoutkit.Payout](t)(first(e.payout(ws, "po-bad", "20.00")))
		e.wantBalance(ws, "50.00", "50.00")

		_, err := e.eng.CompletePayout(e.ctx, ws, "po-ok", payoutkit.Completion{TxID: ""})
		wantErr(t, err, payoutkit.ErrInvalidInput) // a completed payout always has its txid
		done := must[payoutkit.Payout](t)(e.eng.CompletePayout(e.ctx, ws, "po-ok", payoutkit.Completion{TxID: "0xabc"}))
		if done.Status != payoutkit.PayoutCompleted || done.TxID != "0xabc" || done.FailureReason != "" || done.UpdatedAt.Before(done.CreatedAt) {
			t.Fatalf("completed payout %+v", done)
		}
		if diff := cmp.Diff(done, must[payoutkit.Payout](t)(e.eng.Payout(e.ctx, ws, "po-ok"))); diff != "" {
			t.Fatalf("stored completed payout differs:\n%s", diff)
		}
		e.wantBalance(ws, "50.00", "20.00")

		failed := must[payoutkit.Payout](t)(e.eng.FailPayout(e.ctx, ws, "po-bad", "address rejected"))
		if failed.Status != payoutkit.PayoutFailed || failed.FailureReason != "address rejected" || failed.TxID != "" {
			t.Fatalf("failed payout %+v", failed)
		}
		e.wantBalance(ws, "70.00", "0.00")

		// Settled payouts cannot move again, and nothing changes.
		for _, err := range []error{
			second(e.eng.CompletePayout(e.ctx, ws, "po-ok", payoutkit.Completion{TxID: "again"})),
			second(e.eng.FailPayout(e.ctx, ws, "po-ok", "")),
			second(e.eng.FailPayout(e.ctx, ws, "po-bad", "twice")),
			second(e.eng.CompletePayout(e.ctx, ws, "po-bad", payoutkit.Completion{TxID: "late"})),
		} {
			wantErr(t, err, payoutkit.ErrConflict)
		}
		e.wantBalance(ws, "70.00", "0.00")
		_, err = e.eng.CompletePayout(e.ctx, ws, "po-missing", payoutkit.Completion{TxID: "x"})
		wantErr(t, err, payoutkit.ErrNotFound)
	})

	t.Run("WorkspaceIsolation", func(t *testing.T) {
		e := newEnv(t, open)
		a, b := e.workspace().Workspace.ID, e.workspace().Workspace.ID
		e.fund(a, "10.00")
		must[payoutkit.Payout](t)(first(e.payout(a, "po-1", "5.00")))
		_, err := e.eng.Payout(e.ctx, b, "po-1")
		wantErr(t, err, payoutkit.ErrNotFound)
		_, err = e.eng.CompletePayout(e.ctx, b, "po-1", payoutkit.Completion{TxID: "x"})
		wantErr(t, err, payoutkit.ErrNotFound)
		// The same payout_id is free in another workspace.
		e.fund(b, "1.00")
		if _, replayed, err := e.payout(b, "po-1", "1.00"); err != nil || replayed {
			t.Fatalf("same id in another workspace: %v, replayed %v", err, replayed)
		}
		e.wantBalance(a, "5.00", "5.00")
		e.wantBalance(b, "0.00", "1.00")
	})

	t.Run("LookupValidation", func(t *testing.T) {
		e := newEnv(t, open)
		ws := e.workspace().Workspace.ID
		_, err := e.eng.Payout(e.ctx, ws, "")
		wantErr(t, err, payoutkit.ErrInvalidInput)
		_, err = e.eng.Payout(e.ctx, ws, "nope")
		wantErr(t, err, payoutkit.ErrNotFound)
		if payoutkit.CodeOf(err) != payoutkit.CodeNotFound {
			t.Fatalf("code %d", payoutkit.CodeOf(err))
		}
	})
}

func first[A, B any](a A, _ B, err error) (A, error) { return a, err }

func second[A any](_ A, err error) error { return err }
