package bitcoin

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// The wallet's lease: of the processes paying from one wallet on one
// database, one at a time runs the loop. Each round the holder renews the
// lease (payoutkit_btc_leases, a row per wallet: its holder and when the
// lease lapses); another process takes it only once it has lapsed, or
// after the holder gave it up at Stop.
//
// The lease saves the others' work; it is not what keeps a payout in one
// transaction or an output in one batch: the storing transactions' own
// conditions do that (a payout still queued, an output still unreserved).
// It also fences them: a transaction that stores a batch, a bump or a
// conflicted batch's release first checks, in the same database
// transaction, that its process still holds the lease, so a process that
// stalled past its lease (a long pause, a lost connection) stores nothing
// once another has taken over. On PostgreSQL that check locks the lease's
// row, so the holder's writes and a takeover never interleave.
//
// The expiry is the holder's clock; clocks that differ by more than the
// lease only make a takeover early, and the fence makes an early takeover
// safe.

type leaseRow struct {
	bun.BaseModel `bun:"table:payoutkit_btc_leases"`

	Wallet    string `bun:"wallet,pk"`
	Holder    string `bun:"holder,notnull"`
	ExpiresAt int64  `bun:"expires_at,notnull"`
}

// newHolder names a process's claim on leases: its host, pid and a random
// part, so that two processors in one process differ too.
func newHolder() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// takeLease takes or renews the wallet's lease, and reports whether this
// processor holds it.
func (p *Processor) takeLease(ctx context.Context) (bool, error) {
	now := p.cfg.Now()
	row := leaseRow{Wallet: p.wallet.Address(), Holder: p.holder, ExpiresAt: now.Add(p.cfg.Lease).UnixMilli()}
	res, err := p.db.NewInsert().Model(&row).
		On("CONFLICT (wallet) DO UPDATE").Set("holder = EXCLUDED.holder").Set("expires_at = EXCLUDED.expires_at").
		Where("?TableAlias.holder = EXCLUDED.holder OR ?TableAlias.expires_at < ?", now.UnixMilli()).
		Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("bitcoin: the wallet's lease: %w", err)
	}
	n, _ := res.RowsAffected()
	held := n == 1
	if !held {
		if held, err = p.takeFromDead(ctx, now); err != nil {
			return false, err
		}
	}
	if held != p.leased.Swap(held) {
		if held {
			p.stats.leases.Add(1)
			p.log.Info("bitcoin wallet lease taken: this process runs the wallet's loop", "wallet", row.Wallet, "holder", p.holder, "lease", p.cfg.Lease)
		} else {
			p.log.Warn("bitcoin wallet lease lost to another process", "wallet", row.Wallet, "holder", p.holder)
		}
	}
	return held, nil
}

// takeFromDead takes the wallet's lease over from a holder that was a
// process of this host which no longer runs: a server that crashed and was
// restarted resumes its wallet at once, not once its old lease lapses.
// Anything else about the holder (another host, a process alive or
// unknown) leaves the lease to lapse.
func (p *Processor) takeFromDead(ctx context.Context, now time.Time) (bool, error) {
	var cur leaseRow
	if err := p.db.NewSelect().Model(&cur).Where("wallet = ?", p.wallet.Address()).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		return false, fmt.Errorf("bitcoin: the wallet's lease: %w", err)
	}
	if !diedOnThisHost(cur.Holder) {
		return false, nil
	}
	res, err := p.db.NewUpdate().Model((*leaseRow)(nil)).Set("holder = ?", p.holder).Set("expires_at = ?", now.Add(p.cfg.Lease).UnixMilli()).
		Where("wallet = ? AND holder = ?", cur.Wallet, cur.Holder).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("bitcoin: the wallet's lease: %w", err)
	}
	n, _ := res.RowsAffected()
	if n == 1 {
		p.log.Info("bitcoin wallet lease taken over from a process of this host that no longer runs", "wallet", cur.Wallet, "was", cur.Holder)
	}
	return n == 1, nil
}

// diedOnThisHost reports whether holder (newHolder's host/pid/random) names
// a process of this host, not this one, that no longer runs.
func diedOnThisHost(holder string) bool {
	host, _ := os.Hostname()
	parts := strings.Split(holder, "/")
	if len(parts) != 3 || parts[0] != host {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return !processRuns(pid)
}

// holdLease is the fence of a storing transaction: it fails with errLost
// unless this processor still holds the wallet's lease, which it renews.
func (p *Processor) holdLease(ctx context.Context, tx bun.Tx) error {
	res, err := tx.NewUpdate().Model((*leaseRow)(nil)).Set("expires_at = ?", p.cfg.Now().Add(p.cfg.Lease).UnixMilli()).
		Where("wallet = ? AND holder = ?", p.wallet.Address(), p.holder).Exec(ctx)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return errLost
	}
	return nil
}

// inLease runs f in one database transaction that first checks, and
// renews, this processor's lease (holdLease): errLost when another process
// holds it.
func (p *Processor) inLease(ctx context.Context, f func(ctx context.Context, tx bun.Tx) error) error {
	return p.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := p.holdLease(ctx, tx); err != nil {
			return err
		}
		return f(ctx, tx)
	})
}

// releaseLease gives the wallet's lease up, so that another process takes
// over at its next round rather than once the lease lapses.
func (p *Processor) releaseLease(ctx context.Context) error {
	if !p.leased.Swap(false) {
		return nil
	}
	_, err := p.db.NewDelete().Model((*leaseRow)(nil)).Where("wallet = ? AND holder = ?", p.wallet.Address(), p.holder).Exec(ctx)
	if err != nil {
		return fmt.Errorf("bitcoin: give up the wallet's lease: %w", err)
	}
	p.log.Info("bitcoin wallet lease given up", "wallet", p.wallet.Address(), "holder", p.holder)
	return nil
}
