package bitcoin

import (
	"context"
	"errors"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"

	"github.com/payoutkit/payoutkit/internal/bundsn"
)

// The processor's tables live in the engine's database beside the store's,
// created by their own bun migrations ("payoutkit_btc_0001_init", ...),
// which never collide with the store's "payoutkit_00NN_..." ones nor the
// EVM rail's "payoutkit_evm_...".
//
//   - payoutkit_btc_utxos: the outputs paying each wallet, found in the
//     node's blocks, with the block that made them and the transaction
//     (and block) that spent them.
//   - payoutkit_btc_blocks: each wallet's scanned chain, a block hash per
//     height, to notice a reorg; the highest row is where the scan
//     resumes.
//   - payoutkit_btc_payouts: one row per payout taken (its idempotency
//     key), with its amount in satoshis and the quote that made it, queued
//     until a batch takes it, then the batch and output paying it, and,
//     once settled, its share of the fee.
//   - payoutkit_btc_txs: every transaction the processor signed, raw: a
//     batch's first (its txid is the batch's id), stored with its inputs
//     reserved in payoutkit_btc_utxos.reserved_by and its payouts pointed
//     at the batch in one database transaction before it is broadcast,
//     and each fee bump of it (attempt 2, 3, ...: the same inputs and
//     payments, a higher fee); and the height of the block each is in (0
//     while in none).
//   - payoutkit_btc_leases: each wallet's lease, the process running its
//     loop (lease.go).
const (
	migrationsTable = "payoutkit_btc_migrations"
	locksTable      = "payoutkit_btc_migration_locks"
)

type utxoRow struct {
	bun.BaseModel `bun:"table:payoutkit_btc_utxos"`

	Wallet   string `bun:"wallet,notnull"`
	TxID     string `bun:"txid,pk"`
	Vout     int64  `bun:"vout,pk"`
	Value    int64  `bun:"value,notnull"`
	PkScript []byte `bun:"pk_script,notnull"`
	// Height is the block that made the output.
	Height   int64 `bun:"height,notnull"`
	Coinbase bool  `bun:"coinbase,notnull"`
	// SpentTxID and SpentHeight are the transaction (and its block) that
	// spent it on chain; "" and 0 while unspent.
	SpentTxID   string `bun:"spent_txid,notnull"`
	SpentHeight int64  `bun:"spent_height,notnull"`
	CreatedAt   int64  `bun:"created_at,notnull"`
	// ReservedBy is the processor's batch (its first txid) spending it,
	// stored but perhaps not yet mined; "" when none.
	ReservedBy string `bun:"reserved_by,notnull"`
}

// Payout and transaction states.
const (
	stateQueued     = "queued"     // a payout waiting for a batch
	stateSent       = "sent"       // a payout in a stored transaction
	stateCompleted  = "completed"  // a payout settled
	stateFailed     = "failed"     // a payout refused after it was queued
	statePending    = "pending"    // a transaction not yet settled
	stateConfirmed  = "confirmed"  // a transaction whose payouts settled
	stateReplaced   = "replaced"   // another transaction of its batch settled
	stateConflicted = "conflicted" // an input of its batch was spent elsewhere
)

type payoutRow struct {
	bun.BaseModel `bun:"table:payoutkit_btc_payouts"`

	Key         string `bun:"idempotency_key,pk"`
	WorkspaceID string `bun:"workspace_id,notnull"`
	PayoutID    string `bun:"payout_id,notnull"`
	Wallet      string `bun:"wallet,notnull"`
	Address     string `bun:"address,notnull"`
	PkScript    []byte `bun:"pk_script,notnull"`
	// Sats is the amount paid; USDCents what was debited, at QuotePrice
	// (USD per BTC, a decimal string) observed at QuoteAt (Unix ms).
	Sats        int64  `bun:"sats,notnull"`
	USDCents    int64  `bun:"usd_cents,notnull"`
	QuotePrice  string `bun:"quote_price,notnull"`
	QuoteAt     int64  `bun:"quote_at,notnull"`
	QuoteSource string `bun:"quote_source,notnull"`
	State       string `bun:"state,notnull"`
	// BatchID and Vout are the batch and output paying it, once a batch
	// took it (every transaction of a batch pays it at Vout); FeeShare its
	// share of the settled transaction's fee (SplitFee).
	BatchID  string `bun:"batch_id,notnull"`
	Vout     int64  `bun:"vout,notnull"`
	FeeShare int64  `bun:"fee_share,notnull"`
	// DueAt is when its batch window ends (Unix ms).
	DueAt     int64 `bun:"due_at,notnull"`
	CreatedAt int64 `bun:"created_at,notnull"`
}

type txRow struct {
	bun.BaseModel `bun:"table:payoutkit_btc_txs"`

	TxID string `bun:"txid,pk"`
	// BatchID is the batch's first txid; Attempt 1 the first transaction,
	// 2 its first fee bump, and so on.
	BatchID string `bun:"batch_id,notnull"`
	Attempt int    `bun:"attempt,notnull"`
	Wallet  string `bun:"wallet,notnull"`
	Raw     []byte `bun:"raw,notnull"`
	Fee     int64  `bun:"fee,notnull"`
	FeeRate int64  `bun:"fee_rate,notnull"`
	Weight  int64  `bun:"weight,notnull"`
	// Height is the block it is in; 0 while in none.
	Height    int64  `bun:"height,notnull"`
	State     string `bun:"state,notnull"`
	CreatedAt int64  `bun:"created_at,notnull"`
	// SentAt is its latest broadcast (Unix ms); 0 before the first.
	SentAt int64 `bun:"sent_at,notnull"`
}

