// Package payoutkit is an embeddable payout engine: a USD balance per
// workspace, credited by paid orders and debited by payouts (withdrawals)
// in a crypto asset on a network, with signed webhook events for every
// change.
//
// The names a program uses come first below; the rest of the package (the
// Store interface and the records that travel between the engine and a
// store) is for those who write a store: see For store implementers below.
//
// # Embedding
//
// Build an [Engine] with [New] over a [Store] (storage/memstore for tests,
// storage/sqlite or storage/postgres), start its loops with
// [Engine.Start], and stop them with [Engine.Stop]:
//
//	engine, err := payoutkit.New(store, &payoutkit.Config{Processor: rail})
//	if err != nil { ... }
//	if err := engine.Start(ctx); err != nil { ... }
//	defer engine.Stop(context.WithoutCancel(ctx))
//
// [Config] has a default for every field: the [Processor] that sends payouts
// on a real rail (package processor/sandbox's moves no money, for tests and
// demos; processor/evm pays out on EVM networks), the coin list ([Coin]),
// the [seal.KeyRing] that seals webhook secrets at rest (package seal), and
// the delivery loop's [DeliveryConfig]. The loops deliver every webhook and
// hand every payout to the Processor; engines in several processes may
// share one store.
//
// The runnable examples show each step: Example (a workspace funded and a
// payout made and settled), [Engine.Start]'s (the loops with a processor),
// [Engine.CreatePayout]'s (a payout the balance does not cover),
// [Engine.Authenticate]'s, [Engine.CreateAPIKey]'s and
// [Engine.ListPayouts]'s.
//
// # The main flow
//
// For one workspace:
//
//  1. [Engine.CreateWorkspace] makes the workspace, its first API key (shown
//     once) and its webhook signing secret.
//  2. [Engine.CreateOrder] and [Engine.MarkOrderPaid] credit the available
//     balance ([Engine.Balance]).
//  3. [Engine.CreatePayout] validates the request against the coin list
//     (asset, network, address, limits) and debits the balance in one atomic
//     change with its ledger entry and its payout.submitted event. The same
//     payout_id again is a replay (the stored payout, nothing changed); a
//     payout the balance does not cover is [ErrInsufficientBalance].
//  4. The Processor receives each submitted payout from the engine's hand-off
//     loop as a [Submission], with an IdempotencyKey to pass to its rail, and
//     settles it through the [Settler] it is given: [Engine.CompletePayout]
//     (the money left) or [Engine.FailPayout] (credited back).
//  5. The engine's delivery loop sends every event to the workspace's webhook
//     URL, signed ([Sign], [VerifySignature]), at least once, in order per
//     payout; [Engine.Payout] and [Engine.ListPayouts] serve those who poll
//     instead, and a receiver decodes a [WebhookEvent].
//
// The store enforces the money invariants (no overdraft, one payout per
// payout_id, every balance change with its ledger entry and event) in the
// database itself, so they hold across goroutines and server instances.
//
// # Payout controls
//
// Each workspace has a [PayoutPolicy] ([Engine.SetPayoutPolicy]): a payout
// limit, a 24-hour limit, an approval threshold and an address allowlist
// with a cooling-off, all off by default. The store judges every payout
// against it in the transaction that debits the balance, after the replay
// check and before the balance, so that the limits hold across goroutines
// and instances. [Engine.AddAddress], [Engine.RemoveAddress] and
// [Engine.Addresses] keep the address book; [Engine.ApprovePayout] and
// [Engine.RejectPayout] decide held payouts; every change is appended to
// the workspace's security log ([Engine.SecurityLog]) with its [Actor].
// API keys carry [Scope]s and address allowlists ([Engine.CreateAPIKey]).
//
// # Errors
//
// Every refusal is an [*Error] with the contract's [Code] ([CodeOf] finds it
// in a wrapped error); compare with errors.Is against [ErrInvalidInput],
// [ErrNotFound], [ErrConflict], [ErrInsufficientBalance] and the others.
//
// # Around the engine
//
// Package httpserver serves the /v1 API over an Engine (through the
// [Service] interface, which a program may wrap), package staff is the
// identity of the staff who sign in to the portal (passwords, sessions,
// two-factor sign-in, roles), package portal their pages, and
// examples/server puts them together as a standalone server. An engine
// action takes who acts as an [Actor] value: an API key ([KeyActor]), the
// command line ([ActorCLI]) or a staff user whom package staff has
// authorised.
//
// # For store implementers
//
// A store implements [Store], the union of [WorkspaceStore], [KeyStore],
// [OrderStore], [PayoutStore], [LedgerStore], [Outbox] and [ControlStore],
// with [KeyBalanceReader] and [WorkNotifier]; package storage/storetest is
// the conformance suite that proves one. A store that keeps staff logins
// for the portal implements staff.Store too, with the staff records below
// (storetest.RunStaff). These types
// are the records and hooks that travel between the engine and its store,
// and a program embedding the engine does not need them:
//
//   - keys: [APIKey];
//   - staff logins: [StaffUser], [StaffSession], [SignInFailures],
//     [StaffTOTP], [Role];
//   - money: [LedgerEntry], [LedgerKind], [Audit], [AuditError];
//   - the payout hand-off: [PayoutLease], [NotDueError], [IdempotencyKey];
//   - the outbox: [Event], [DeliveryState], [DeliveryAttempt],
//     [DeliveryResult], [OutboxHealth];
//   - the payout controls: [PolicyCheck], [AddressKey].
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
	// Authenticate resolves an Authorization header value, used from the
	// client address, to the key's principal (see Engine.Authenticate).
	Authenticate(ctx context.Context, authorization string, client netip.Addr) (Principal, error)
	// AuthenticateBalance is Authenticate followed by Balance of the key's
	// workspace, which the engine reads together in one query; GET
	// /v1/balance calls it alone. A wrapper that changes Balance or
	// Authenticate changes it too, and one that embeds *Engine keeps the
	// one-query read.
	AuthenticateBalance(ctx context.Context, authorization string, client netip.Addr) (Principal, Balance, error)
}

