package sqltest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/memstore"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

// Bench is the database a package's benchmarks compare with memstore.
type Bench struct {
	// Name names the database's sub-benchmarks.
	Name string
	// Open opens a fresh store; nil leaves the database out (PostgreSQL
	// without PAYOUTKIT_TEST_POSTGRES).
	Open func(b *testing.B) payoutkit.Store
	// Batches, when set, returns how many transactions s's committer has
	// run and how many writes they carried, and whether s has one.
	Batches func(s payoutkit.Store) (batches, writes int64, ok bool)
}

// benchStore is one store under benchmark, with a funded workspace.
type benchStore struct {
	name  string
	store payoutkit.Store
	eng   *payoutkit.Engine
	ws    string
}

// reportBatches runs f, reporting its CPU per operation and how many
// writes the store's committer put in one transaction on average while f
// ran, where db counts them.
func (db Bench) reportBatches(b *testing.B, st benchStore, f func()) {
	f0 := f
	f = func() { reportCPU(b, f0) }
	if db.Batches == nil {
		f()
		return
	}
	b0, w0, ok := db.Batches(st.store)
	if !ok {
		f()
		return
	}
	f()
	b1, w1, _ := db.Batches(st.store)
	if b1 > b0 {
		b.ReportMetric(float64(w1-w0)/float64(b1-b0), "writes/commit")
	}
}

// benchStores opens the stores to compare: memory and db's, when it opens.
func benchStores(b *testing.B, db Bench) []benchStore {
	b.Helper()
	stores := []struct {
		name string
		open func() payoutkit.Store
	}{
		{"memory", func() payoutkit.Store { return memstore.New() }},
	}
	if db.Open != nil {
		stores = append(stores, struct {
			name string
			open func() payoutkit.Store
		}{db.Name, func() payoutkit.Store { return db.Open(b) }})
	}
	out := make([]benchStore, len(stores))
	for i, st := range stores {
		s := st.open()
		b.Cleanup(func() { s.Close() })
		eng := newEngine(b, s)
		nw, err := eng.CreateWorkspace(b.Context(), payoutkit.CreateWorkspaceRequest{Name: "Bench", WebhookURL: "https://hooks.example/payoutkit"})
		if err != nil {
			b.Fatal(err)
		}
		for j := range 10 {
			fund(b, eng, nw.Workspace.ID, fmt.Sprintf("fund-%d", j), "1000000000.00")
		}
		out[i] = benchStore{name: st.name, store: s, eng: eng, ws: nw.Workspace.ID}
	}
	return out
}

// BenchCreatePayout measures accepted payouts through the engine: a
// replay lookup, then the debit, payout, ledger entry and event in one
// transaction.
func BenchCreatePayout(b *testing.B, db Bench) {
	var seq atomic.Int64
	for _, st := range benchStores(b, db) {
		create := func(b *testing.B) bool {
			id := fmt.Sprintf("po-%d", seq.Add(1))
			_, _, err := st.eng.CreatePayout(b.Context(), st.ws, payoutRequest(id, "0.01"))
			if err != nil {
				b.Error(err)
			}
			return err == nil
		}
		b.Run(st.name+"/serial", func(b *testing.B) {
			db.reportBatches(b, st, func() {
				for b.Loop() && create(b) {
				}
			})
		})
		// Group commit on SQLite batches whatever is queued when a commit
		// ends, so it needs concurrent callers: an HTTP server has many.
		for _, par := range []int{1, 8, 32} {
			name := st.name + "/parallel"
			if par > 1 {
				name += fmt.Sprintf("x%d", par)
			}
			b.Run(name, func(b *testing.B) {
				b.SetParallelism(par)
				db.reportBatches(b, st, func() {
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() && create(b) {
						}
					})
				})
			})
		}
	}
}

// BenchBalance measures the read behind GET /v1/balance.
func BenchBalance(b *testing.B, db Bench) {
	for _, st := range benchStores(b, db) {
		read := func(b *testing.B) bool {
			_, err := st.eng.Balance(b.Context(), st.ws)
			if err != nil {
				b.Error(err)
			}
			return err == nil
		}
		b.Run(st.name+"/serial", func(b *testing.B) {
			for b.Loop() && read(b) {
			}
		})
		b.Run(st.name+"/parallel", func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() && read(b) {
				}
			})
		})
	}
}

