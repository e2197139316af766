package sqlite

import (
	"context"
	"errors"

	"github.com/payoutkit/payoutkit"
)

// CreatePayoutBatch implements payoutkit.Store.
func (s *Store) CreatePayoutBatch(ctx context.Context, b payoutkit.PayoutBatch, items []payoutkit.BatchItem) (payoutkit.PayoutBatch, bool, error) {
	return payoutkit.PayoutBatch{}, false, errors.New("TODO: batches on this store")
}

// PayoutBatch implements payoutkit.Store.
func (s *Store) PayoutBatch(ctx context.Context, workspaceID, batchID string) (payoutkit.PayoutBatch, error) {
	return payoutkit.PayoutBatch{}, payoutkit.ErrNotFound
}

// PayoutBatches implements payoutkit.Store.
func (s *Store) PayoutBatches(ctx context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.PayoutBatch], error) {
	return payoutkit.Page[payoutkit.PayoutBatch]{}, nil
}