type blockRow struct {
	bun.BaseModel `bun:"table:payoutkit_btc_blocks"`

	Wallet string `bun:"wallet,pk"`
	Height int64  `bun:"height,pk"`
	Hash   string `bun:"hash,notnull"`
}

// AddMigrations adds the processor's tables to a program's bun migrations,
// for a program whose own migrator creates its schema. Migrate does the
// same on its own.
func AddMigrations(ms *migrate.Migrations) {
	for _, m := range migrations() {
		ms.Add(m)
	}
}

// Migrate creates or upgrades the processor's tables in db (SQLite or
// PostgreSQL) with a bun migrator of their own (payoutkit_btc_migrations).
// Several processes may call it at once.
func Migrate(ctx context.Context, db *bun.DB) error {
	ms := migrate.NewMigrations()
	AddMigrations(ms)
	if err := bundsn.Migrate(ctx, db, ms, migrationsTable, locksTable); err != nil {
		return fmt.Errorf("bitcoin: migrate: %w", err)
	}
	return nil
}

func migrations() []migrate.Migration {
	init := migrate.Migration{Name: "payoutkit_btc_0001_init", Comment: "payoutkit Bitcoin processor"}
	init.Up = func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
		blob, boolean := bundsn.Blob(m.DB()), "INTEGER"
		if m.DB().Dialect().Name() == dialect.PG {
			boolean = "BOOLEAN"
		}
		return bundsn.ExecAll(ctx, m.DB(),
			`CREATE TABLE IF NOT EXISTS payoutkit_btc_utxos (
				wallet TEXT NOT NULL,
				txid TEXT NOT NULL,
				vout BIGINT NOT NULL,
				value BIGINT NOT NULL,
				pk_script `+blob+` NOT NULL,
				height BIGINT NOT NULL,
				coinbase `+boolean+` NOT NULL,
				spent_txid TEXT NOT NULL,
				spent_height BIGINT NOT NULL,
				created_at BIGINT NOT NULL,
				PRIMARY KEY (txid, vout))`,
			`CREATE INDEX IF NOT EXISTS payoutkit_btc_utxos_unspent ON payoutkit_btc_utxos (wallet, spent_txid)`,
			`CREATE TABLE IF NOT EXISTS payoutkit_btc_blocks (
				wallet TEXT NOT NULL,
				height BIGINT NOT NULL,
				hash TEXT NOT NULL,
				PRIMARY KEY (wallet, height))`,
		)
	}
	payouts := migrate.Migration{Name: "payoutkit_btc_0002_payouts", Comment: "payoutkit Bitcoin processor: payouts and transactions"}
	payouts.Up = func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
		blob := bundsn.Blob(m.DB())
		return bundsn.ExecAll(ctx, m.DB(),
			`ALTER TABLE payoutkit_btc_utxos ADD COLUMN reserved_by TEXT NOT NULL DEFAULT ''`,
			`CREATE TABLE IF NOT EXISTS payoutkit_btc_txs (
				txid TEXT PRIMARY KEY,
				batch_id TEXT NOT NULL,
				attempt INTEGER NOT NULL,
				wallet TEXT NOT NULL,
				raw `+blob+` NOT NULL,
				fee BIGINT NOT NULL,
				fee_rate BIGINT NOT NULL,
				weight BIGINT NOT NULL,
				height BIGINT NOT NULL,
				state TEXT NOT NULL,
				created_at BIGINT NOT NULL,
				sent_at BIGINT NOT NULL,
				UNIQUE (batch_id, attempt))`,
			`CREATE INDEX IF NOT EXISTS payoutkit_btc_txs_open ON payoutkit_btc_txs (wallet, state, height)`,
			`CREATE TABLE IF NOT EXISTS payoutkit_btc_payouts (
				idempotency_key TEXT PRIMARY KEY,
				workspace_id TEXT NOT NULL,
				payout_id TEXT NOT NULL,
				wallet TEXT NOT NULL,
				address TEXT NOT NULL,
				pk_script `+blob+` NOT NULL,
				sats BIGINT NOT NULL,
				usd_cents BIGINT NOT NULL,
				quote_price TEXT NOT NULL,
				quote_at BIGINT NOT NULL,
				quote_source TEXT NOT NULL,
				state TEXT NOT NULL,
				batch_id TEXT NOT NULL,
				vout BIGINT NOT NULL,
				fee_share BIGINT NOT NULL,
				due_at BIGINT NOT NULL,
				created_at BIGINT NOT NULL)`,
			`CREATE INDEX IF NOT EXISTS payoutkit_btc_payouts_open ON payoutkit_btc_payouts (wallet, state, created_at)`,
			`CREATE INDEX IF NOT EXISTS payoutkit_btc_payouts_batch ON payoutkit_btc_payouts (batch_id)`,
		)
	}
	leases := migrate.Migration{Name: "payoutkit_btc_0003_leases", Comment: "payoutkit Bitcoin processor: a lease per wallet"}
	leases.Up = func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
		return bundsn.ExecAll(ctx, m.DB(),
			`CREATE TABLE IF NOT EXISTS payoutkit_btc_leases (
				wallet TEXT PRIMARY KEY,
				holder TEXT NOT NULL,
				expires_at BIGINT NOT NULL)`,
			// The open batches' inputs, found by their batch, not by a
			// walk through every output ever spent.
			`CREATE INDEX IF NOT EXISTS payoutkit_btc_utxos_reserved ON payoutkit_btc_utxos (reserved_by)`,
		)
	}
	down := func(context.Context, *migrate.Migrator, *migrate.Migration) error {
		return errors.New("bitcoin: the processor's migrations cannot be rolled back")
	}
	init.Down, payouts.Down, leases.Down = down, down, down
	return []migrate.Migration{init, payouts, leases}
}
