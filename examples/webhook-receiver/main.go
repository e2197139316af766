// Command webhook-receiver is a small receiver of payoutkit webhooks, to run
// beside the server or to copy from. It checks each request's X-Signature
// against the workspace's signing secret on the raw body, in constant time,
// before reading anything from it; skips events it has already handled
// (receivers get each event at least once, so they deduplicate by id); logs
// the event; and answers "success", which is what marks it delivered.
//
//	PAYOUTKIT_WEBHOOK_SECRET=whsec_... go run ./examples/webhook-receiver -addr :9090
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/payoutkit/payoutkit"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "webhook-receiver:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("webhook-receiver", flag.ContinueOnError)
	addr := fs.String("addr", ":9090", "address to listen on")
	secret := fs.String("secret", os.Getenv("PAYOUTKIT_WEBHOOK_SECRET"), "the workspace's webhook signing secret (whsec_...); defaults to $PAYOUTKIT_WEBHOOK_SECRET")
	remember := fs.Int("remember", 100_000, "how many event ids to remember for deduplication")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *secret == "" {
		return errors.New("no signing secret: set PAYOUTKIT_WEBHOOK_SECRET (or -secret)")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	h := newHandler(*secret, newSeenIDs(*remember), log, func(ctx context.Context, ev payoutkit.WebhookEvent) error {
		// A real receiver updates its own records here, idempotently.
		log.InfoContext(ctx, "event", "id", ev.ID, "type", ev.Type, "workspace_id", ev.WorkspaceID,
			"created_at", ev.CreatedAt, "data", string(ev.Data))
		return nil
	})
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	log.Info("listening", "addr", *addr)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}
