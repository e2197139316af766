package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/payoutkit/payoutkit"
)

// MaxFuzzOps bounds the operations one input of FuzzMoneyInvariants runs,
// so that an input costs milliseconds on a store that writes to disk.
const MaxFuzzOps = 64

// FuzzMoneyInvariants runs random sequences of operations against one
// workspace of a store from open, each byte of the input picking one (its
// low four bits) and its argument (the high four): orders created and paid
// (again, or unknown), payouts created, replayed with other parameters or
// overdrawn, completed and failed, the payout policy's limits set and
// cleared, held payouts approved and rejected. After every step the
// workspace's Audit must Check (money is conserved, no balance is
// negative), an operation that returned an error must have changed
// nothing, and every error must carry a contract code; every new payout
// must have been judged exactly by the policy of the moment (refused when
// above max_payout or past the daily limit counting every payout of the
// input that has not failed, held when above approval_over, and accepted
// otherwise). A store's fuzz target calls it with its own constructor, so
// that the money rules are checked in every store that implements them;
// the seed corpus runs as a normal test. Each input gets its own store from
// open, closed at its end.
func FuzzMoneyInvariants(f *testing.F, open Open) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{0, 0, 1, 1, 1, 1, 2, 3, 3, 4})
	f.Add([]byte{1, 1, 1, 5, 5, 6, 6, 7, 7, 0, 1})
	// A daily limit of 10.00 with payouts under it, one failed, then more.
	f.Add([]byte{0x30, 0x31, 0x36, 0x02, 0x12, 0x22, 0x05, 0x22, 0x32, 0x12})
	// approval_over 1.00: a held payout approved, another rejected.
	f.Add([]byte{0x30, 0x31, 0x19, 0x22, 0x12, 0x0a, 0x22, 0x1b, 0x09, 0x08, 0x52, 0x12})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > MaxFuzzOps {
			ops = ops[:MaxFuzzOps]
		}
		ctx := context.Background()
		store := open(t)
		defer store.Close()
		eng, err := payoutkit.New(store, &payoutkit.Config{PasswordCost: 4})
		if err != nil {
			t.Fatal(err)
		}
		nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "fuzz"})
		if err != nil {
			t.Fatal(err)
		}
		ws := nw.Workspace.ID
		amounts := []string{"0.01", "1.00", "2.50", "10", "0", "99.99"}
		limits := []payoutkit.Amount{1, 100, 250, 1000, 0, 9999}
		var (
			orders int
			policy payoutkit.PayoutPolicy
			// What the input's payouts are, by number (from 1): their
			// amounts and whether they failed, for the daily limit.
			amount []payoutkit.Amount
			failed []bool
		)
		spent := func() (sum payoutkit.Amount) {
			for i, a := range amount {
				if !failed[i] {
					sum += a
				}
			}
			return sum
		}
		setPolicy := func(patch payoutkit.PolicyPatch) error {
			p, err := eng.SetPayoutPolicy(ctx, ws, patch, payoutkit.ActorCLI)
			if err == nil {
				policy = p
			}
			return err
		}
		payout := func(arg, n int) string { return fmt.Sprint("p", 1+arg%(n+1)) }
		index := func(id string) int {
			var n int
			fmt.Sscanf(id, "p%d", &n)
			return n - 1
		}
		for i, op := range ops {
			before, _ := store.Audit(ctx, ws)
			arg := int(op >> 4)
			var err error
			switch op % 16 {
			case 0, 12: // create an order
				orders++
				_, _, err = eng.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: fmt.Sprint("o", orders), Amount: amounts[arg%len(amounts)]})
			case 1, 13: // pay an order (maybe again, maybe unknown)
				_, err = eng.MarkOrderPaid(ctx, ws, fmt.Sprint("o", 1+arg%(orders+1)))
			case 2, 3, 14: // create a payout, or replay an earlier id with other parameters
				id := len(amount) + 1
				if op%16 == 3 && len(amount) > 0 {
					id = 1 + arg%len(amount)
				}
				a, isNew, wasSpent := limits[arg%len(limits)], id > len(amount), spent()
				var p payoutkit.Payout
				var replayed bool
				p, replayed, err = eng.CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{
					PayoutID: fmt.Sprint("p", id), Amount: amounts[arg%len(amounts)], Asset: "USDT", Network: "TRON",
					Address: TronAddress, PayerID: "c",
				})
				created := isNew && !replayed && err == nil
				if created {
					amount, failed = append(amount, a), append(failed, false)
				}
				checkPolicy(t, i, policy, wasSpent, a, isNew, p, created, err)
			case 4, 15:
				_, err = eng.CompletePayout(ctx, ws, payout(arg, len(amount)), payoutkit.Completion{TxID: "tx"})
			case 5:
				id := payout(arg, len(amount))
				if _, err = eng.FailPayout(ctx, ws, id, ""); err == nil {
					failed[index(id)] = true
				}
			case 6: // a daily limit
				l := payoutkit.LimitOf(limits[arg%len(limits)] * 4)
				err = setPolicy(payoutkit.PolicyPatch{DailyLimit: &l})
			case 7: // no limits at all
				var none payoutkit.Limit
				err = setPolicy(payoutkit.PolicyPatch{DailyLimit: &none, MaxPayout: &none, ApprovalOver: &none})
			case 8: // max_payout, or none
				l := payoutkit.LimitOf(limits[arg%len(limits)])
				if arg%len(limits) == 4 {
					l = payoutkit.Limit{}
				}
				err = setPolicy(payoutkit.PolicyPatch{MaxPayout: &l})
			case 9: // approval_over, or none
				l := payoutkit.LimitOf(limits[arg%len(limits)])
				if arg%len(limits) == 4 {
					l = payoutkit.Limit{}
				}
				err = setPolicy(payoutkit.PolicyPatch{ApprovalOver: &l})
			case 10:
				_, err = eng.ApprovePayout(ctx, ws, payout(arg, len(amount)), payoutkit.ActorCLI)
			case 11:
				id := payout(arg, len(amount))
				if _, err = eng.RejectPayout(ctx, ws, id, "no", payoutkit.ActorCLI); err == nil {
					failed[index(id)] = true
				}
			}
			after, aerr := store.Audit(ctx, ws)
			if aerr != nil {
				t.Fatal(aerr)
			}
			if cerr := after.Check(); cerr != nil {
				t.Fatalf("step %d (op %d): %v", i, op, cerr)
			}
			if err != nil && after != before {
				t.Fatalf("step %d (op %d) failed with %v but changed money: %+v -> %+v", i, op, err, before, after)
			}
			if err != nil && payoutkit.CodeOf(err) == 0 {
				t.Fatalf("step %d (op %d): error without a contract code: %v", i, op, err)
			}
		}
	})
}

