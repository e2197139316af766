package evm

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/processor/evm/evmtest"
	"github.com/payoutkit/payoutkit/storage/postgres"
	"github.com/payoutkit/payoutkit/storage/sqlite"
)

// testKey is a fresh hot wallet key, its LocalKey and address.
func testKey(t testing.TB) (*ecdsa.PrivateKey, *LocalKey) {
	t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	lk, err := NewLocalKey(hex.EncodeToString(crypto.FromECDSA(k)))
	if err != nil {
		t.Fatal(err)
	}
	return k, lk
}

// deployData is the TestToken's creation code with its constructor's
// arguments (decimals, supply).
func deployData(t testing.TB, decimals uint8, supply *big.Int) []byte {
	t.Helper()
	code, err := hex.DecodeString(strings.TrimSpace(evmtest.TokenBin))
	if err != nil {
		t.Fatal(err)
	}
	code = append(code, common.LeftPadBytes([]byte{decimals}, 32)...)
	return append(code, common.LeftPadBytes(supply.Bytes(), 32)...)
}

// refuseData is the calldata of TestToken.refuse(who).
func refuseData(who common.Address) []byte {
	return append(crypto.Keccak256([]byte("refuse(address)"))[:4], common.LeftPadBytes(who.Bytes(), 32)...)
}

// sendRaw signs and sends a transaction from key outside the processor
// (a deployment when to is nil) and returns its hash.
func sendRaw(t testing.TB, ctx context.Context, b Backend, key *ecdsa.PrivateKey, to *common.Address, value *big.Int, data []byte, gas uint64) common.Hash {
	t.Helper()
	from := crypto.PubkeyToAddress(key.PublicKey)
	nonce, err := b.PendingNonceAt(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	id, err := b.ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h, err := b.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tip := big.NewInt(1_000_000_000)
	feeCap := new(big.Int).Add(new(big.Int).Mul(h.BaseFee, big.NewInt(2)), tip)
	tx, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{ChainID: id, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: gas, To: to, Value: value, Data: data}), types.LatestSignerForChainID(id), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	return tx.Hash()
}

// testEngine is an engine over a real store with a funded workspace, and
// the same database as a *bun.DB for the processor.
type testEngine struct {
	*payoutkit.Engine
	ws    string
	db    *bun.DB
	store payoutkit.Store
}

// newSQLiteEngine makes the engine's SQLite database in a temporary
// directory, and opens it for the processor as a program would.
func newSQLiteEngine(t testing.TB, coins []payoutkit.Coin) *testEngine {
	t.Helper()
	path := filepath.Join(t.TempDir(), "payoutkit.db")
	store, err := sqlite.Open(context.Background(), path, sqlite.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	db, err := OpenDSN(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return fundedEngine(t, store, db, coins)
}

// newPostgresEngine is newSQLiteEngine on a fresh PostgreSQL schema, or a
// skip without PAYOUTKIT_TEST_POSTGRES.
func newPostgresEngine(t testing.TB, coins []payoutkit.Coin) *testEngine {
	t.Helper()
	dsn := postgresSchema(t)
	store, db := openPostgres(t, dsn)
	return fundedEngine(t, store, db, coins)
}

// postgresSchema makes a schema of the test's own in the database of
// PAYOUTKIT_TEST_POSTGRES (a skip without it) and returns a DSN using it.
func postgresSchema(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("PAYOUTKIT_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("PAYOUTKIT_TEST_POSTGRES is not set")
		}
		t.Skip("PAYOUTKIT_TEST_POSTGRES is not set")
	}
	ctx := context.Background()
	schema := "evm_" + strings.ToLower(hex.EncodeToString(crypto.Keccak256([]byte(t.Name() + time.Now().String()))[:6]))
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// openPostgres opens a store and the processor's *bun.DB on dsn, closed at
// the test's end.
func openPostgres(t testing.TB, dsn string) (payoutkit.Store, *bun.DB) {
	t.Helper()
	store, err := postgres.Open(context.Background(), dsn, postgres.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	db, err := OpenDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return store, db
}

func fundedEngine(t testing.TB, store payoutkit.Store, db *bun.DB, coins []payoutkit.Coin) *testEngine {
	t.Helper()
	ctx := context.Background()
	eng, err := payoutkit.New(store, &payoutkit.Config{Coins: coins, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	nw, err := eng.CreateWorkspace(ctx, payoutkit.CreateWorkspaceRequest{Name: "EVM test"})
	if err != nil {
		t.Fatal(err)
	}
	ws := nw.Workspace.ID
	if _, _, err := eng.CreateOrder(ctx, ws, payoutkit.CreateOrderRequest{OrderID: "top-up", Amount: "1000000.00"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.MarkOrderPaid(ctx, ws, "top-up"); err != nil {
		t.Fatal(err)
	}
	return &testEngine{Engine: eng, ws: ws, db: db, store: store}
}

// payout creates a payout and returns its Submission as the hand-off loop
// would give it.
func (e *testEngine) payout(t testing.TB, id, amount, asset, network string, to common.Address) payoutkit.Submission {
	return e.payoutTo(t, id, amount, asset, network, to.Hex())
}

// payoutTo is payout to an address of any network.
func (e *testEngine) payoutTo(t testing.TB, id, amount, asset, network, to string) payoutkit.Submission {
	t.Helper()
	ctx := context.Background()
	p, _, err := e.CreatePayout(ctx, e.ws, payoutkit.CreatePayoutRequest{PayoutID: id, Amount: amount, Asset: asset, Network: network, Address: to, PayerID: "cust-1"})
	if err != nil {
		t.Fatal(err)
	}
	coins, _ := e.Coins(ctx, e.ws)
	var coin payoutkit.Coin
	for _, c := range coins {
		if strings.EqualFold(c.Ticker, asset) && strings.EqualFold(c.Network, network) {
			coin = c
		}
	}
	return payoutkit.Submission{Payout: p, Coin: coin, IdempotencyKey: payoutkit.IdempotencyKey(e.ws, id)}
}

func (e *testEngine) status(t testing.TB, id string) payoutkit.Payout {
	t.Helper()
	p, err := e.Payout(context.Background(), e.ws, id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *testEngine) available(t testing.TB) payoutkit.Amount {
	t.Helper()
	b, err := e.Balance(context.Background(), e.ws)
	if err != nil {
		t.Fatal(err)
	}
	return b.Available
}

// count counts rows of a processor table.
func count(t testing.TB, db *bun.DB, table, where string, args ...any) int {
	t.Helper()
	q := db.NewSelect().Table(table)
	if where != "" {
		q = q.Where(where, args...)
	}
	n, err := q.Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func isNotDue(err error) bool { return errors.Is(err, payoutkit.ErrNotDue) }

func asNotDue(err error, target **payoutkit.NotDueError) bool { return errors.As(err, target) }

// webhooks collects the event types delivered to the workspace's webhook
// URL, by payout id.
type webhooks struct {
	mu     sync.Mutex
	events map[string][]string
}

func (w *webhooks) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var ev struct {
		Type string `json:"type"`
		Data struct {
			PayoutID string `json:"payout_id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&ev); err == nil {
		w.mu.Lock()
		w.events[ev.Data.PayoutID] = append(w.events[ev.Data.PayoutID], ev.Type)
		w.mu.Unlock()
	}
	io.WriteString(rw, "success")
}

func (w *webhooks) has(payoutID, typ string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.events[payoutID], typ)
}

// run starts an engine over e's store with proc as its processor, both
// loops running (hand-off, webhook delivery, the watcher), and webhooks
// delivered to the returned collector; all stop at the test's end.
func (e *testEngine) run(t testing.TB, proc *Processor) *webhooks {
	t.Helper()
	ctx := context.Background()
	hooks := &webhooks{events: map[string][]string{}}
	srv := httptest.NewServer(hooks)
	t.Cleanup(srv.Close)
	if _, err := e.SetWebhookURL(ctx, e.ws, srv.URL, payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	eng, err := payoutkit.New(e.store, &payoutkit.Config{Logger: quiet, Processor: proc,
		Delivery: payoutkit.DeliveryConfig{Notifier: &payoutkit.HTTPNotifier{AllowPrivate: true, Timeout: time.Second}, Lease: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := proc.Start(ctx, eng); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		proc.Stop(ctx)
		eng.Stop(ctx)
	})
	return hooks
}