// BenchCreatePayoutSpread creates payouts over 100 workspaces from 32
// callers: on PostgreSQL their balance rows lock apart, so committers run
// side by side.
func BenchCreatePayoutSpread(b *testing.B, db Bench) {
	var seq atomic.Int64
	for _, st := range benchStores(b, db) {
		var wss []string
		for i := range 100 {
			nw, err := st.eng.CreateWorkspace(b.Context(), payoutkit.CreateWorkspaceRequest{Name: "Spread", WebhookURL: "https://hooks.example/payoutkit"})
			if err != nil {
				b.Fatal(err)
			}
			fund(b, st.eng, nw.Workspace.ID, fmt.Sprintf("fund-%d", i), "1000000000.00")
			wss = append(wss, nw.Workspace.ID)
		}
		b.Run(st.name+"/parallelx32", func(b *testing.B) {
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := seq.Add(1)
					if _, _, err := st.eng.CreatePayout(b.Context(), wss[n%100], payoutRequest(fmt.Sprintf("po-%d", n), "0.01")); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchCreatePayoutControls measures accepted payouts with the
// workspace's payout controls off (the debit's controls flag alone), on (a
// daily limit and the address allowlist), and on with the 24-hour window
// full: an engine whose clock is a day ahead of the "on" runs', so that
// their payouts leave the window as the creates go, about one per create
// (a workspace's steady state once it has paid out for a day).
func BenchCreatePayoutControls(b *testing.B, db Bench) {
	var seq atomic.Int64
	for _, st := range benchStores(b, db) {
		eng := st.eng
		create := func(b *testing.B) bool {
			id := fmt.Sprintf("po-%d", seq.Add(1))
			_, _, err := eng.CreatePayout(b.Context(), st.ws, payoutRequest(id, "0.01"))
			if err != nil {
				b.Error(err)
			}
			return err == nil
		}
		run := func(mode string) {
			b.Run(st.name+"/"+mode+"/serial", func(b *testing.B) {
				db.reportBatches(b, st, func() {
					for b.Loop() && create(b) {
					}
				})
			})
			b.Run(st.name+"/"+mode+"/parallelx8", func(b *testing.B) {
				b.SetParallelism(8)
				db.reportBatches(b, st, func() {
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() && create(b) {
						}
					})
				})
			})
		}
		run("off")
		on, none := true, time.Duration(0)
		limit := payoutkit.LimitOf(100_000_000_00)
		if _, err := st.eng.SetPayoutPolicy(b.Context(), st.ws, payoutkit.PolicyPatch{CoolingOff: &none}, payoutkit.ActorCLI); err != nil {
			b.Fatal(err)
		}
		if _, err := st.eng.AddAddress(b.Context(), st.ws, "TRON", storetest.TronAddress, "", payoutkit.ActorCLI); err != nil {
			b.Fatal(err)
		}
		if _, err := st.eng.SetPayoutPolicy(b.Context(), st.ws, payoutkit.PolicyPatch{DailyLimit: &limit, AddressAllowlist: &on}, payoutkit.ActorCLI); err != nil {
			b.Fatal(err)
		}
		onStart := time.Now()
		run("on")
		// The clock of a day later, less the time the "on" runs took: the
		// window's edge passes their payouts as fast as they were created.
		ahead := payoutkit.DailyWindow - time.Since(onStart)
		eng, err := payoutkit.New(st.store, &payoutkit.Config{PasswordCost: bcrypt.MinCost,
			Now: func() time.Time { return time.Now().Add(ahead) }})
		if err != nil {
			b.Fatal(err)
		}
		run("on-window-full")
	}
}

// BenchHandoffBacklog measures handing off a backlog of payouts, as a
// dispatcher does when its processor comes back from an outage: claims of
// 16 while the 256 hand-offs claimed before them are in flight, each
// recorded as it finishes. One op is one payout claimed and recorded. The
// backlog is b.N payouts and a window more, so -benchtime Nx sets how far
// the drain goes: a claim that walks the queue from its head past the
// entries of recorded hand-offs costs more the further it has gone.
func BenchHandoffBacklog(b *testing.B, db Bench) {
	const window, claim = 256, 16
	var seq atomic.Int64
	for _, st := range benchStores(b, db) {
		b.Run(st.name, func(b *testing.B) {
			// Each run adds its own backlog: ids go on from the run before's.
			last := seq.Load() + int64(b.N+window+claim)
			var wg sync.WaitGroup
			for range 32 {
				wg.Go(func() {
					for n := seq.Add(1); n <= last && !b.Failed(); n = seq.Add(1) {
						if _, _, err := st.eng.CreatePayout(b.Context(), st.ws, payoutRequest(fmt.Sprintf("backlog-%d", n), "0.01")); err != nil {
							b.Error(err)
						}
					}
				})
			}
			wg.Wait()
			seq.Store(last)
			b.ResetTimer()
			var claiming time.Duration
			reportCPU(b, func() {
				var inFlight []payoutkit.PayoutLease
				for done := 0; done < b.N; {
					now := time.Now()
					ls, err := st.store.ClaimPayoutHandoffs(b.Context(), "bench", now, now.Add(time.Hour), claim)
					claiming += time.Since(now)
					if err != nil || len(ls) == 0 {
						b.Fatalf("claimed %d with %d of %d recorded: %v", len(ls), done, b.N, err)
					}
					inFlight = append(inFlight, ls...)
					// The oldest finish, together, as workers do.
					n := min(max(len(inFlight)-window, 0), b.N-done)
					var marks sync.WaitGroup
					for _, l := range inFlight[:n] {
						marks.Go(func() {
							if err := st.store.MarkPayoutHandedOff(b.Context(), l, now); err != nil {
								b.Error(err)
							}
						})
					}
					marks.Wait()
					inFlight, done = inFlight[n:], done+n
				}
			})
			b.ReportMetric(float64(claiming.Nanoseconds())/float64(b.N), "claim-ns/op")
		})
	}
}

// BenchCreatePayoutBatch measures batches of 100 and 1,000 payouts
// through the engine, all accepted, reporting the time per payout.
func BenchCreatePayoutBatch(b *testing.B, db Bench) {
	var seq atomic.Int64
	for _, st := range benchStores(b, db) {
		for _, size := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%s/%d", st.name, size), func(b *testing.B) {
				cpu := processCPU()
				for b.Loop() {
					n := seq.Add(1)
					req := payoutkit.CreatePayoutBatchRequest{BatchID: fmt.Sprint("batch-", n), Payouts: make([]payoutkit.CreatePayoutRequest, size)}
					for i := range req.Payouts {
						req.Payouts[i] = payoutRequest(fmt.Sprintf("po-%d-%d", n, i), "0.01")
					}
					if _, _, err := st.eng.CreatePayoutBatch(b.Context(), st.ws, req); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/payout")
				// CPU, not time: on a shared machine it is the figure that compares.
				b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N*size), "cpu-ns/payout")
			})
		}
	}
}
