package payoutkit

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/payoutkit/payoutkit/internal/delivery"
	"github.com/payoutkit/payoutkit/internal/logbudget"
	"github.com/payoutkit/payoutkit/seal"
)

// DeliveryConfig configures the loops that Engine.Start runs: webhook
// delivery, and the hand-off of payouts to Config.Processor. Work is claimed
// under a lease, so several processes may share one store and an owner that
// dies lets its leases expire. The zero value is usable.
type DeliveryConfig struct {
	// Notifier delivers one event. Defaults to a new HTTPNotifier.
	Notifier Notifier
	// Owner names this engine in its leases; engines sharing a store need
	// distinct ones. Defaults to hostname-pid-random.
	Owner string
	// Clock tells the loops the time. Defaults to the system clock.
	Clock Clock
	// PollInterval is how often the loops poll. Defaults to 1 s.
	PollInterval time.Duration
	// Lease is how long claimed work stays reserved to this engine; one
	// attempt is cut off after half of it. Defaults to 1 min.
	Lease time.Duration
	// BatchSize caps one claim. Defaults to 100.
	BatchSize int
	// Concurrency is how many deliveries run at once, and separately how
	// many hand-offs. Defaults to 256.
	Concurrency int
	// MaxPerWorkspace caps the deliveries to one workspace at once, so that
	// a receiver that hangs leaves workers to the others. Defaults to half
	// of Concurrency (at least 1).
	MaxPerWorkspace int
	// RetryDelays are the waits after each failed attempt; the event fails
	// after len(RetryDelays)+1 attempts. Defaults to RetryDelays().
	RetryDelays []time.Duration
	// Jitter adds up to this fraction of each retry delay at random; a
	// negative value turns it off. Defaults to 0.1.
	Jitter float64
	// Retention is how long delivered events and their attempts are kept;
	// nothing else is ever deleted. A negative value keeps everything.
	// Defaults to DefaultRetention.
	Retention time.Duration
	// RetentionInterval is how often the engine prunes. Defaults to 10 min.
	RetentionInterval time.Duration
	// Logger receives the loops' logs. Defaults to Config.Logger.
	Logger *slog.Logger
	// ObserveAttempt, when set, is told of every attempt this engine
	// recorded, with the event's delivery state after it, for metrics. It
	// runs on the delivery workers, concurrently, and must return quickly.
	// Defaults to nil.
	ObserveAttempt func(a DeliveryAttempt, next EventDelivery)
}

// DefaultRetention is DeliveryConfig.Retention's default.
const DefaultRetention = 30 * 24 * time.Hour

// pruneBatch is how many events one pruning statement deletes: small, so
// that it never holds the write lock for long.
const pruneBatch = 500

// RetryDelays returns the contract's retry schedule: the waits after the
// first through eighth failed attempts (10 s to 24 h).
func RetryDelays() []time.Duration {
	return []time.Duration{
		10 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute,
		2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
	}
}

