package evm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/payoutkit/payoutkit/internal/bundsn"
)

// The processor's tables live in the engine's database beside the store's,
// created by their own bun migrations ("payoutkit_evm_0001_init", ...), which
// never collide with the store's "payoutkit_00NN_..." ones.
//
//   - payoutkit_evm_nonces: the next nonce of each sender on each chain,
//     taken with the transfer's insert in one transaction.
//   - payoutkit_evm_transfers: one row per payout (its idempotency key),
//     written with the first signed transaction before anything is sent.
//   - payoutkit_evm_txs: every signed transaction of a transfer (the first
//     and each replacement), raw, so that any of them can be sent again.
const (
	migrationsTable = "payoutkit_evm_migrations"
	locksTable      = "payoutkit_evm_migration_locks"
)

// Transfer states.
const (
	statePending   = "pending"
	stateCompleted = "completed"
	stateFailed    = "failed"
)

type transferRow struct {
	bun.BaseModel `bun:"table:payoutkit_evm_transfers"`

	Key         string `bun:"idempotency_key,pk"`
	WorkspaceID string `bun:"workspace_id,notnull"`
	PayoutID    string `bun:"payout_id,notnull"`
	Network     string `bun:"network,notnull"`
	ChainID     int64  `bun:"chain_id,notnull"`
	Sender      string `bun:"sender,notnull"`
	Nonce       int64  `bun:"nonce,notnull"`
	Asset       string `bun:"asset,notnull"`
	Recipient   string `bun:"recipient,notnull"`
	Contract    string `bun:"contract,notnull"`
	// AssetAmount is the amount in the asset's units (a decimal string),
	// Units the same in base units (wei, the token's smallest unit).
	AssetAmount string `bun:"asset_amount,notnull"`
	Units       string `bun:"units,notnull"`
	// Places is the coin's Decimals: the reported amounts' precision.
	Places int    `bun:"places,notnull"`
	State  string `bun:"state,notnull"`
	// Attempts counts the transfer's signed transactions; a replacement is
	// written only by whoever moves it from n to n+1.
	Attempts int `bun:"attempts,notnull"`
	// SignedAt is when the latest transaction was signed (Unix ms).
	SignedAt  int64  `bun:"signed_at,notnull"`
	CreatedAt int64  `bun:"created_at,notnull"`
	TxID      string `bun:"txid,notnull"`
}

type txRow struct {
	bun.BaseModel `bun:"table:payoutkit_evm_txs"`

	Hash      string `bun:"hash,pk"`
	Key       string `bun:"idempotency_key,notnull"`
	Attempt   int    `bun:"attempt,notnull"`
	Raw       []byte `bun:"raw,notnull"`
	TipCap    string `bun:"tip_cap,notnull"`
	FeeCap    string `bun:"fee_cap,notnull"`
	CreatedAt int64  `bun:"created_at,notnull"`
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
// PostgreSQL) with a bun migrator of their own
// (payoutkit_evm_migrations). New calls it. Several processes may call it
// at once.
func Migrate(ctx context.Context, db *bun.DB) error {
	ms := migrate.NewMigrations()
	AddMigrations(ms)
	if err := bundsn.Migrate(ctx, db, ms, migrationsTable, locksTable); err != nil {
		return fmt.Errorf("evm: migrate: %w", err)
	}
	return nil
}

func migrations() []migrate.Migration {
	init := migrate.Migration{Name: "payoutkit_evm_0001_init", Comment: "payoutkit EVM processor"}
	init.Up = func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
		return bundsn.ExecAll(ctx, m.DB(),
			`CREATE TABLE IF NOT EXISTS payoutkit_evm_nonces (
				chain_id BIGINT NOT NULL,
				sender TEXT NOT NULL,
				next_nonce BIGINT NOT NULL,
				PRIMARY KEY (chain_id, sender))`,
			`CREATE TABLE IF NOT EXISTS payoutkit_evm_transfers (
				idempotency_key TEXT PRIMARY KEY,
				workspace_id TEXT NOT NULL,
				payout_id TEXT NOT NULL,
				network TEXT NOT NULL,
				chain_id BIGINT NOT NULL,
				sender TEXT NOT NULL,
				nonce BIGINT NOT NULL,
				asset TEXT NOT NULL,
				recipient TEXT NOT NULL,
				contract TEXT NOT NULL,
				asset_amount TEXT NOT NULL,
				units TEXT NOT NULL,
				places INTEGER NOT NULL,
				state TEXT NOT NULL,
				attempts INTEGER NOT NULL,
				signed_at BIGINT NOT NULL,
				created_at BIGINT NOT NULL,
				txid TEXT NOT NULL,
				UNIQUE (chain_id, sender, nonce))`,
			`CREATE INDEX IF NOT EXISTS payoutkit_evm_transfers_pending ON payoutkit_evm_transfers (state, chain_id)`,
			`CREATE TABLE IF NOT EXISTS payoutkit_evm_txs (
				hash TEXT PRIMARY KEY,
				idempotency_key TEXT NOT NULL REFERENCES payoutkit_evm_transfers (idempotency_key),
				attempt INTEGER NOT NULL,
				raw `+bundsn.Blob(m.DB())+` NOT NULL,
				tip_cap TEXT NOT NULL,
				fee_cap TEXT NOT NULL,
				created_at BIGINT NOT NULL,
				UNIQUE (idempotency_key, attempt))`,
		)
	}
	init.Down = func(context.Context, *migrate.Migrator, *migrate.Migration) error {
		return errors.New("evm: the processor's migrations cannot be rolled back")
	}
	return []migrate.Migration{init}
}

