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

// Start runs the engine's loops in the background until Stop or the end of
// ctx: webhook delivery and, with a Config.Processor, the hand-off. It
// returns at once, with an error if the loops already run.
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

// Stop ends the loops and waits for their in-flight work, or until ctx is
// done (then it returns ctx's error). Work cut short is claimed again once
// its lease expires. Stop without running loops returns nil; Start may then
// run them again.
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
