package payoutkit

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// logWindow is how often one kind of repeated warning may be logged.
const logWindow = time.Minute

// logBudget keeps repeated log lines bounded: a receiver down for a day, or
// a database that is away, logs one line per kind and window, and the next
// line says how many it stands for. Windows are in real time, not the
// loops' Clock.
type logBudget struct {
	mu   sync.Mutex
	now  func() time.Time
	seen map[string]*budgetEntry
}

type budgetEntry struct {
	last       time.Time
	suppressed int
}

func newLogBudget() *logBudget {
	return &logBudget{now: time.Now, seen: make(map[string]*budgetEntry)}
}

// allow reports whether a line of the given kind may be logged now and, if
// so, how many lines of that kind were held back since the last one.
func (b *logBudget) allow(kind string) (ok bool, suppressed int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	e := b.seen[kind]
	if e == nil {
		if len(b.seen) >= 4096 { // many kinds (one per workspace): forget the quiet ones
			for k, old := range b.seen {
				if now.Sub(old.last) >= logWindow && old.suppressed == 0 {
					delete(b.seen, k)
				}
			}
		}
		b.seen[kind] = &budgetEntry{last: now}
		return true, 0
	}
	if now.Sub(e.last) < logWindow {
		e.suppressed++
		return false, 0
	}
	suppressed, e.last, e.suppressed = e.suppressed, now, 0
	return true, suppressed
}

// log writes the line if the budget of kind allows it, with the number of
// lines it held back since the last one.
func (b *logBudget) log(ctx context.Context, l *slog.Logger, level slog.Level, kind, msg string, args ...any) {
	ok, suppressed := b.allow(kind)
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "similar_lines_suppressed", suppressed)
	}
	l.Log(ctx, level, msg, args...)
}
