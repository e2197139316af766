package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for VACUUM
	"github.com/payoutkit/payoutkit"
)

// prefill stores n payouts in workspace w before the server starts, so that
// a run measures the server with a database of that size (the p99 with a
// million payouts against the p99 with ten thousand). It goes through the
// engine and the store in this process, 64 writers at a time, as the
// server would store them; the workspace has no webhook URL yet, so their
// events are kept and never sent (the URL is set afterwards).
func prefill(ctx context.Context, db string, w *workspace, n int, cents int64, progress func(string, ...any)) error {
	store, err := openStore(ctx, db)
	if err != nil {
		return err
	}
	defer store.Close()
	engine, err := payoutkit.New(store, &payoutkit.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	total := payoutkit.Amount(int64(n) * cents)
	if _, _, err := engine.CreateOrder(ctx, w.ID, payoutkit.CreateOrderRequest{OrderID: "prefill", Amount: total.String()}); err != nil {
		return fmt.Errorf("prefill funding: %w", err)
	}
	if _, err := engine.MarkOrderPaid(ctx, w.ID, "prefill"); err != nil {
		return fmt.Errorf("prefill funding: %w", err)
	}
	amount := formatCents(cents)
	start := time.Now()
	var next, done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(n) || ctx.Err() != nil {
					return
				}
				_, _, err := engine.CreatePayout(ctx, w.ID, payoutkit.CreatePayoutRequest{
					PayoutID: fmt.Sprintf("prefill-%d", i), Amount: amount, Asset: "USDT", Network: "TRON",
					Address: payoutAddress, PayerID: fmt.Sprintf("payer-%d", i%10_000),
				})
				if err != nil {
					errs <- err
					return
				}
				if d := done.Add(1); d%100_000 == 0 {
					progress("prefill: %d payouts stored (%.0f/s)", d, float64(d)/time.Since(start).Seconds())
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("prefill: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := handOffAll(ctx, store, progress); err != nil {
		return err
	}
	if isPostgres(db) {
		return vacuum(ctx, db, progress)
	}
	return nil
}

// vacuum runs VACUUM ANALYZE on a PostgreSQL database after the prefill, as
// autovacuum would after a bulk load: the hand-offs left a million dead
// row versions, whose index entries every claim would otherwise walk over
// (docs/PERFORMANCE.md has the figures). A server with autovacuum off, as
// on our test machines, would keep them. Then a CHECKPOINT: the prefill
// writes half a gigabyte of WAL a minute, so PostgreSQL checkpoints every
// few seconds while it runs and would still be at it during the
// measurement, each page's first write after a checkpoint logging the
// whole page; a database that grew to its size over days checkpoints at
// its own pace. CHECKPOINT needs a superuser or pg_checkpoint: without,
// the run goes on and says so.
func vacuum(ctx context.Context, dsn string, progress func(string, ...any)) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	start := time.Now()
	if _, err := db.ExecContext(ctx, "VACUUM ANALYZE"); err != nil {
		return fmt.Errorf("prefill: VACUUM ANALYZE: %w", err)
	}
	progress("prefill: VACUUM ANALYZE took %s", time.Since(start).Round(time.Second))
	start = time.Now()
	if _, err := db.ExecContext(ctx, "CHECKPOINT"); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		progress("prefill: no CHECKPOINT (%v): the run may meet the prefill's checkpoints", err)
		return nil
	}
	progress("prefill: CHECKPOINT took %s", time.Since(start).Round(time.Second))
	return nil
}

// handOffAll marks every payout waiting for its hand-off as handed off, as
// the server's dispatcher would have done while they were made: without
// it, the started server spends the run handing off the prefilled backlog,
// and the run measures that rather than its requests.
func handOffAll(ctx context.Context, store payoutkit.Store, progress func(string, ...any)) error {
	start := time.Now()
	leases := make(chan payoutkit.PayoutLease, 1000)
	errs := make(chan error, 65) // each marker's and the claims'
	var wg sync.WaitGroup
	var done atomic.Int64
	for range 64 {
		wg.Go(func() {
			for l := range leases {
				if len(errs) > 0 {
					continue // drained, so that the claims never block
				}
				if err := store.MarkPayoutHandedOff(ctx, l, time.Now()); err != nil {
					errs <- err
					continue
				}
				if d := done.Add(1); d%100_000 == 0 {
					progress("prefill: %d payouts handed off (%.0f/s)", d, float64(d)/time.Since(start).Seconds())
				}
			}
		})
	}
	func() {
		defer close(leases)
		for ctx.Err() == nil && len(errs) == 0 {
			batch, err := store.ClaimPayoutHandoffs(ctx, "load-prefill", time.Now(), time.Now().Add(time.Hour), 1000)
			if err != nil {
				errs <- err
				return
			}
			if len(batch) == 0 {
				return
			}
			for _, l := range batch {
				leases <- l
			}
		}
	}()
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("prefill hand-offs: %w", err)
	}
	return ctx.Err()
}

// setWebhookURL sets the workspace's webhook URL with the server's own
// admin command.
func setWebhookURL(ctx context.Context, bin, db, workspaceID, url string) error {
	cmd := exec.CommandContext(ctx, bin, "webhook", "set", "-db", db, "-workspace", workspaceID, "-url", url)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("server webhook set: %w", err)
	}
	return nil
}