func (c *DeliveryConfig) withDefaults() *DeliveryConfig {
	out := *c
	if out.Notifier == nil {
		out.Notifier = &HTTPNotifier{}
	}
	if out.Owner == "" {
		out.Owner = defaultOwner()
	}
	if out.Clock == nil {
		out.Clock = systemClock{}
	}
	if out.PollInterval == 0 {
		out.PollInterval = time.Second
	}
	if out.Lease == 0 {
		out.Lease = time.Minute
	}
	if out.BatchSize == 0 {
		out.BatchSize = 100
	}
	if out.Concurrency == 0 {
		out.Concurrency = 256
	}
	if out.MaxPerWorkspace == 0 {
		out.MaxPerWorkspace = max(out.Concurrency/2, 1)
	}
	if out.RetryDelays == nil {
		out.RetryDelays = RetryDelays()
	}
	if out.Jitter == 0 {
		out.Jitter = 0.1
	}
	if out.Jitter < 0 {
		out.Jitter = 0
	}
	if out.Retention == 0 {
		out.Retention = DefaultRetention
	}
	if out.RetentionInterval == 0 {
		out.RetentionInterval = 10 * time.Minute
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	return &out
}

func (c *DeliveryConfig) validate() error {
	switch {
	case c.PollInterval < 0:
		return errors.New("payoutkit: Delivery.PollInterval must not be negative")
	case c.Lease < 0:
		return errors.New("payoutkit: Delivery.Lease must not be negative")
	case c.BatchSize < 0:
		return errors.New("payoutkit: Delivery.BatchSize must not be negative")
	case c.Concurrency < 0:
		return errors.New("payoutkit: Delivery.Concurrency must not be negative")
	case c.MaxPerWorkspace < 0:
		return errors.New("payoutkit: Delivery.MaxPerWorkspace must not be negative")
	case c.Jitter > 1:
		return errors.New("payoutkit: Delivery.Jitter must be at most 1")
	case c.RetentionInterval < 0:
		return errors.New("payoutkit: Delivery.RetentionInterval must not be negative")
	}
	for _, d := range c.RetryDelays {
		if d <= 0 {
			return errors.New("payoutkit: Delivery.RetryDelays must be positive")
		}
	}
	if n, ok := c.Notifier.(*HTTPNotifier); ok && n.timeout() > c.Lease/2 {
		return fmt.Errorf("payoutkit: Delivery.Lease (%s) must be at least twice the notifier's timeout (%s)", c.Lease, n.timeout())
	}
	return nil
}

func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "dispatcher"
	}
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + crand.Text()[:8]
}

// dispatchStore is what the loops need of a Store; every Store is one.
type dispatchStore interface {
	ClaimEvents(ctx context.Context, owner string, now, leaseUntil time.Time, limit int, except []string) ([]Event, error)
	RecordAttempt(ctx context.Context, owner string, a DeliveryAttempt, next EventDelivery) error
	ResendEvent(ctx context.Context, workspaceID, eventID string, now time.Time) error
	ClaimPayoutHandoffs(ctx context.Context, owner string, now, leaseUntil time.Time, limit int) ([]PayoutLease, error)
	PruneEvents(ctx context.Context, before time.Time, limit int) (int, error)
	SubscribeWork() (ch <-chan struct{}, cancel func())
}

var _ dispatchStore = Store(nil)

// payoutHandOff gives one claimed payout to the processor and records the
// hand-off; the engine's is handOffFunc(Engine.handOffPayout).
type payoutHandOff interface {
	HandOffPayout(ctx context.Context, l PayoutLease) error
}

// handOffFunc is a function as a payoutHandOff.
type handOffFunc func(ctx context.Context, l PayoutLease) error

func (f handOffFunc) HandOffPayout(ctx context.Context, l PayoutLease) error { return f(ctx, l) }

// workspaceSource reads a workspace with its webhook secret ready to sign
// with; the engine is one: it opens secrets sealed at rest.
type workspaceSource interface {
	Workspace(ctx context.Context, id string) (Workspace, error)
}

var _ workspaceSource = (*Engine)(nil)

// dispatcher runs the engine's loops: it delivers webhooks from the outbox
// and hands payouts to the processor.
type dispatcher struct {
	store dispatchStore
	cfg   *DeliveryConfig
	// handOver receives every submitted payout not handed over yet; nil
	// runs no hand-off loop.
	handOver payoutHandOff
	// workspaces reads each event's workspace, for its webhook URL and
	// signing secret.
	workspaces workspaceSource
	log        *slog.Logger
	// wake makes the delivery loop claim at once (after a resend, a
	// hand-off, or the store's word of new work); wakeHandOffs does the same
	// for the hand-off loop.
	wake, wakeHandOffs chan struct{}
	// handOffOffers and eventOffers are the work of payouts this engine
	// created leased to itself (delivery.Offers, offerLease).
	handOffOffers *delivery.Offers[PayoutLease]
	eventOffers   *delivery.Offers[claimedEvent]
	running       atomic.Bool
	// loop is what both loops run on (delivery.Run); its Quiet bounds
	// repeated warnings.
	loop delivery.Config
}

