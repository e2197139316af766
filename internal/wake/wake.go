// Package wake lets a store tell the dispatchers of its own process that it
// has committed work for them, so that they claim it at once instead of at
// their next poll.
package wake

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Signal broadcasts "new work" to its subscribers. Signals coalesce: a
// subscriber that has not yet taken the last one gets no second one, so a
// burst of commits wakes each subscriber once. The zero Signal is ready to
// use; Notify is safe for concurrent use and allocates nothing.
type Signal struct {
	mu   sync.Mutex                      // serialises Subscribe and its cancel
	subs atomic.Pointer[[]chan struct{}] // copied on write: Notify takes no lock
}

// Subscribe returns a channel that receives after each Notify that found it
// empty, and cancel, which ends the subscription (the channel is not closed).
func (s *Signal) Subscribe() (ch <-chan struct{}, cancel func()) {
	c := make(chan struct{}, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.store(append(s.load(), c))
	return c, sync.OnceFunc(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.store(slices.DeleteFunc(slices.Clone(s.load()), func(x chan struct{}) bool { return x == c }))
	})
}

// Notify wakes every subscriber that is not already awake.
func (s *Signal) Notify() {
	for _, c := range s.load() {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

func (s *Signal) load() []chan struct{} {
	if p := s.subs.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *Signal) store(subs []chan struct{}) { s.subs.Store(&subs) }