// checkPolicy checks that a payout of amount a, created (or refused) when
// the input's payouts that had not failed came to spent, was judged as
// policy says: a new payout above max_payout or past the daily limit is
// refused with ErrPayoutLimit, any other is not, and one accepted is held
// exactly when it is above approval_over. A replay (isNew false) is not
// judged.
func checkPolicy(t *testing.T, step int, policy payoutkit.PayoutPolicy, spent, a payoutkit.Amount, isNew bool, p payoutkit.Payout, created bool, err error) {
	t.Helper()
	if !isNew || a == 0 {
		return
	}
	over := policy.MaxPayout.Set && a > policy.MaxPayout.Amount ||
		policy.DailyLimit.Set && spent+a > policy.DailyLimit.Amount
	switch limited := errors.Is(err, payoutkit.ErrPayoutLimit); {
	case over && !limited:
		t.Fatalf("step %d: a payout of %v with %v spent under %+v: want ErrPayoutLimit, got %v", step, a, spent, policy, err)
	case !over && limited:
		t.Fatalf("step %d: a payout of %v with %v spent under %+v refused: %v", step, a, spent, policy, err)
	case created:
		held := policy.ApprovalOver.Set && a > policy.ApprovalOver.Amount
		if got := p.Approval == payoutkit.ApprovalPending; got != held {
			t.Fatalf("step %d: a payout of %v under %+v has approval %q", step, a, policy, p.Approval)
		}
	}
}