// Config configures an Engine. The zero value is usable.
type Config struct {
	// Coins is the list of payout coins offered to every workspace. Each coin's
	// network needs an address validator, from package address or from
	// AddressValidators. Defaults to DefaultCoins().
	Coins []Coin
	// AddressValidators adds or replaces address validators by network name,
	// for coins on networks that package address does not know. Defaults to none.
	AddressValidators map[string]func(address string) error
	// Processor receives each accepted payout to send it on the real rail:
	// once Start has run the engine's loops, the hand-off loop gives it
	// every submitted payout under a lease; it settles the
	// payout later through CompletePayout or FailPayout. Defaults to none:
	// no payout is handed over, and payouts stay submitted until settled by
	// a call.
	Processor Processor
	// Delivery configures the loops that Start runs: webhook delivery
	// (notifier, retries, retention, leases) and the payouts' hand-off.
	// Defaults to the zero DeliveryConfig, whose every field has a default.
	Delivery DeliveryConfig
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// CursorKey keys the HMAC that makes list cursors tamper-evident and
	// binds them to their workspace and filter. Engines that serve one
	// deployment must share it, so that a cursor from one instance works on
	// the next. Defaults to a fixed key: cursors are still refused when
	// changed, or used with another workspace or filter, but someone who
	// knows the key could forge one, which yields at most another position
	// in their own workspace's listing. Set a secret of 32 random bytes to
	// rule that out.
	CursorKey []byte
	// Logger receives the engine's logs. Defaults to slog.Default().
	Logger *slog.Logger
	// PasswordCost is the bcrypt cost of the password of a workspace's
	// first staff user (CreateWorkspace). Defaults to 12; tests may lower it
	// to bcrypt.MinCost.
	PasswordCost int
	// SecretKeys seals every workspace's webhook signing secret at rest
	// (AES-256-GCM, bound to the workspace id) with its current key, and
	// opens values sealed with any of its keys. Plain secrets stored before
	// sealing was turned on still read; Engine.ResealWebhookSecrets seals
	// them. Defaults to nil: secrets are stored plain, and a sealed one read
	// back is an error matching seal.ErrKeyMissing.
	SecretKeys *seal.KeyRing
	// ObservePayout, when set, is told of every payout change this engine
	// made, once it is stored, for metrics: p is the payout after the
	// change, submitted when CreatePayout created it (not for a replay),
	// completed or failed when this engine settled it (CompletePayout,
	// FailPayout, a processor's settlement, the sandbox's by hand). Changes refused or made by another engine on the same
	// store are not reported. It runs on the caller's goroutine,
	// concurrently, and must return quickly. Defaults to nil.
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

// Engine is the payout engine. It is safe for concurrent use, and several
// engines (in one process or many) may share one store. Its background
// work (webhook delivery, the hand-off to the processor) runs between
// Start and Stop.
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

// WithStore returns an engine with e's configuration over store: over a
// store bound to the caller's database transaction (sqlite.Store.WithTx,
// postgres.Store.WithTx), its payouts, orders and settlements commit or
// roll back with the caller's own writes:
//
//	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
//		// ... the program's own writes in tx ...
//		_, _, err := engine.WithStore(store.WithTx(tx)).CreatePayout(ctx, wsID, req)
//		return err
//	})
//
// Config.ObservePayout hears of a payout made in a transaction when it is
// stored, before the transaction commits (or rolls back). The returned
// engine runs no loops of its own (Start refuses): e's loops find the
// committed work.
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
