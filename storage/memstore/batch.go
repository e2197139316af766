package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/payoutkit/payoutkit"
)

// batch is a stored payout batch: its record, and its results without
// their payouts, which PayoutBatch reads as they are now.
type batch struct {
	payoutkit.PayoutBatch
	seq int64
}

// CreatePayoutBatch implements payoutkit.Store.
func (s *Store) CreatePayoutBatch(_ context.Context, b payoutkit.PayoutBatch, items []payoutkit.BatchItem, lease payoutkit.Lease) (payoutkit.PayoutBatch, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(b.WorkspaceID)
	if err != nil {
		return payoutkit.PayoutBatch{}, false, err
	}
	if old := w.batches[b.BatchID]; old != nil {
		return w.readBatch(old), false, nil
	}
	check := payoutkit.BatchCheck{Available: w.balance.Available, Policy: w.policy(), Existing: map[string]payoutkit.Payout{}}
	for _, it := range items {
		if old := w.payouts[it.Payout.PayoutID]; old != nil {
			check.Existing[it.Payout.PayoutID] = old.Payout
		}
	}
	if check.Policy.DailyLimit.Set {
		check.Spent = w.spent(b.CreatedAt.Add(-payoutkit.DailyWindow))
	}
	if check.Policy.AddressAllowlist {
		check.Book = make(map[string]payoutkit.AddressEntry, len(w.controls.book))
		for k, e := range w.controls.book {
			check.Book[k] = *e
		}
	}
	created, err := check.Apply(&b, items)
	if err != nil {
		return b, false, err
	}
	for _, it := range created {
		s.insertPayout(w, it.Payout, it.Event, lease)
	}
	row := &batch{PayoutBatch: b, seq: s.next()}
	row.Results = slices.Clone(b.Results)
	for i := range row.Results {
		row.Results[i].Payout = nil
	}
	if w.batches == nil {
		w.batches = map[string]*batch{}
	}
	w.batches[b.BatchID] = row
	w.batchList = append(w.batchList, row)
	return b, true, nil
}

// readBatch is b with each accepted result's payout as it is now.
func (w *workspace) readBatch(b *batch) payoutkit.PayoutBatch {
	out := b.PayoutBatch
	out.Results = slices.Clone(b.Results)
	for i, r := range out.Results {
		if r.Code == 0 {
			if row := w.payouts[r.PayoutID]; row != nil {
				p := row.Payout
				out.Results[i].Payout = &p
			}
		}
	}
	return out
}

// PayoutBatch implements payoutkit.Store.
func (s *Store) PayoutBatch(_ context.Context, workspaceID, batchID string) (payoutkit.PayoutBatch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return payoutkit.PayoutBatch{}, err
	}
	b := w.batches[batchID]
	if b == nil {
		return payoutkit.PayoutBatch{}, payoutkit.ErrNotFound
	}
	return w.readBatch(b), nil
}

// PayoutBatches implements payoutkit.Store.
func (s *Store) PayoutBatches(_ context.Context, workspaceID string, req payoutkit.PageRequest) (payoutkit.Page[payoutkit.PayoutBatch], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return payoutkit.Page[payoutkit.PayoutBatch]{}, err
	}
	return newestOf(w.batchList, req, func(b *batch) (bool, time.Time, int64, payoutkit.PayoutBatch) {
		out := b.PayoutBatch
		out.Results = nil
		return true, b.CreatedAt, b.seq, out
	})
}
