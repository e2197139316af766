package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres"
)

// replicaSchemaWait is how long serve waits for -read-db's standby to
// replay -db's schema.
const replicaSchemaWait = 30 * time.Second

// openReplica opens the standby of serve's -read-db and an engine over it
// that only reads: no loops run on it, and the store applies no migration
// (a standby takes none; the primary's reach it through replication).
func openReplica(ctx context.Context, dsn string, log *slog.Logger, primary *payoutkit.Config) (*payoutkit.Engine, func(), error) {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return nil, nil, fmt.Errorf("-read-db: give a postgres:// URL of a standby of -db")
	}
	// A standby may not have replayed the schema the primary just
	// migrated to (a synchronous standby acknowledges WAL on disk, not
	// applied): wait for it a while.
	var store *postgres.Store
	var err error
	for deadline := time.Now().Add(replicaSchemaWait); ; {
		store, err = postgres.Open(ctx, dsn, postgres.WithExistingSchema(), postgres.WithLogger(log))
		lagging := errors.Is(err, postgres.ErrNoSchema) || errors.Is(err, postgres.ErrSchemaOutdated)
		if !lagging || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("-read-db: %w", err)
	}
	cfg := &payoutkit.Config{Logger: log, Coins: primary.Coins, SecretKeys: primary.SecretKeys, CursorKey: primary.CursorKey}
	engine, err := payoutkit.New(store, cfg)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	log.Info("the portal's pages read from a standby")
	return engine, func() { store.Close() }, nil
}

// standbyReads is the portal's service with its pages' lists, charts and
// payout pages read from a standby (reads), which may lag the primary by a
// few seconds. The balance, every decision the portal makes (approvals,
// keys, settings, batches) and every write go to the primary's Engine.
type standbyReads struct {
	*payoutkit.Engine
	reads *payoutkit.Engine
}

// Payout reads a withdrawal's page from the standby.
func (s standbyReads) Payout(ctx context.Context, workspaceID, payoutID string) (payoutkit.Payout, error) {
	return s.reads.Payout(ctx, workspaceID, payoutID)
}

// ListPayouts reads the withdrawals list and its export from the standby.
func (s standbyReads) ListPayouts(ctx context.Context, workspaceID string, req payoutkit.ListPayoutsRequest) (payoutkit.List[payoutkit.Payout], error) {
	return s.reads.ListPayouts(ctx, workspaceID, req)
}

// PayoutsPerDay reads the dashboard's chart from the standby.
func (s standbyReads) PayoutsPerDay(ctx context.Context, workspaceID string, days int) ([]payoutkit.DayCount, error) {
	return s.reads.PayoutsPerDay(ctx, workspaceID, days)
}

// PayoutEvents reads a withdrawal's events from the standby.
func (s standbyReads) PayoutEvents(ctx context.Context, workspaceID, payoutID string) ([]payoutkit.EventLog, error) {
	return s.reads.PayoutEvents(ctx, workspaceID, payoutID)
}

// ListOrders reads the payments list and its export from the standby.
func (s standbyReads) ListOrders(ctx context.Context, workspaceID string, req payoutkit.ListOrdersRequest) (payoutkit.List[payoutkit.Order], error) {
	return s.reads.ListOrders(ctx, workspaceID, req)
}

// ListCustomers reads the customers list from the standby.
func (s standbyReads) ListCustomers(ctx context.Context, workspaceID string, req payoutkit.ListCustomersRequest) (payoutkit.List[payoutkit.Customer], error) {
	return s.reads.ListCustomers(ctx, workspaceID, req)
}

// ListEvents reads the webhook log from the standby.
func (s standbyReads) ListEvents(ctx context.Context, workspaceID string, req payoutkit.ListEventsRequest) (payoutkit.List[payoutkit.Event], error) {
	return s.reads.ListEvents(ctx, workspaceID, req)
}
