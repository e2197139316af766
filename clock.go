package payoutkit

import "time"

// Clock tells the engine's loops the time and wakes them up
// (DeliveryConfig.Clock). They never sleep any other way, so a test that
// passes a fake Clock and moves it forward runs the whole retry schedule
// (days of it) in milliseconds. Timeouts of network calls are real time,
// not Clock time.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// At returns a channel that receives once the clock has reached t; at
	// once when it already has.
	At(t time.Time) <-chan time.Time
}

// systemClock is the real clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) At(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }
