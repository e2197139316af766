package payoutkit

import "time"

// Clock tells the engine's loops the time and wakes them; they never sleep
// otherwise, so a fake Clock runs days of retries in milliseconds. Network
// timeouts are real time. At returns a channel that receives once the clock
// has reached t.
type Clock interface {
	Now() time.Time
	At(t time.Time) <-chan time.Time
}

// systemClock is the real clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) At(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }
