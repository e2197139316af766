package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/payoutkit/payoutkit"
)

// ClaimEvents implements payoutkit.Store.
func (s *Store) ClaimEvents(_ context.Context, owner string, now, leaseUntil time.Time, limit int, except []string) ([]payoutkit.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	blocked := make(map[string]bool) // subjects with an earlier pending event
	var due []*event
	for _, e := range s.pending {
		subject := e.WorkspaceID + "\x00" + e.Subject
		if blocked[subject] {
			continue
		}
		blocked[subject] = true
		if e.NextAttemptAt.After(now) || e.leaseUntil.After(now) || slices.Contains(except, e.WorkspaceID) {
			continue
		}
		due = append(due, e)
	}
	// The soonest due first, returned oldest first.
	slices.SortStableFunc(due, func(a, b *event) int { return a.NextAttemptAt.Compare(b.NextAttemptAt) })
	due = due[:min(limit, len(due))]
	slices.SortFunc(due, func(a, b *event) int { return int(a.seq - b.seq) })
	out := make([]payoutkit.Event, 0, len(due))
	for _, e := range due {
		e.leaseOwner, e.leaseUntil = owner, leaseUntil
		out = append(out, e.Event)
	}
	return out, nil
}