// newDispatcher returns the loops over store, reading workspaces from
// workspaces and handing payouts to handOff (none when nil). cfg may be nil
// for the defaults.
func newDispatcher(store dispatchStore, cfg *DeliveryConfig, handOff payoutHandOff, workspaces workspaceSource) (*dispatcher, error) {
	if store == nil || workspaces == nil {
		return nil, errors.New("payoutkit: the engine's loops need a store")
	}
	if cfg == nil {
		cfg = &DeliveryConfig{}
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d := &dispatcher{
		store: store, cfg: cfg, handOver: handOff, workspaces: workspaces,
		wake: make(chan struct{}, 1), wakeHandOffs: make(chan struct{}, 1),
		handOffOffers: delivery.NewOffers[PayoutLease](cfg.Concurrency), eventOffers: delivery.NewOffers[claimedEvent](cfg.Concurrency),
		log: cfg.Logger.With("component", "delivery", "owner", cfg.Owner),
	}
	d.loop = delivery.Config{
		Concurrency: cfg.Concurrency, BatchSize: cfg.BatchSize, Lease: cfg.Lease, PollInterval: cfg.PollInterval,
		Now: d.now, At: cfg.Clock.At, Log: d.log, Quiet: logbudget.New(),
	}
	return d, nil
}

// run delivers events, and hands payouts over when handOver is set, until
// ctx is cancelled; then it returns nil once its in-flight work has
// returned. Attempts cut short by the cancellation are not recorded: their
// outcome is unknown, so their leases simply expire and the events are sent
// again later (receivers deduplicate by event id). Store errors are logged
// and retried; run does not stop for them. A dispatcher runs once at a time.
func (d *dispatcher) run(ctx context.Context) error {
	if !d.running.CompareAndSwap(false, true) {
		return errors.New("payoutkit: the engine's loops are already running")
	}
	defer d.running.Store(false)
	d.log.InfoContext(ctx, "dispatcher started")
	work, cancel := d.store.SubscribeWork()
	defer cancel()
	forwarded := make(chan struct{})
	defer func() { <-forwarded }()
	go func() {
		defer close(forwarded)
		d.forwardWork(ctx, work)
	}()
	done := make(chan struct{})
	if d.handOver != nil {
		go func() {
			defer close(done)
			delivery.Run(ctx, d.loop, delivery.Loop[PayoutLease]{
				Name: "payout hand-offs",
				Claim: func(ctx context.Context, now, until time.Time, limit int, _ []string) ([]PayoutLease, error) {
					ls, err := d.store.ClaimPayoutHandoffs(ctx, d.cfg.Owner, now, until, limit)
					for i := range ls {
						ls[i].ReadAt = now // the claim returns each payout as it is stored
					}
					return ls, err
				},
				Key: func(l PayoutLease) string { return l.WorkspaceID + "\x00" + l.PayoutID },
				ID:  func(l PayoutLease) string { return l.WorkspaceID + "\x00" + l.PayoutID },
				// A claim made while the previous one still runs here has a
				// newer fencing token: the running one can no longer record
				// the hand-off, so this one runs after it.
				Newer:   func(claimed, running PayoutLease) bool { return claimed.Token > running.Token },
				Work:    d.handOff,
				Wake:    d.wakeHandOffs,
				Offered: d.handOffOffers,
			})
		}()
	} else {
		close(done)
	}
	pruned := make(chan struct{})
	go func() {
		defer close(pruned)
		d.pruneLoop(ctx)
	}()
	defer func() { <-pruned }()
	delivery.Run(ctx, d.loop, delivery.Loop[claimedEvent]{
		Name: "events",
		Claim: func(ctx context.Context, now, until time.Time, limit int, full []string) ([]claimedEvent, error) {
			evs, err := d.store.ClaimEvents(ctx, d.cfg.Owner, now, until, limit, full)
			return withReads(evs), err
		},
		// One subject's events never go out in parallel; the store already
		// holds a subject's later events back while an earlier one is pending.
		Key: func(ev claimedEvent) string { return ev.WorkspaceID + "\x00" + ev.Subject },
		ID:  func(ev claimedEvent) string { return ev.ID },
		// Each recorded attempt counts.
		Newer:     func(claimed, running claimedEvent) bool { return claimed.Attempts > running.Attempts },
		Tenant:    func(ev claimedEvent) string { return ev.WorkspaceID },
		PerTenant: d.cfg.MaxPerWorkspace,
		Work:      d.deliver,
		Wake:      d.wake,
		Offered:   d.eventOffers,
		// The events offered together share their workspaces' reads, as a
		// claim's do; each read is made after their commits.
		Adopt: func(evs []claimedEvent) {
			reads := delivery.NewReads[Workspace]()
			for i := range evs {
				evs[i].reads = reads
			}
		},
	})
	<-done
	d.log.Info("dispatcher stopped")
	return nil
}

// pruneLoop deletes delivered events older than the retention, at once and
// then every RetentionInterval, until ctx is cancelled.
func (d *dispatcher) pruneLoop(ctx context.Context) {
	if d.cfg.Retention < 0 {
		return
	}
	for {
		d.prune(ctx)
		select {
		case <-ctx.Done():
			return
		case <-d.cfg.Clock.At(d.now().Add(d.cfg.RetentionInterval)):
		}
	}
}

// prune deletes, batch after batch, the delivered events recorded before
// the retention; a store error waits for the next round (logged once).
func (d *dispatcher) prune(ctx context.Context) {
	before := d.now().Add(-d.cfg.Retention)
	total := 0
	for ctx.Err() == nil {
		n, err := d.store.PruneEvents(ctx, before, pruneBatch)
		if err != nil {
			if ctx.Err() == nil {
				d.loop.Quiet.Log(ctx, d.log, slog.LevelWarn, "prune", "pruning delivered events; will try again", "err", err)
			}
			break
		}
		total += n
		if n < pruneBatch {
			break
		}
	}
	if total > 0 {
		d.log.InfoContext(ctx, "pruned delivered events", "count", total, "recorded_before", before)
	}
}

// resend makes a failed (or delivered) event of the workspace pending again,
// due now, and has the running delivery loop claim it at once. It gets one
// more attempt; when that fails too (after the whole schedule already ran),
// the event is failed again. An unknown event is ErrNotFound.
func (d *dispatcher) resend(ctx context.Context, workspaceID, eventID string) error {
	if err := d.store.ResendEvent(ctx, workspaceID, eventID, d.now()); err != nil {
		return err
	}
	d.wakeDelivery()
	return nil
}

// wakeDelivery has the delivery loop claim at once instead of at its next poll.
func (d *dispatcher) wakeDelivery() { delivery.Poke(d.wake) }

// forwardWork wakes both loops on each of the store's signals of new work,
// until ctx is cancelled. A new payout is both: its event and its hand-off.
func (d *dispatcher) forwardWork(ctx context.Context, work <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-work:
			delivery.Poke(d.wake)
			delivery.Poke(d.wakeHandOffs)
		}
	}
}

