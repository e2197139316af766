package payoutkit_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/netip"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// Embedding the engine: an in-memory store, a funded workspace, a payout
// that is accepted and then completed.
func Example() {
	ctx := context.Background()
	eng, err := payoutkit.New(memstore.New(), nil)
	if err != nil {
		log.Fatal(err)
	}
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme"})
	if err != nil {
		log.Fatal(err)
	}
	ws := nw.Workspace.ID

	// A paid order credits the available balance.
	if _, _, err := eng.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "ord-1", Amount: "100.00"}); err != nil {
		log.Fatal(err)
	}
	if _, err := eng.MarkOrderPaid(ctx, ws, "ord-1"); err != nil {
		log.Fatal(err)
	}

	p, _, err := eng.CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{
		PayoutID: "po-1001", Amount: "25.00", Asset: "USDT", Network: "TRON",
		Address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", PayerID: "cust-42",
	})
	if err != nil {
		log.Fatal(err)
	}
	b, _ := eng.Balance(ctx, ws)
	fmt.Println(p.Status, "available", b.Available, "in progress", b.InProgress)

	p, err = eng.CompletePayout(ctx, ws, "po-1001", payoutkit.Completion{TxID: "0xfeed"})
	if err != nil {
		log.Fatal(err)
	}
	b, _ = eng.Balance(ctx, ws)
	fmt.Println(p.Status, "available", b.Available, "in progress", b.InProgress)
	// Output:
	// submitted available 75.00 in progress 25.00
	// completed available 75.00 in progress 0.00
}

// A payout the balance does not cover is refused with the contract's message
// and changes nothing.
func ExampleEngine_CreatePayout_insufficientBalance() {
	ctx := context.Background()
	eng, _ := payoutkit.New(memstore.New(), nil)
	nw, _ := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme"})

	_, _, err := eng.CreatePayout(ctx, nw.Workspace.ID, payoutkit.CreatePayoutRequest{
		PayoutID: "po-1", Amount: "5.00", Asset: "BTC", Network: "BTC",
		Address: "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", PayerID: "cust-1",
	})
	fmt.Println(errors.Is(err, payoutkit.ErrInsufficientBalance), payoutkit.CodeOf(err), err)
	// Output: true 40000 Insufficient available balance
}

// Authenticating a request's Authorization header to its workspace.
func ExampleEngine_Authenticate() {
	ctx := context.Background()
	eng, _ := payoutkit.New(memstore.New(), nil)
	nw, _ := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme"})

	client := netip.MustParseAddr("203.0.113.7")

	p, err := eng.Authenticate(ctx, "Bearer "+nw.APIKey.Key, client)
	fmt.Println(p.WorkspaceID == nw.Workspace.ID, err)

	_, err = eng.Authenticate(ctx, "Bearer sk_not_a_key", client)
	fmt.Println(payoutkit.CodeOf(err), err)
	// Output:
	// true <nil>
	// 40100 missing or malformed API key
}

// A key for a back office that only reads, from one network: it may not
// create payouts, nor be used from anywhere else.
func ExampleEngine_CreateAPIKey() {
	ctx := context.Background()
	eng, _ := payoutkit.New(memstore.New(), nil)
	nw, _ := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme"})

	scopes, _ := payoutkit.ParseScopes("read")
	k, _ := eng.CreateAPIKey(ctx, nw.Workspace.ID, payoutkit.CreateAPIKeyRequest{
		Scopes: scopes, AllowIPs: []string{"10.0.0.0/8"},
	}, payoutkit.ActorCLI)
	p, err := eng.Authenticate(ctx, "Bearer "+k.Key, netip.MustParseAddr("10.1.2.3"))
	fmt.Println(err, p.Require(payoutkit.ScopePayoutsWrite))

	_, err = eng.Authenticate(ctx, "Bearer "+k.Key, netip.MustParseAddr("203.0.113.7"))
	fmt.Println(payoutkit.CodeOf(err), err)
	// Output:
	// <nil> this API key lacks the payouts:write scope
	// 40300 this API key is not allowed from the address 203.0.113.7
}

// Listing payouts newest first, one page at a time: each page's NextCursor,
// sent back with the same filter, asks for the next one.
func ExampleEngine_ListPayouts() {
	ctx := context.Background()
	eng, _ := payoutkit.New(memstore.New(), nil)
	nw, _ := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme"})
	ws := nw.Workspace.ID
	eng.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "ord-1", Amount: "100.00"})
	eng.MarkOrderPaid(ctx, ws, "ord-1")
	for _, id := range []string{"po-1", "po-2", "po-3"} {
		eng.CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{
			PayoutID: id, Amount: "10.00", Asset: "USDT", Network: "TRON",
			Address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", PayerID: "cust-42",
		})
	}

	req := payoutkit.ListPayoutsRequest{PayerID: "cust-42", Limit: 2}
	for {
		page, err := eng.ListPayouts(ctx, ws, req)
		if err != nil {
			log.Fatal(err)
		}
		for _, p := range page.Items {
			fmt.Println(p.PayoutID, p.Status, p.Amount)
		}
		if page.NextCursor == "" {
			break
		}
		req.Cursor = page.NextCursor
	}
	// Output:
	// po-3 submitted 10.00
	// po-2 submitted 10.00
	// po-1 submitted 10.00
}
