// Package payoutkit is an embeddable payout engine: a USD balance per
// workspace, credited by paid orders and debited by payouts (withdrawals)
// in a crypto asset on a network, with signed webhook events for every
// change.
//
// Build an [Engine] with [New] over a [Store] (storage/memstore for tests,
// storage/sqlite or storage/postgres) and run its loops between
// [Engine.Start] and [Engine.Stop]:
//
//	engine, err := payoutkit.New(store, &payoutkit.Config{Processor: rail})
//	if err != nil { ... }
//	if err := engine.Start(ctx); err != nil { ... }
//	defer engine.Stop(context.WithoutCancel(ctx))
//
// The loops hand every submitted payout to the [Processor] (the rail:
// processor/sandbox moves no money, processor/evm pays on EVM networks),
// which settles it with [Engine.CompletePayout] or [Engine.FailPayout]
// (credited back), and deliver every event to the workspace's webhook URL,
// signed ([Sign], [VerifySignature]), at least once and in order per
// payout. Engines in several processes may share one store.
//
// [Engine.CreatePayout] checks a request against the coin list and the
// workspace's [PayoutPolicy], then debits the balance in one atomic change
// with its ledger entry and its event. The store enforces the money rules
// (no overdraft, one payout per payout_id) in the database, so they hold
// across instances. Every refusal is an [*Error] with the contract's
// [Code]; match it with errors.Is against [ErrInvalidInput] and the others.
//
// A change of keys, webhooks or controls takes who acts as an [Actor]: an
// API key ([KeyActor]), the command line ([ActorCLI]) or a staff user
// authorised by package staff, which holds the portal's sign-in, sessions,
// two-factor sign-in and roles. Package httpserver serves /v1 over the
// [Service] interface, package portal the staff pages, and examples/server
// puts them together. The runnable examples show each step.
//
// # For store implementers
//
// A store implements [Store], proved by package storage/storetest
// (storetest.RunStaff proves a staff.Store). The records that travel
// between the engine and its store ([APIKey], [StaffUser], [LedgerEntry],
// [Audit], [PayoutLease], [PolicyCheck] and the like) are for store
// implementers; a program embedding the engine does not need them.
package payoutkit

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"time"

	"github.com/payoutkit/payoutkit/internal/cursor"
	"github.com/payoutkit/payoutkit/seal"
)

// Service is everything the HTTP API and embedding programs ask of the
// engine. *Engine implements it; wrap or replace it to add behaviour (for
// example, metrics) without touching the transport.
type Service interface {
	CreatePayout(ctx context.Context, workspaceID string, req CreatePayoutRequest) (p Payout, replayed bool, err error)
	CreatePayoutBatch(ctx context.Context, workspaceID string, req CreatePayoutBatchRequest) (b PayoutBatch, replayed bool, err error)
	PayoutBatch(ctx context.Context, workspaceID, batchID string) (PayoutBatch, error)
	Payout(ctx context.Context, workspaceID, payoutID string) (Payout, error)
	CompletePayout(ctx context.Context, workspaceID, payoutID string, c Completion) (Payout, error)
	ListPayouts(ctx context.Context, workspaceID string, req ListPayoutsRequest) (List[Payout], error)
	FailPayout(ctx context.Context, workspaceID, payoutID, reason string) (Payout, error)
	Balance(ctx context.Context, workspaceID string) (Balance, error)
	Coins(ctx context.Context, workspaceID string) ([]Coin, error)
	CreateOrder(ctx context.Context, workspaceID string, req CreateOrderRequest) (o Order, replayed bool, err error)
	Order(ctx context.Context, workspaceID, orderID string) (Order, error)
	MarkOrderPaid(ctx context.Context, workspaceID, orderID string) (Order, error)
	ListOrders(ctx context.Context, workspaceID string, req ListOrdersRequest) (List[Order], error)
	// Authenticate and AuthenticateBalance are Engine's. GET /v1/balance
	// calls AuthenticateBalance alone: a wrapper that changes Balance or
	// Authenticate must change it too.
	Authenticate(ctx context.Context, authorization string, client netip.Addr) (Principal, error)
	AuthenticateBalance(ctx context.Context, authorization string, client netip.Addr) (Principal, Balance, error)
}