// now returns the clock's time as stores keep it: UTC, in microseconds.
func (d *dispatcher) now() time.Time { return d.cfg.Clock.Now().UTC().Truncate(time.Microsecond) }

// attemptTimeout bounds one Notify or hand-off in real time, so that the
// work ends well within its lease.
func (d *dispatcher) attemptTimeout() time.Duration { return d.cfg.Lease / 2 }

// errSealedSecret is a workspace read with its secret still sealed, which
// no receiver could check a signature made with.
var errSealedSecret = errors.New("payoutkit: the workspace's webhook secret is still sealed; the engine needs Config.SecretKeys to open it")

// errNoWebhookURL is the attempt error of an event whose workspace's URL
// was removed while the event waited for a retry.
var errNoWebhookURL = errors.New(NoWebhookURLError)

// maxError bounds the error text kept with an attempt.
const maxError = 512

// deliver makes one attempt at delivering ev and records it. Events of a
// workspace without a webhook URL are stored failed and never claimed; one
// claimed after its workspace's URL was removed fails at once, without a
// retry (a resend sends it again).
func (d *dispatcher) deliver(ctx context.Context, claimed claimedEvent, _ time.Time) time.Time {
	ev := claimed.Event
	ws, err := claimed.reads.Get(ev.WorkspaceID, func() (Workspace, error) { return d.workspaces.Workspace(ctx, ev.WorkspaceID) })
	if err == nil && seal.IsSealed(ws.WebhookSecret) {
		// Signing with the sealed form would send a signature no receiver
		// can check.
		err = errSealedSecret
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, seal.ErrKeyMissing), errors.Is(err, seal.ErrInvalid), errors.Is(err, errSealedSecret):
			// Not the receiver's fault: no attempt is recorded, and the
			// event is tried again after its lease, once the key is there.
			d.loop.Quiet.Log(ctx, d.eventLog(ev), slog.LevelError, "seal "+ev.WorkspaceID, "cannot open the workspace's webhook secret; the event waits", "err", err)
		default:
			d.loop.Quiet.Log(ctx, d.eventLog(ev), slog.LevelWarn, "workspace", "reading the event's workspace", "err", err)
		}
		return time.Time{}
	}
	if claimed.offered && ws.WebhookURL == "" {
		// The store kept the event failed, unleased: the workspace had no
		// URL when it was created (or it was removed since, and the event
		// is claimed once its lease expires, and fails then).
		return time.Time{}
	}
	a := DeliveryAttempt{EventID: ev.ID, Attempt: ev.Attempts + 1, At: d.now()}
	var res DeliveryResult
	if ws.WebhookURL == "" {
		err = errNoWebhookURL
	} else {
		actx, cancel := context.WithTimeout(ctx, d.attemptTimeout())
		start := time.Now()
		res, err = d.cfg.Notifier.Notify(actx, ws, ev)
		a.Latency = time.Since(start)
		cancel()
		if err != nil && ctx.Err() != nil {
			// Stopping: the receiver may or may not have the event. Leave it
			// to the lease's expiry; it is sent again later.
			return time.Time{}
		}
	}
	a.StatusCode, a.ResponseHead = res.StatusCode, res.ResponseHead
	next := EventDelivery{State: DeliveryDelivered, Attempts: a.Attempt}
	if err != nil {
		a.Error = delivery.CleanText([]byte(err.Error()), maxError)
		next.LastError = a.Error
		next.State = DeliveryFailed
		if a.Attempt <= len(d.cfg.RetryDelays) && !errors.Is(err, errNoWebhookURL) {
			next.State, next.NextAttemptAt = DeliveryPending, d.retryAt(a.Attempt)
		}
	}
	// Record even when stopping: the outcome is known.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if rerr := d.store.RecordAttempt(rctx, d.cfg.Owner, a, next); rerr != nil {
		d.loop.Quiet.Log(ctx, d.eventLog(ev), slog.LevelWarn, "record", "recording a delivery attempt; the event will be attempted again after the lease",
			"attempt", a.Attempt, "err", rerr)
		return time.Time{}
	}
	if d.cfg.ObserveAttempt != nil {
		d.cfg.ObserveAttempt(a, next)
	}
	switch next.State {
	case DeliveryDelivered:
		if d.log.Enabled(ctx, slog.LevelDebug) {
			d.eventLog(ev).DebugContext(ctx, "webhook delivered", "attempt", a.Attempt, "status", a.StatusCode, "latency", a.Latency)
		}
	case DeliveryPending:
		// A receiver that is down fails every event: one line per
		// workspace and minute says so.
		d.loop.Quiet.Log(ctx, d.eventLog(ev), slog.LevelInfo, "retry "+ev.WorkspaceID, "webhook attempt failed; will retry", "attempt", a.Attempt, "status", a.StatusCode,
			"err", a.Error, "next_attempt_at", next.NextAttemptAt)
	case DeliveryFailed:
		if errors.Is(err, errNoWebhookURL) {
			d.eventLog(ev).DebugContext(ctx, "webhook not sent: the workspace has no webhook URL")
			break
		}
		d.loop.Quiet.Log(ctx, d.eventLog(ev), slog.LevelWarn, "give up "+ev.WorkspaceID, "webhook delivery failed; giving up", "attempt", a.Attempt, "status", a.StatusCode, "err", a.Error)
	}
	return time.Time{}
}

