package payoutkit

import (
	"context"
	"errors"
	"sync"
)

// loops is the running state of an engine's background work, shared by
// the engine's copies so that Stop finds what Start began.
type loops struct {
	mu sync.Mutex
	// running is the dispatcher that Start began, nil when stopped; cancel
	// ends it and done is closed once it has returned.
	running *dispatcher
	cancel  context.CancelFunc
	done    chan struct{}
}

// errWithStoreLoops refuses Start on an engine from WithStore: its store
// may be a caller's transaction, which outlives no loop.
var errWithStoreLoops = errors.New("payoutkit: an engine from WithStore runs no loops; start the engine it came from")

// Start runs the engine's loops in the background until Stop, or until ctx
// is cancelled: the webhook delivery loop, which sends every event in the
// outbox to its workspace's receiver (opening sealed secrets with
// Config.SecretKeys), and, when Config.Processor is set, the hand-off loop,
// which gives every submitted payout to the processor through
// handOffPayout. Both claim their work from the store under a lease
// (Config.Delivery), so engines in several processes may share one store.
// Start returns at once; it is an error while the loops already run.
//
//	engine, err := payoutkit.New(store, cfg)
//	...
//	if err := engine.Start(ctx); err != nil { ... }
//	defer engine.Stop(context.WithoutCancel(ctx))
func (e *Engine) Start(ctx context.Context) error {
	if e.loops == nil {
		return errWithStoreLoops
	}
	var handOff payoutHandOff
	if e.processor != nil {
		handOff = handOffFunc(e.handOffPayout)
	}
	d, err := newDispatcher(e.store, e.delivery, handOff, e)
	if err != nil {
		return err
	}
	l := e.loops
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running != nil {
		return errors.New("payoutkit: the engine's loops are already running")
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := d.run(ctx); err != nil {
			e.log.Error("the engine's loops stopped", "err", err)
		}
		cancel()
		l.mu.Lock()
		l.running, l.cancel, l.done = nil, nil, nil
		l.mu.Unlock()
	}()
	l.running, l.cancel, l.done = d, cancel, done
	return nil
}

// Stop ends the loops that Start began and waits until their in-flight
// work has returned, or until ctx is done (then it returns ctx's error and
// the loops finish on their own). Attempts cut short are not recorded:
// their leases expire and the work is claimed again later, here or by
// another engine. Stop on an engine whose loops are not running returns nil;
// once the loops have returned, Start may run them again.
func (e *Engine) Stop(ctx context.Context) error {
	if e.loops == nil {
		return nil
	}
	l := e.loops
	l.mu.Lock()
	d, cancel, done := l.running, l.cancel, l.done
	l.mu.Unlock()
	if d == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runningLoops returns the loops Start began, nil when they are not running.
func (e *Engine) runningLoops() *dispatcher {
	if e.loops == nil {
		return nil
	}
	e.loops.mu.Lock()
	defer e.loops.mu.Unlock()
	return e.loops.running
}

// wakeDelivery has the running delivery loop, if any, claim at once.
func (e *Engine) wakeDelivery() {
	if d := e.runningLoops(); d != nil {
		d.wakeDelivery()
	}
}
