package payoutkit_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// countingProcessor accepts every payout, as the sandbox does, and counts
// the submissions.
type countingProcessor struct{ n atomic.Int64 }

func (p *countingProcessor) Submit(context.Context, payoutkit.Submission, payoutkit.Settler) error {
	p.n.Add(1)
	return nil
}

// BenchmarkDispatch measures the dispatcher's work per payout on SQLite:
// handing the payout to the processor (claim, read, submit, record) and
// delivering its payout.submitted event to a real receiver on loopback
// (claim, workspace read, signed POST, recorded attempt). ns/op is per
// payout, from the dispatcher's start until both are done for every payout.
func BenchmarkDispatch(b *testing.B) {
	ctx := b.Context()
	quiet := slog.New(slog.DiscardHandler)
	bench := newDispatchBench(b, payoutkit.DeliveryConfig{})
	s, eng, ws, proc, delivered := bench.store, bench.eng, bench.ws, bench.proc, &bench.delivered
	for i := range b.N {
		if _, _, err := eng.CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{
			PayoutID: fmt.Sprintf("po-%d", i), Amount: "1.00", Asset: "USDT", Network: "TRON",
			Address: tronAddress, PayerID: fmt.Sprintf("payer-%d", i%100),
		}); err != nil {
			b.Fatal(err)
		}
	}

	b.ResetTimer()
	d, err := payoutkit.NewDispatcher(s, &payoutkit.DeliveryConfig{
		Notifier:     &payoutkit.HTTPNotifier{AllowPrivate: true},
		PollInterval: 10 * time.Millisecond, Logger: quiet,
	}, eng, eng)
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	events := int64(b.N) + 1 // and the order's
	for delivered.Load() < events || proc.n.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	stop()
	if err := <-done; err != nil { // in-flight records end before Run returns
		b.Fatal(err)
	}
	b.StopTimer()
	if n := delivered.Load(); n != events {
		b.Fatalf("%d webhooks delivered; want %d", n, events)
	}
}

// BenchmarkPayoutLife measures a payout's whole life in the engine on
// SQLite, with the engine's own loops running, as a server runs them: the
// create (its durable commit), the hand-off to the processor and the
// delivery of its payout.submitted event to a real receiver on loopback, 32
// creators at a time. ns/op and cpu-ns/op (the process's CPU, which the
// machine's other load distorts least) are per payout, until every payout
// is handed over and delivered.
func BenchmarkPayoutLife(b *testing.B) {
	ctx := b.Context()
	bench := newDispatchBench(b, payoutkit.DeliveryConfig{Notifier: &payoutkit.HTTPNotifier{AllowPrivate: true}})
	eng, ws, proc, delivered := bench.eng, bench.ws, bench.proc, &bench.delivered
	if err := eng.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer eng.Stop(context.Background())
	for delivered.Load() < 1 { // the order's
		time.Sleep(time.Millisecond)
	}
	var seq atomic.Int64
	b.SetParallelism(16) // 32 creators on two cores
	b.ResetTimer()
	cpu := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := seq.Add(1)
			if _, _, err := eng.CreatePayout(ctx, ws, payoutkit.CreatePayoutRequest{
				PayoutID: fmt.Sprintf("po-%d", i), Amount: "1.00", Asset: "USDT", Network: "TRON",
				Address: tronAddress, PayerID: fmt.Sprintf("payer-%d", i%100),
			}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	for delivered.Load() < int64(b.N)+1 || proc.n.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// dispatchBench is an engine on a fresh SQLite store with a counting
// processor and a workspace funded for b.N payouts of 1.00, whose webhooks
// go to a receiver on loopback that counts them.
type dispatchBench struct {
	store     payoutkit.Store
	eng       *payoutkit.Engine
	ws        string
	proc      *countingProcessor
	delivered atomic.Int64
}

func newDispatchBench(b *testing.B, delivery payoutkit.DeliveryConfig) *dispatchBench {
	ctx := b.Context()
	quiet := slog.New(slog.DiscardHandler)
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), sqlite.WithLogger(quiet))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	bench := &dispatchBench{store: s, proc: &countingProcessor{}}
	if bench.eng, err = payoutkit.New(s, &payoutkit.Config{PasswordCost: bcrypt.MinCost, Processor: bench.proc, Logger: quiet, Delivery: delivery}); err != nil {
		b.Fatal(err)
	}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		bench.delivered.Add(1)
		_, _ = io.WriteString(w, "success")
	}))
	b.Cleanup(receiver.Close)
	nw, err := bench.eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "Bench", WebhookURL: receiver.URL})
	if err != nil {
		b.Fatal(err)
	}
	bench.ws = nw.Workspace.ID
	if _, _, err := bench.eng.CreateOrder(ctx, bench.ws, payoutkit.CreateOrderRequest{OrderID: "fund", Amount: fmt.Sprintf("%d.00", b.N+1)}); err != nil {
		b.Fatal(err)
	}
	if _, err := bench.eng.MarkOrderPaid(ctx, bench.ws, "fund"); err != nil {
		b.Fatal(err)
	}
	return bench
}