// Config configures an Engine. The zero value is usable.
type Config struct {
	// Coins are the payout coins offered to every workspace; each coin's
	// network needs an address validator. Defaults to DefaultCoins().
	Coins []Coin
	// AddressValidators adds or replaces address validators by network,
	// for networks that package address does not know. Defaults to none.
	AddressValidators map[string]func(address string) error
	// Processor is the rail that Start's loops hand every submitted
	// payout to. Defaults to none: payouts stay submitted until settled
	// by a call.
	Processor Processor
	// Delivery configures the loops that Start runs. Defaults to the zero
	// DeliveryConfig.
	Delivery DeliveryConfig
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// CursorKey keys the HMAC that binds list cursors to their workspace
	// and filter; engines of one deployment share it. Defaults to a fixed
	// key, with which a forged cursor yields at most another position in
	// the forger's own listing: set 32 random bytes to rule that out.
	CursorKey []byte
	// Logger receives the engine's logs. Defaults to slog.Default().
	Logger *slog.Logger
	// PasswordCost is the bcrypt cost of a new workspace's first staff
	// password. Defaults to 12.
	PasswordCost int
	// SecretKeys seals webhook secrets at rest with its current key and
	// opens those sealed with any of its keys; plain ones still read.
	// Defaults to nil: secrets are stored plain.
	SecretKeys *seal.KeyRing
	// ObservePayout, when set, is told of every payout this engine
	// created (not replayed) or settled, once stored, for metrics. It runs
	// on the caller's goroutine, concurrently, and must return quickly.
	// Defaults to nil.
	ObservePayout func(p Payout)
}

func (c *Config) withDefaults() *Config {
	out := *c
	if out.Coins == nil {
		out.Coins = DefaultCoins()
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	if len(out.CursorKey) == 0 {
		out.CursorKey = cursor.DefaultKey[:]
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	if out.PasswordCost == 0 {
		out.PasswordCost = 12
	}
	return &out
}

// Engine is the payout engine. It is safe for concurrent use, and engines in
// several processes may share one store. A method that takes an Actor records
// its change in the security log as the actor's, in the same transaction.
type Engine struct {
	store     Store
	coins     coinTable
	processor Processor
	cursorKey []byte
	now       func() time.Time
	log       *slog.Logger
	pwCost    int
	// keys seals and opens webhook secrets; nil stores them plain.
	keys *seal.KeyRing
	// observePayout is Config.ObservePayout, or nil.
	observePayout func(Payout)
	// delivery is Config.Delivery with its defaults, for Start.
	delivery *DeliveryConfig
	// loops is what Start runs; nil on an engine from WithStore.
	loops *loops
}

var _ Service = (*Engine)(nil)

// WithStore returns an engine with e's configuration over store, such as one
// bound to the caller's transaction (sqlite.Store.WithTx,
// postgres.Store.WithTx), so that its changes commit or roll back with the
// caller's writes:
//
//	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
//		_, _, err := engine.WithStore(store.WithTx(tx)).CreatePayout(ctx, wsID, req)
//		return err
//	})
//
// Config.ObservePayout hears of such a payout before the commit. The
// returned engine runs no loops (Start refuses); e's find the committed work.
func (e *Engine) WithStore(store Store) *Engine {
	out := *e
	out.store = store
	out.loops = nil
	return &out
}

// New returns an engine over store. cfg may be nil for the defaults.
func New(store Store, cfg *Config) (*Engine, error) {
	if store == nil {
		return nil, errors.New("payoutkit: New needs a store")
	}
	if cfg == nil {
		cfg = &Config{}
	}
	cfg = cfg.withDefaults()
	coins, err := newCoinTable(cfg.Coins, cfg.AddressValidators)
	if err != nil {
		return nil, err
	}
	delivery := cfg.Delivery
	if delivery.Logger == nil {
		delivery.Logger = cfg.Logger
	}
	dcfg := delivery.withDefaults()
	if err := dcfg.validate(); err != nil {
		return nil, err
	}
	return &Engine{
		store:         store,
		coins:         coins,
		processor:     cfg.Processor,
		cursorKey:     cfg.CursorKey,
		now:           cfg.Now,
		log:           cfg.Logger,
		pwCost:        cfg.PasswordCost,
		keys:          cfg.SecretKeys,
		observePayout: cfg.ObservePayout,
		delivery:      dcfg,
		loops:         &loops{},
	}, nil
}

// clock returns the current time as stored: UTC, at microsecond precision,
// so that a value read back from any database equals the value written.
func (e *Engine) clock() time.Time { return e.now().UTC().Truncate(time.Microsecond) }
