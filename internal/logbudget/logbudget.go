// Package logbudget keeps repeated log lines bounded: a webhook receiver
// down for a day, or a database that is away, logs one line per kind and
// window, and the next line says how many it stands for.
package logbudget

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Window is how often one kind of repeated line may be logged.
const Window = time.Minute

// maxKinds is how many kinds a Budget remembers before it forgets the
// quiet ones (there is a kind per workspace for some lines).
const maxKinds = 4096

// Budget bounds repeated log lines by kind. Windows are in real time, not
// the engine loops' Clock. Make one with New; it is safe for concurrent use.
type Budget struct {
	mu   sync.Mutex
	now  func() time.Time
	seen map[string]*entry
}

type entry struct {
	last       time.Time
	suppressed int
}

// New returns an empty budget on the system clock.
func New() *Budget {
	return &Budget{now: time.Now, seen: make(map[string]*entry)}
}

// Allow reports whether a line of the given kind may be logged now and, if
// so, how many lines of that kind were held back since the last one.
func (b *Budget) Allow(kind string) (ok bool, suppressed int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	e := b.seen[kind]
	if e == nil {
		if len(b.seen) >= maxKinds { // many kinds (one per workspace): forget the quiet ones
			for k, old := range b.seen {
				if now.Sub(old.last) >= Window && old.suppressed == 0 {
					delete(b.seen, k)
				}
			}
		}
		b.seen[kind] = &entry{last: now}
		return true, 0
	}
	if now.Sub(e.last) < Window {
		e.suppressed++
		return false, 0
	}
	suppressed, e.last, e.suppressed = e.suppressed, now, 0
	return true, suppressed
}

// Log writes the line if the budget of kind allows it, with the number of
// lines it held back since the last one.
func (b *Budget) Log(ctx context.Context, l *slog.Logger, level slog.Level, kind, msg string, args ...any) {
	ok, suppressed := b.Allow(kind)
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "similar_lines_suppressed", suppressed)
	}
	l.Log(ctx, level, msg, args...)
}
