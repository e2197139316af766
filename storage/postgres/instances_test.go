package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/crypto/bcrypt"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/storetest"
)

func newEngine(t testing.TB, s payoutkit.Store) *payoutkit.Engine {
	t.Helper()
	eng, err := payoutkit.New(s, &payoutkit.Config{PasswordCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

func fund(t testing.TB, eng *payoutkit.Engine, ws, id, amount string) {
	t.Helper()
	if _, _, err := eng.CreateOrder(t.Context(), ws, payoutkit.CreateOrderRequest{OrderID: id, Amount: amount}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.MarkOrderPaid(t.Context(), ws, id); err != nil {
		t.Fatal(err)
	}
}

func payoutRequest(id, amount string) payoutkit.CreatePayoutRequest {
	return payoutkit.CreatePayoutRequest{
		PayoutID: id, Amount: amount, Asset: "USDT", Network: "TRON", Address: storetest.TronAddress, PayerID: "cust-1",
	}
}

// Two instances (two pools, two engines) on one PostgreSQL database race
// payouts against one balance: the database, not a process, refuses the
// overdraft.
func TestPostgresInstancesRace(t *testing.T) {
	dsn := pgtest.Postgres(t)
	stores := []*postgres.Store{openPostgres(t, dsn), openPostgres(t, dsn)}
	engines := make([]*payoutkit.Engine, len(stores))
	for i, s := range stores {
		t.Cleanup(func() { s.Close() })
		engines[i] = newEngine(t, s)
	}
	nw, err := engines[0].CreateWorkspace(t.Context(), payoutkit.CreateWorkspaceRequest{Name: "Race", WebhookURL: "https://hooks.example/payoutkit"})
	if err != nil {
		t.Fatal(err)
	}
	ws := nw.Workspace.ID
	fund(t, engines[1], ws, "fund", "100.00")

	const perEngine = 250
	var accepted, refused atomic.Int64
	storetest.Race(len(engines)*perEngine, func(n int) {
		e, i := n/perEngine, n%perEngine
		_, _, err := engines[e].CreatePayout(t.Context(), ws, payoutRequest(fmt.Sprintf("po-%d-%d", e, i), "1.00"))
		switch {
		case err == nil:
			accepted.Add(1)
		case errors.Is(err, payoutkit.ErrInsufficientBalance):
			refused.Add(1)
		default:
			t.Errorf("payout %d-%d: %v", e, i, err)
		}
	})
	if accepted.Load() != 100 || refused.Load() != 2*perEngine-100 {
		t.Fatalf("accepted %d, refused %d; want 100, %d", accepted.Load(), refused.Load(), 2*perEngine-100)
	}
	for _, s := range stores {
		a, err := s.Audit(t.Context(), ws)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
		if a.Available != 0 || a.InProgress != 100_00 {
			t.Fatalf("audit %+v", a)
		}
	}
}

// Two instances, each splitting the workspaces between three committers as
// a larger machine does, race payouts over five workspaces at once: every
// batch holds several workspaces' balance rows, and batches of the two
// instances take them in the same order, so none waits for the other in a
// cycle; each workspace pays out exactly what it holds.
func TestPostgresInstancesRaceAcrossWorkspaces(t *testing.T) {
	dsn := pgtest.Postgres(t)
	var engines []*payoutkit.Engine
	var stores []*postgres.Store
	for range 2 {
		s, err := postgres.Open(t.Context(), dsn, postgres.WithWorkspaceCommitters(3))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
		engines = append(engines, newEngine(t, s))
	}
	const workspaces, funded, perWorkspace = 5, 40, 60 // 60 tries of 1.00 against 40.00
	var ids []string
	for w := range workspaces {
		nw, err := engines[0].CreateWorkspace(t.Context(), payoutkit.CreateWorkspaceRequest{Name: fmt.Sprintf("Spread %d", w)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, nw.Workspace.ID)
		fund(t, engines[w%2], nw.Workspace.ID, "fund", fmt.Sprintf("%d.00", funded))
	}
	accepted := make([]atomic.Int64, workspaces)
	storetest.Race(workspaces*perWorkspace, func(n int) {
		w, i := n/perWorkspace, n%perWorkspace
		_, _, err := engines[(w+i)%2].CreatePayout(t.Context(), ids[w], payoutRequest(fmt.Sprintf("po-%d", i), "1.00"))
		switch {
		case err == nil:
			accepted[w].Add(1)
		case !errors.Is(err, payoutkit.ErrInsufficientBalance):
			t.Errorf("workspace %d payout %d: %v", w, i, err)
		}
	})
	for w, ws := range ids {
		if got := accepted[w].Load(); got != funded {
			t.Errorf("workspace %d: %d payouts accepted, want %d", w, got, funded)
		}
		a, err := stores[w%2].Audit(t.Context(), ws)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
		if a.Available != 0 || a.InProgress != funded*100 {
			t.Errorf("workspace %d: audit %+v", w, a)
		}
	}
}

// Dispatchers on two instances claiming one outbox at once never hold the
// same event, and a payout's later event is not claimed while its earlier
// one is pending.
func TestPostgresInstancesClaim(t *testing.T) {
	dsn := pgtest.Postgres(t)
	a, b := openPostgres(t, dsn), openPostgres(t, dsn)
	t.Cleanup(func() { a.Close(); b.Close() })
	eng := newEngine(t, a)
	nw, err := eng.CreateWorkspace(t.Context(), payoutkit.CreateWorkspaceRequest{Name: "Claim", WebhookURL: "https://hooks.example/payoutkit"})
	if err != nil {
		t.Fatal(err)
	}
	ws := nw.Workspace.ID
	fund(t, eng, ws, "fund", "1000.00")
	const n = 40
	for i := range n {
		id := fmt.Sprintf("po-%d", i)
		if _, _, err := eng.CreatePayout(t.Context(), ws, payoutRequest(id, "1.00")); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.CompletePayout(t.Context(), ws, id, payoutkit.Completion{TxID: "tx"}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().Add(time.Minute)
	var mu sync.Mutex
	owners := map[string]string{}
	var wg sync.WaitGroup
	for i, s := range []*postgres.Store{a, b, a, b} {
		owner := fmt.Sprintf("d%d", i)
		wg.Go(func() {
			evs, err := s.ClaimEvents(t.Context(), owner, now, now.Add(time.Minute), 15, nil)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, ev := range evs {
				if prev, dup := owners[ev.ID]; dup {
					t.Errorf("%s claimed by %s and %s", ev.ID, prev, owner)
				}
				owners[ev.ID] = owner
				if ev.Type == payoutkit.EventPayoutCompleted {
					t.Errorf("%s's completion claimed while its submission is pending", ev.Subject)
				}
			}
		})
	}
	wg.Wait()
	// The order.paid event and the 40 submissions: 41 due events.
	if len(owners) != n+1 {
		t.Fatalf("claimed %d events; want %d", len(owners), n+1)
	}
}

// A store whose schema an administrator migrated runs with the privileges
// to read and write rows, and no more: Open does not need CREATE.
func TestPostgresLeastPrivilege(t *testing.T) {
	admin := pgtest.Postgres(t)
	openPostgres(t, admin).Close()
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	role := "app_" + schema
	conn, err := pgx.Connect(t.Context(), admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "CREATE ROLE "+role+" LOGIN"); err != nil {
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "42501" {
			t.Skipf("the test role may not create roles: %v", err)
		}
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"GRANT USAGE ON SCHEMA " + schema + " TO " + role,
		"GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA " + schema + " TO " + role,
		"GRANT USAGE ON ALL SEQUENCES IN SCHEMA " + schema + " TO " + role,
	} {
		if _, err := conn.Exec(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP OWNED BY "+role)
		_, _ = c.Exec(context.Background(), "DROP ROLE "+role)
	})
	u.User = url.User(role)
	s := openPostgres(t, u.String())
	defer s.Close()
	eng := newEngine(t, s)
	nw, err := eng.CreateWorkspace(t.Context(), payoutkit.CreateWorkspaceRequest{Name: "App", WebhookURL: "https://hooks.example/payoutkit"})
	if err != nil {
		t.Fatal(err)
	}
	fund(t, eng, nw.Workspace.ID, "fund", "10.00")
	if _, _, err := eng.CreatePayout(t.Context(), nw.Workspace.ID, payoutRequest("po-1", "1.00")); err != nil {
		t.Fatal(err)
	}
}

// Several stores on one database (as several instances starting at once)
// bootstrap it: one workspace is created, and one of them says so.
func TestBootstrapOnceAcrossStores(t *testing.T) {
	dsns := map[string]string{"Postgres": pgtest.FreshSchema(t, pgtest.PostgresServer(t))}
	for name, dsn := range dsns {
		t.Run(name, func(t *testing.T) {
			stores := make([]*postgres.Store, 4)
			for i := range stores {
				stores[i] = openAt(t, dsn)
			}
			var created atomic.Int32
			var wg sync.WaitGroup
			for _, s := range stores {
				wg.Go(func() {
					_, ok, err := newEngine(t, s).Bootstrap(t.Context())
					if err != nil {
						t.Error(err)
					}
					if ok {
						created.Add(1)
					}
				})
			}
			wg.Wait()
			if ids, _ := stores[0].WorkspaceIDs(t.Context()); created.Load() != 1 || len(ids) != 1 {
				t.Fatalf("%d bootstraps reported, workspaces %v; want 1 and 1", created.Load(), ids)
			}
		})
	}
}

func openAt(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Two instances (two pools, two engines) on one PostgreSQL database race
// 1,000 payouts against one workspace's daily limit: the database, not a
// process, keeps the 24-hour sum exact, never overshooting it.
func TestPostgresInstancesDailyLimitRace(t *testing.T) {
	dsn := pgtest.Postgres(t)
	storetest.RaceDailyLimit(t, openPostgres(t, dsn), openPostgres(t, dsn))
}

// A change of the payout controls made through one instance takes effect
// on the other's next create.
func TestPostgresControlsAcrossInstances(t *testing.T) {
	dsn := pgtest.Postgres(t)
	storetest.ControlsAcrossStores(t, openPostgres(t, dsn), openPostgres(t, dsn))
}
