package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/payoutkit/payoutkit"
)

// MaxFuzzOps bounds the operations one input of FuzzMoneyInvariants runs,
// so that an input costs milliseconds on a store that writes to disk.
const MaxFuzzOps = 64

// FuzzMoneyInvariants runs random sequences of operations against one
// workspace of a store from open, each byte of the input picking one:
// orders created and paid (again, or unknown), payouts created, replayed
// with other parameters or overdrawn, completed and failed. After every
// step the workspace's Audit must Check (money is conserved, no balance is
// negative), an operation that returned an error must have changed
// nothing, and every error must carry a contract code. A store's fuzz
// target calls it with its own constructor, so that the money rules are
// checked in every store that implements them; the seed corpus runs as a
// normal test. Each input gets its own store from open, closed at its end.
func FuzzMoneyInvariants(f *testing.F, open Open) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{0, 0, 1, 1, 1, 1, 2, 3, 3, 4})
	f.Add([]byte{1, 1, 1, 5, 5, 6, 6, 7, 7, 0, 1})
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
		payouts, orders := 0, 0
		for i, op := range ops {
			before, _ := store.Audit(ctx, ws)
			arg := int(op >> 3)
			var err error
			switch op % 8 {
			case 0: // create an order
				orders++
				_, _, err = eng.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: fmt.Sprint("o", orders), Amount: amounts[arg%len(amounts)]})
			case 1: // pay an order (maybe again, maybe unknown)
				_, err = eng.MarkOrderPaid(ctx, ws, fmt.Sprint("o", 1+arg%(orders+1)))
			case 2, 3: // create a payout, or replay an earlier id with other parameters
				id := payouts + 1
				if op%8 == 3 && payouts > 0 {
					id = 1 + arg%payouts
				} else {
					payouts++
				}
				_, _, err = eng.CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{
					PayoutID: fmt.Sprint("p", id), Amount: amounts[arg%len(amounts)], Asset: "USDT", Network: "TRON",
					Address: TronAddress, PayerID: "c",
				})
			case 4, 5:
				_, err = eng.CompletePayout(ctx, ws, fmt.Sprint("p", 1+arg%(payouts+1)), "tx")
			case 6, 7:
				_, err = eng.FailPayout(ctx, ws, fmt.Sprint("p", 1+arg%(payouts+1)), "")
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
