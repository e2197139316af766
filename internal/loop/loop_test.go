package loop

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A loop ticks at once, again when woken (long before its interval), and
// once stopped not at all; a second Start while it runs is refused, one
// after Stop starts it again.
func TestStartWakeStop(t *testing.T) {
	var r Runner
	ticks := make(chan struct{}, 10)
	wake := make(chan struct{}, 1)
	tick := func(context.Context) { ticks <- struct{}{} }
	if !r.Start(context.Background(), time.Hour, wake, tick) {
		t.Fatal("Start refused on a zero Runner")
	}
	waitTick(t, ticks, "the first tick")
	if r.Start(context.Background(), time.Hour, wake, tick) {
		t.Fatal("a second Start began a second loop")
	}
	wake <- struct{}{}
	waitTick(t, ticks, "a tick after wake")
	if stopped, err := r.Stop(context.Background()); !stopped || err != nil {
		t.Fatalf("Stop: %v, %v", stopped, err)
	}
	wake <- struct{}{}
	select {
	case <-ticks:
		t.Fatal("a tick after Stop")
	case <-time.After(50 * time.Millisecond):
	}
	if !r.Start(context.Background(), time.Hour, nil, tick) {
		t.Fatal("Start refused after Stop")
	}
	waitTick(t, ticks, "the first tick after a restart")
	if stopped, err := r.Stop(context.Background()); !stopped || err != nil {
		t.Fatalf("Stop after a restart: %v, %v", stopped, err)
	}
}

// The ticker ticks without a wake channel.
func TestEvery(t *testing.T) {
	var r Runner
	ticks := make(chan struct{}, 10)
	r.Start(context.Background(), time.Millisecond, nil, func(context.Context) { ticks <- struct{}{} })
	defer r.Stop(context.Background())
	for range 3 {
		waitTick(t, ticks, "tick of the ticker")
	}
}

// Stop without a loop returns at once, stopping nothing; Stop of a loop
// whose tick does not return gives up with its context's error, and the
// tick's context is cancelled.
func TestStop(t *testing.T) {
	var r Runner
	if stopped, err := r.Stop(context.Background()); stopped || err != nil {
		t.Fatalf("Stop without a loop: %v, %v", stopped, err)
	}
	release, cancelled := make(chan struct{}), make(chan struct{})
	r.Start(context.Background(), time.Hour, nil, func(ctx context.Context) {
		<-ctx.Done()
		close(cancelled)
		<-release
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if stopped, err := r.Stop(ctx); stopped || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop of a stuck tick: %v, %v", stopped, err)
	}
	<-cancelled
	close(release)
}

// Cancelling Start's context ends the loop too.
func TestStartContext(t *testing.T) {
	var r Runner
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	r.Start(ctx, time.Hour, nil, func(ctx context.Context) {
		<-ctx.Done()
		close(ended)
	})
	cancel()
	<-ended
	if stopped, err := r.Stop(context.Background()); !stopped || err != nil {
		t.Fatalf("Stop after its context ended the loop: %v, %v", stopped, err)
	}
}

func waitTick(t *testing.T, ticks <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ticks:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
	}
}
