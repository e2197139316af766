package wake

import (
	"sync"
	"testing"
)

func TestSignalWakesEverySubscriberOnce(t *testing.T) {
	var s Signal
	s.Notify() // no subscriber: nothing to wake, nothing blocks
	a, cancelA := s.Subscribe()
	b, cancelB := s.Subscribe()
	defer cancelB()
	s.Notify()
	s.Notify() // coalesces with the first
	for name, ch := range map[string]<-chan struct{}{"a": a, "b": b} {
		select {
		case <-ch:
		default:
			t.Fatalf("subscriber %s not woken", name)
		}
		select {
		case <-ch:
			t.Fatalf("subscriber %s woken twice for one burst", name)
		default:
		}
	}
	cancelA()
	cancelA() // a second cancel is harmless
	s.Notify()
	select {
	case <-a:
		t.Fatal("a cancelled subscription was woken")
	default:
	}
	select {
	case <-b:
	default:
		t.Fatal("the remaining subscriber was not woken")
	}
}

// Subscribing and cancelling while others notify loses no subscriber.
func TestSignalConcurrent(t *testing.T) {
	var s Signal
	keep, cancel := s.Subscribe()
	defer cancel()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				_, c := s.Subscribe()
				s.Notify()
				c()
			}
		})
	}
	wg.Wait()
	<-keep // drained the burst's signal, if any
	s.Notify()
	select {
	case <-keep:
	default:
		t.Fatal("the long-lived subscriber was lost")
	}
}

func BenchmarkNotify(b *testing.B) {
	var s Signal
	for range 2 {
		_, cancel := s.Subscribe()
		defer cancel()
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Notify()
	}
}