// eventLog is the dispatcher's logger with ev's identity, made only for a
// line to be written: building it for every delivery cost more than the
// line it is for, which is written for few of them.
func (d *dispatcher) eventLog(ev Event) *slog.Logger {
	return d.log.With("event_id", ev.ID, "event_type", ev.Type, "workspace_id", ev.WorkspaceID)
}

// retryAt returns when the attempt after failed attempt n is due.
func (d *dispatcher) retryAt(n int) time.Time {
	return d.now().Add(delivery.RetryDelay(d.cfg.RetryDelays, d.cfg.Jitter, n)).Truncate(time.Microsecond)
}

// handOff gives one claimed payout to the processor. A processor that says
// the payout is not due yet is asked again when it says, if that falls well
// within the lease, and otherwise after the lease.
func (d *dispatcher) handOff(ctx context.Context, p PayoutLease, leaseUntil time.Time) time.Time {
	hctx, cancel := context.WithTimeout(ctx, d.attemptTimeout())
	defer cancel()
	start := d.now()
	err := d.handOver.HandOffPayout(hctx, p)
	if nd, ok := errors.AsType[*NotDueError](err); ok {
		// A due time not after start comes from a clock behind ours: leave
		// it to the lease rather than ask again and again.
		if nd.At.After(start) && nd.At.Before(leaseUntil.Add(-d.cfg.Lease/4)) {
			return nd.At
		}
		return time.Time{}
	}
	switch {
	case err == nil:
		d.log.DebugContext(ctx, "payout handed to the processor", "workspace_id", p.WorkspaceID, "payout_id", p.PayoutID)
		d.wakeDelivery() // a processor in this process may have settled it already
	case errors.Is(err, ErrNotDue) || ctx.Err() != nil:
	case errors.Is(err, ErrConflict):
		// The lease ran out during the call and another claim took the
		// payout over; it submits again with the same idempotency key
		// and records the hand-off.
		d.log.DebugContext(ctx, "payout hand-off taken over by a newer claim", "workspace_id", p.WorkspaceID, "payout_id", p.PayoutID, "token", p.Token)
	default:
		d.loop.Quiet.Log(ctx, d.log, slog.LevelWarn, "hand-off", "handing a payout to the processor; will retry after the lease",
			"workspace_id", p.WorkspaceID, "payout_id", p.PayoutID, "err", err)
	}
	return time.Time{}
}

