package processortest

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// refuser is a processor that fails every payout it is handed, and
// records whether its loop runs.
type refuser struct{ running atomic.Bool }

func (r *refuser) Submit(ctx context.Context, s payoutkit.Submission, settler payoutkit.Settler) error {
	_, err := settler.FailPayout(ctx, s.WorkspaceID, s.PayoutID, "refused by the test")
	return err
}

func (r *refuser) Start(context.Context, payoutkit.Settler) error { r.running.Store(true); return nil }

func (r *refuser) Stop(context.Context) error { r.running.Store(false); return nil }

// On either database: the funded workspace has its amount available; Run
// hands a payout to the processor and collects its webhook; the processor
// stops with the test; the processor's *bun.DB reaches the store's tables.
func TestRun(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) (payoutkit.Store, *bun.DB){
		"sqlite":   func(t *testing.T) (payoutkit.Store, *bun.DB) { return OpenSQLite(t, quiet) },
		"postgres": func(t *testing.T) (payoutkit.Store, *bun.DB) { return OpenPostgres(t, pgtest.Postgres(t), quiet) },
	} {
		proc := &refuser{}
		t.Run(name, func(t *testing.T) {
			store, db := open(t)
			eng, ws := FundedEngine(t, store, &payoutkit.Config{Logger: quiet}, "Test", "100.00")
			if b, err := eng.Balance(context.Background(), ws); err != nil || b.Available != 100_00 {
				t.Fatalf("available %v, %v; want 100.00", b.Available, err)
			}
			hooks := Run(t, store, ws, &payoutkit.Config{Logger: quiet}, proc)
			if !proc.running.Load() {
				t.Fatal("Run did not start the processor")
			}
			if _, _, err := eng.CreatePayout(context.Background(), ws, payoutkit.CreatePayoutRequest{PayoutID: "p1", Amount: "1.00",
				Asset: "ETH", Network: "ETH", Address: "0x52908400098527886E0F7030069857D2E4169EE7", PayerID: "cust-1"}); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(30 * time.Second); !hooks.Has("p1", "payout.failed"); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("no payout.failed webhook for p1")
				}
			}
			if hooks.Has("p1", "payout.completed") || hooks.Has("p2", "payout.failed") {
				t.Fatal("webhooks of events that did not happen")
			}
			if n, err := db.NewSelect().Table("payouts").Count(context.Background()); err != nil || n != 1 {
				t.Fatalf("the processor's database holds %d payouts (%v), want 1", n, err)
			}
		})
		if proc.running.Load() {
			t.Fatalf("%s: the processor still runs after its test", name)
		}
	}
}
