package payoutkit_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/processor/sandbox"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// An engine that runs its own loops: Start sends each event to the
// workspace's receiver and hands each payout to the engine's processor,
// until Stop.
func ExampleEngine_Start() {
	received := make(chan payoutkit.EventType, 10)
	var secret string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !payoutkit.VerifySignature(secret, body, r.Header.Get(payoutkit.HeaderSignature)) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		received <- payoutkit.EventType(r.Header.Get(payoutkit.HeaderEventType))
		io.WriteString(w, "success")
	}))
	defer receiver.Close()

	ctx := context.Background()
	engine, err := payoutkit.New(memstore.New(), &payoutkit.Config{
		Processor:    &sandbox.Processor{}, // a real rail in production
		PasswordCost: bcrypt.MinCost,
		Logger:       slog.New(slog.DiscardHandler),
		// The receiver listens on 127.0.0.1, which is refused by default.
		Delivery: payoutkit.DeliveryConfig{Notifier: &payoutkit.HTTPNotifier{AllowPrivate: true}},
	})
	if err != nil {
		panic(err)
	}
	if err := engine.Start(ctx); err != nil {
		panic(err)
	}
	defer engine.Stop(ctx)

	ws, _ := engine.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme", WebhookURL: receiver.URL})
	secret = ws.Workspace.WebhookSecret
	engine.CreateOrder(ctx, ws.Workspace.ID, payoutkit.CreateOrderRequest{OrderID: "order-1", Amount: "25.00"})
	engine.MarkOrderPaid(ctx, ws.Workspace.ID, "order-1") // records order.paid in the outbox
	fmt.Println(<-received)

	fmt.Println(engine.Stop(ctx))
	// Output:
	// order.paid
	// <nil>
}
