package delivery_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/delivery"
	"github.com/payoutkit/payoutkit/storage/memstore"
)

// A dispatcher beside an engine: it sends each event to the workspace's
// receiver and hands each payout to the engine's processor.
func Example() {
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
	store := memstore.New()
	engine, _ := payoutkit.New(store, &payoutkit.Config{
		Processor:    &payoutkit.SandboxProcessor{}, // a real rail in production
		PasswordCost: bcrypt.MinCost,
	})
	ws, _ := engine.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Acme", WebhookURL: receiver.URL})
	secret = ws.Workspace.WebhookSecret

	dispatcher, err := delivery.New(store, &delivery.Config{
		HandOff: engine,
		// The receiver listens on 127.0.0.1, which is refused by default.
		Notifier: &delivery.HTTPNotifier{AllowPrivate: true},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	engine.CreateOrder(ctx, ws.Workspace.ID, payoutkit.CreateOrderRequest{OrderID: "order-1", Amount: "25.00"})
	engine.MarkOrderPaid(ctx, ws.Workspace.ID, "order-1") // records order.paid in the outbox

	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error)
	go func() { stopped <- dispatcher.Run(runCtx) }()
	fmt.Println(<-received)

	stop()
	fmt.Println(<-stopped)
	// Output:
	// order.paid
	// <nil>
}