// reconcileNonce raises the sender's counter to the chain's pending nonce
// when the chain is ahead (a transaction sent from elsewhere); it never
// lowers it, since transactions signed and stored but not yet sent hold
// the nonces above the chain's.
func reconcileNonce(ctx context.Context, db bun.IDB, chainID int64, sender string, pending uint64) error {
	_, err := db.NewRaw(`INSERT INTO payoutkit_evm_nonces (chain_id, sender, next_nonce) VALUES (?, ?, ?)
		ON CONFLICT (chain_id, sender) DO UPDATE SET next_nonce = CASE
			WHEN excluded.next_nonce > payoutkit_evm_nonces.next_nonce THEN excluded.next_nonce
			ELSE payoutkit_evm_nonces.next_nonce END`, chainID, sender, int64(pending)).Exec(ctx)
	return err
}

// takeNonce takes the sender's next nonce inside tx: the row stays locked
// until tx ends, and a rolled-back tx gives the nonce back.
func takeNonce(ctx context.Context, tx bun.Tx, chainID int64, sender string) (uint64, error) {
	var n int64
	err := tx.NewRaw(`UPDATE payoutkit_evm_nonces SET next_nonce = next_nonce + 1
		WHERE chain_id = ? AND sender = ? RETURNING next_nonce - 1`, chainID, sender).Scan(ctx, &n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("evm: no nonce counter for %s on chain %d", sender, chainID)
	}
	return uint64(n), err
}

func loadTransfer(ctx context.Context, db bun.IDB, key string) (transferRow, error) {
	var t transferRow
	err := db.NewSelect().Model(&t).Where("idempotency_key = ?", key).Scan(ctx)
	return t, err
}

func loadTxs(ctx context.Context, db bun.IDB, key string) ([]txRow, error) {
	var txs []txRow
	err := db.NewSelect().Model(&txs).Where("idempotency_key = ?", key).Order("attempt ASC").Scan(ctx)
	return txs, err
}

func pendingTransfers(ctx context.Context, db bun.IDB, chainID int64, sender string) ([]transferRow, error) {
	var ts []transferRow
	err := db.NewSelect().Model(&ts).
		Where("state = ? AND chain_id = ? AND sender = ?", statePending, chainID, sender).
		Order("nonce ASC").Scan(ctx)
	return ts, err
}

func finishTransfer(ctx context.Context, db bun.IDB, key, state, txid string) error {
	_, err := db.NewUpdate().Model((*transferRow)(nil)).
		Set("state = ?", state).Set("txid = ?", txid).
		Where("idempotency_key = ? AND state = ?", key, statePending).Exec(ctx)
	return err
}