// claimedEvent is an event as the delivery loop works on it: with the
// workspace reads it shares with the other events of its claim
// (delivery.Reads).
type claimedEvent struct {
	Event
	reads *delivery.Reads[Workspace]
	// offered: leased to this engine as it was created, not claimed.
	offered bool
}

// withReads wraps the events of one claim so that they share reads.
func withReads(evs []Event) []claimedEvent {
	if len(evs) == 0 {
		return nil
	}
	reads := delivery.NewReads[Workspace]()
	out := make([]claimedEvent, len(evs))
	for i, ev := range evs {
		out[i] = claimedEvent{Event: ev, reads: reads}
	}
	return out
}

// offerLease is the lease for a payout about to be created, when the
// loops can take its work now: they hand payouts over (a Processor is set)
// and neither loop has more offered work than workers. Otherwise it is the
// zero Lease, and the work is claimed as usual.
func (d *dispatcher) offerLease() Lease {
	if d.handOver == nil || !d.handOffOffers.Room() || !d.eventOffers.Room() {
		return Lease{}
	}
	return Lease{Owner: d.cfg.Owner, Until: d.now().Add(d.cfg.Lease)}
}

// offer gives the loops the work of payout p, created with lease and the
// event ev: its hand-off, unless its policy holds it, and its event. ev is
// the event as the engine built it; a held payout's event body is rendered
// again with the hold, as the store stored it.
func (d *dispatcher) offer(p Payout, ev Event, lease Lease) {
	if p.approval() == ApprovalPending {
		var err error
		if ev, err = ev.WithPayout(p); err != nil {
			return // the stored event is claimed once its lease expires
		}
	} else {
		d.handOffOffers.Add(PayoutLease{Payout: p, Owner: lease.Owner, Token: 1, ReadAt: d.now()}, lease.Until)
	}
	d.eventOffers.Add(claimedEvent{Event: ev, offered: true}, lease.Until)
}
