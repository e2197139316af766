// Package loop runs a processor's background work (processor/evm's
// watcher, processor/bitcoin's loop): one function called at once, then
// every interval and whenever woken, until stopped.
package loop

import (
	"context"
	"sync"
	"time"
)

// Runner starts and stops one background loop at a time. The zero Runner
// is ready to use; its methods are safe for concurrent use.
type Runner struct {
	mu     sync.Mutex
	cancel context.CancelFunc // nil while stopped
	done   chan struct{}      // closed once the running loop has returned
}

// Start calls tick in a goroutine of its own at once, then each time every
// has passed or wake receives (a nil wake: only every), until Stop or until
// ctx is cancelled. tick is never called twice at once: a wake or a tick of
// the ticker during a call waits for it to return. Start reports false,
// doing nothing, when a loop Start began is still running.
func (r *Runner) Start(ctx context.Context, every time.Duration, wake <-chan struct{}, tick func(ctx context.Context)) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return false
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	r.cancel, r.done = cancel, done
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			tick(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-wake:
			}
		}
	}()
	return true
}

// Stop ends the loop Start began and waits for its tick to return, or for
// ctx (then it returns ctx's error, the loop ending by itself later).
// stopped reports whether a loop was running and has returned, for a
// caller that cleans up after its loop (with none running, Stop returns
// false and nil at once).
func (r *Runner) Stop(ctx context.Context) (stopped bool, err error) {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.cancel, r.done = nil, nil
	r.mu.Unlock()
	if cancel == nil {
		return false, nil
	}
	cancel()
	select {
	case <-done:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
