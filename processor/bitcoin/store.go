package bitcoin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
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
	m := migrate.NewMigrator(db, ms, migrate.WithTableName(migrationsTable), migrate.WithLocksTableName(locksTable), migrate.WithMarkAppliedOnSuccess(true))
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = migrateOnce(ctx, m); err == nil {
			return nil
		}
		select { // another process holds the lock, or made the tables meanwhile
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("bitcoin: migrate: %w", err)
}

func migrateOnce(ctx context.Context, m *migrate.Migrator) error {
	if err := m.Init(ctx); err != nil {
		return err
	}
	if err := m.Lock(ctx); err != nil {
		return err
	}
	defer m.Unlock(context.WithoutCancel(ctx)) //nolint:errcheck // the lock row goes either way
	_, err := m.Migrate(ctx)
	return err
}

func migrations() []migrate.Migration {
	init := migrate.Migration{Name: "payoutkit_btc_0001_init", Comment: "payoutkit Bitcoin processor"}
	init.Up = func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
		blob, boolean := "BLOB", "INTEGER"
		if m.DB().Dialect().Name() == dialect.PG {
			blob, boolean = "BYTEA", "BOOLEAN"
		}
		return m.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for _, q := range []string{
				`CREATE TABLE IF NOT EXISTS payoutkit_btc_utxos (
					wallet TEXT NOT NULL,
					txid TEXT NOT NULL,
					vout BIGINT NOT NULL,
					value BIGINT NOT NULL,
					pk_script ` + blob + ` NOT NULL,
					height BIGINT NOT NULL,
					coinbase ` + boolean + ` NOT NULL,
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
			} {
				if _, err := tx.ExecContext(ctx, q); err != nil {
					return err
				}
			}
			return nil
		})
	}
	init.Down = func(context.Context, *migrate.Migrator, *migrate.Migration) error {
		return errors.New("bitcoin: the processor's migrations cannot be rolled back")
	}
	return []migrate.Migration{init}
}
