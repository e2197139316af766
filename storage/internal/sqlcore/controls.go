package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/payoutkit/payoutkit"
)

// The payout controls (contract, section 10) on both databases.
//
// The 24-hour limit. Each workspace with a daily limit keeps, in
// payout_spend, the sum of its payouts that have not failed per hour of
// their created_at, written in the transaction that creates (or fails) the
// payout; the window (now-24h, now] is then the hours after the hour of
// now-24h (at most 25 rows) plus the part of that boundary hour after
// now-24h. The boundary hour is treated exactly: payout_policies keeps
// spend_hour (the boundary hour the sums refer to), spend_pos (how far
// into it the window has moved) and spend_expired (the amounts of its
// payouts at or before spend_pos that have not failed). Each create moves
// spend_pos to its own now-24h, adding the payouts it passes, read through
// the (workspace_id, created_at, seq) index: every payout is passed once,
// so the cost per payout is O(1) however many payouts the window holds, and
// a boundary that moves into a later hour starts again at that hour's start,
// skipping the hours in between (their sums are simply no longer read). A
// payout that fails gives its amount back to its hour's sum, and to
// spend_expired when the window had already passed it, so that the
// window's part of the boundary hour stays exact.
//
// The sums are written only while a daily limit is set: setting one fills
// them from the payouts of the last 24 hours, in the transaction that sets
// it, after the balance row is locked so that no create is half done.
// Payouts of workspaces without controls never read any of this: their
// debit carries "controls = false" (balances.controls, kept with the
// policy), and only a debit refused by it reads the policy.

// policyCols are payout_policies' columns after workspace_id.
const policyCols = `max_payout, daily_limit, approval_over, address_allowlist, cooling_off, spend_hour, spend_pos, spend_expired`

// policyRow is a workspace's stored policy with its window's state.
type policyRow struct {
	pol     payoutkit.PayoutPolicy
	hour    int64     // the boundary hour spend_expired refers to
	pos     time.Time // how far the window has moved into that hour
	expired int64
}

func scanPolicy(sc Scanner) (policyRow, error) {
	var r policyRow
	var maxP, daily, approval sql.NullInt64
	var cooling int64
	err := sc.Scan(&maxP, &daily, &approval, &r.pol.AddressAllowlist, &cooling, &r.hour, TimeCol{&r.pos}, &r.expired)
	r.pol.MaxPayout = limitOf(maxP)
	r.pol.DailyLimit = limitOf(daily)
	r.pol.ApprovalOver = limitOf(approval)
	r.pol.CoolingOff = time.Duration(cooling) * time.Microsecond
	return r, err
}

func limitOf(n sql.NullInt64) payoutkit.Limit {
	return payoutkit.Limit{Amount: payoutkit.Amount(n.Int64), Set: n.Valid}
}

func limitArg(l payoutkit.Limit) any {
	if !l.Set {
		return nil
	}
	return int64(l.Amount)
}

const (
	selectPolicySQL = `SELECT ` + policyCols + ` FROM payout_policies WHERE workspace_id = $1`
	upsertPolicySQL = `INSERT INTO payout_policies (workspace_id, ` + policyCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (workspace_id) DO UPDATE SET max_payout = excluded.max_payout, daily_limit = excluded.daily_limit,
			approval_over = excluded.approval_over, address_allowlist = excluded.address_allowlist, cooling_off = excluded.cooling_off,
			spend_hour = excluded.spend_hour, spend_pos = excluded.spend_pos, spend_expired = excluded.spend_expired`
	setControlsSQL = `UPDATE balances SET controls = $2 WHERE workspace_id = $1`
	windowStateSQL = `UPDATE payout_policies SET spend_hour = $2, spend_pos = $3, spend_expired = $4 WHERE workspace_id = $1`
	spendAddSQL    = `INSERT INTO payout_spend (workspace_id, hour, amount) VALUES ($1, $2, $3)
		ON CONFLICT (workspace_id, hour) DO UPDATE SET amount = payout_spend.amount + excluded.amount`
	spendDropSQL       = `DELETE FROM payout_spend WHERE workspace_id = $1 AND hour < $2`
	spendClearSQL      = `DELETE FROM payout_spend WHERE workspace_id = $1`
	windowFillSQL      = `SELECT created_at, amount FROM payouts WHERE workspace_id = $1 AND created_at > $2 AND status <> 'failed'`
	insertLogSQL       = `INSERT INTO security_log (workspace_id, at, action, actor, client_addr, details) VALUES ($1, $2, $3, $4, $5, $6)`
	securityLogCols    = `workspace_id, at, action, actor, client_addr, details`
	securityPageSQL    = `SELECT ` + securityLogCols + `, seq FROM security_log WHERE workspace_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`
	addressCols        = `workspace_id, network, address, address_key, label, added_at, usable_from`
	insertAddressSQL   = `INSERT INTO address_book (` + addressCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (workspace_id, network, address_key) DO NOTHING`
	addressesSQL       = `SELECT ` + addressCols + ` FROM address_book WHERE workspace_id = $1 ORDER BY seq`
	removeAddressSQL   = `DELETE FROM address_book WHERE workspace_id = $1 AND network = $2 AND address_key = $3`
	giveBackSpendSQL   = `UPDATE payout_spend SET amount = amount - $3 WHERE workspace_id = $1 AND hour = $2`
	giveBackExpiredSQL = `UPDATE payout_policies SET spend_expired = spend_expired - $3
		WHERE workspace_id = $1 AND spend_hour = $2 AND spend_pos >= $4 AND daily_limit IS NOT NULL`
	approveSQL = `UPDATE payouts SET approval = 'approved', updated_at = $3
		WHERE workspace_id = $1 AND payout_id = $2 AND status = 'submitted' AND approval = 'pending'`
)

// holdPayoutSQL holds a payout for approval. It is not handed over until
// approved, so a hand-off lease its create took (payoutkit.Lease) is given
// up: the approval's claim need not wait for it.
const holdPayoutSQL = `UPDATE payouts SET approval = 'pending', handoff_owner = NULL, handoff_lease_until = NULL
	WHERE workspace_id = $1 AND payout_id = $2`

// ControlWriteSQL are the statements that creates and failures run for the
// payout controls, for a store that prepares the statements of its hot
// paths (OpsConfig.Exec, OpsConfig.QueryRow).
var ControlWriteSQL = []string{spendAddSQL, windowStateSQL, spendDropSQL, holdPayoutSQL, giveBackSpendSQL, giveBackExpiredSQL}

func (o *Ops) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if o.c.Exec != nil {
		return o.c.Exec(ctx, tx, query, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

func (o *Ops) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if o.c.QueryRow != nil {
		return o.c.QueryRow(ctx, tx, query, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// hourStart is the first instant of an hour since the Unix epoch.
func hourStart(h int64) time.Time { return time.UnixMicro(h * int64(time.Hour/time.Microsecond)).UTC() }

// ErrNoControls is JudgeCreate's answer for a workspace whose policy
// refuses nothing: the debit that sent the create to it was refused by the
// balance alone.
var ErrNoControls = errors.New("sqlstore: no payout controls")

// Judged is a create that passed the policy, with what the policy keeps of
// it once it is debited (Record, or a store's own statement): its hold,
// and, under a daily limit, its amount in its hour's sum and the window's
// new state.
type Judged struct {
	Approval payoutkit.Approval
	// Daily: the workspace has a daily limit, and the payout's amount joins
	// the sum of its hour, payoutkit.SpendHour(p.CreatedAt).
	Daily bool
	// Moved: the window's boundary moved, to SpendHour, SpendPos and
	// SpendExpired (payout_policies' spend_* columns), and the sums of the
	// hours before SpendHour are no longer read.
	Moved        bool
	SpendHour    int64
	SpendPos     time.Time
	SpendExpired int64

	newHour bool // the boundary is in a later hour than before
	o       *Ops
	p       payoutkit.Payout
}

// judgeSQL reads, in one statement, what JudgeCreate needs: the policy
// with its window's state; the sum of the hours from the boundary hour on;
// the amounts of the payouts that have not failed which the window's edge
// passes on its way to the create's now-24h; the address book's entry.
// $1 workspace, $2 the boundary hour of now-24h, $3 the instant before that
// hour starts, $4 now-24h, $5 network, $6 address key. The window's reads
// are guarded by daily_limit, so a workspace without one does none.
func judgeSQL(param func(n int, cast string) string) string {
	b, start, cutoff := param(2, "bigint"), param(3, "timestamptz"), param(4, "timestamptz")
	boundary := `CASE WHEN ` + b + ` > p.spend_hour THEN ` + b + ` ELSE p.spend_hour END`
	passes := `x.created_at <= ` + cutoff + ` AND x.created_at > CASE WHEN ` + b + ` > p.spend_hour THEN ` + start + ` ELSE p.spend_pos END`
	return `SELECT ` + prefixed("p.", policyCols) + `,
	CASE WHEN p.daily_limit IS NULL THEN 0 ELSE (SELECT COALESCE(SUM(s.amount), 0) FROM payout_spend s
		WHERE s.workspace_id = p.workspace_id AND s.hour >= ` + boundary + `) END,
	CASE WHEN p.daily_limit IS NULL OR ` + b + ` < p.spend_hour THEN 0 ELSE (SELECT COALESCE(SUM(x.amount), 0) FROM payouts x
		WHERE x.workspace_id = p.workspace_id AND x.status <> 'failed' AND ` + passes + `) END,
	CASE WHEN p.daily_limit IS NULL OR ` + b + ` < p.spend_hour THEN 0 ELSE (SELECT count(*) FROM payouts x
		WHERE x.workspace_id = p.workspace_id AND ` + passes + `) END,
	(SELECT a.usable_from FROM address_book a WHERE a.workspace_id = p.workspace_id AND a.network = ` + param(5, "text") + `
		AND a.address_key = ` + param(6, "text") + `)
	FROM payout_policies p WHERE p.workspace_id = ` + param(1, "text")
}

// prefixed puts prefix before each of a comma-separated column list.
func prefixed(prefix, cols string) string {
	parts := strings.Split(cols, ", ")
	for i, c := range parts {
		parts[i] = prefix + c
	}
	return strings.Join(parts, ", ")
}

// JudgeSQL is JudgeCreate's statement as the store's OpsConfig renders it,
// for a store that prepares it.
func (o *Ops) JudgeSQL() string { return o.judge }

// JudgeCreate judges the payout p, inserted in tx but not yet debited,
// against its workspace's policy, reading the policy, the 24-hour window and
// the address book in tx with one statement, after the balance row's lock
// where the database needs one (OpsConfig.LockBalanceSQL). It changes
// nothing: a refusal is the policy's error, a workspace without controls
// ErrNoControls.
func (o *Ops) JudgeCreate(ctx context.Context, tx *sql.Tx, p payoutkit.Payout) (*Judged, error) {
	if o.c.LockBalanceSQL != "" {
		if _, err := o.exec(ctx, tx, o.c.LockBalanceSQL, p.WorkspaceID); err != nil {
			return nil, err
		}
	}
	cutoff := p.CreatedAt.Add(-payoutkit.DailyWindow)
	b := payoutkit.SpendHour(cutoff)
	var row policyRow
	var maxP, daily, approval sql.NullInt64
	var cooling, sum, passed, walked int64
	var usable time.Time
	err := o.queryRow(ctx, tx, o.judge, p.WorkspaceID, b, o.c.TS(hourStart(b).Add(-time.Microsecond)), o.c.TS(cutoff),
		p.Network, payoutkit.AddressKey(p.Network, p.Address)).
		Scan(&maxP, &daily, &approval, &row.pol.AddressAllowlist, &cooling, &row.hour, TimeCol{&row.pos}, &row.expired,
			&sum, &passed, &walked, TimeCol{&usable})
	row.pol.MaxPayout, row.pol.DailyLimit, row.pol.ApprovalOver = limitOf(maxP), limitOf(daily), limitOf(approval)
	row.pol.CoolingOff = time.Duration(cooling) * time.Microsecond
	if errors.Is(err, sql.ErrNoRows) || err == nil && !row.pol.Controls() {
		return nil, ErrNoControls
	} else if err != nil {
		return nil, err
	}
	j := &Judged{o: o, p: p, Daily: row.pol.DailyLimit.Set, SpendHour: row.hour, SpendPos: row.pos, SpendExpired: row.expired}
	check := payoutkit.PolicyCheck{Policy: row.pol}
	if j.Daily {
		switch {
		case b > row.hour: // the edge moved into a later hour: start there
			j.Moved, j.newHour, j.SpendHour, j.SpendPos, j.SpendExpired = true, true, b, cutoff, passed
		case b == row.hour && cutoff.After(row.pos) && walked != 0:
			// Where the edge passed no payout at all, it need not be
			// written: the next create walks that empty stretch again.
			j.Moved, j.SpendPos, j.SpendExpired = true, cutoff, row.expired+passed
		}
		check.Spent = payoutkit.Amount(sum - j.SpendExpired)
	}
	if !usable.IsZero() {
		check.Entry.UsableFrom, check.InBook = usable, true
	}
	j.Approval, err = check.Judge(p)
	if err != nil {
		return nil, err
	}
	return j, nil
}

// Record writes what the policy keeps of the debited payout, statement by
// statement.
func (j *Judged) Record(ctx context.Context, tx *sql.Tx) error {
	o, p := j.o, j.p
	if j.Daily {
		if _, err := o.exec(ctx, tx, spendAddSQL, p.WorkspaceID, payoutkit.SpendHour(p.CreatedAt), int64(p.Amount)); err != nil {
			return err
		}
		if j.Moved {
			if _, err := o.exec(ctx, tx, windowStateSQL, p.WorkspaceID, j.SpendHour, o.c.TS(j.SpendPos), j.SpendExpired); err != nil {
				return err
			}
		}
		if j.newHour {
			if _, err := o.exec(ctx, tx, spendDropSQL, p.WorkspaceID, j.SpendHour); err != nil {
				return err
			}
		}
	}
	if j.Approval == payoutkit.ApprovalPending {
		if _, err := o.exec(ctx, tx, holdPayoutSQL, p.WorkspaceID, p.PayoutID); err != nil {
			return err
		}
	}
	return nil
}

// GiveBack returns a failed payout's amount to the 24-hour window: to its
// hour's sum, and to spend_expired when the window had passed it. Without a
// daily limit both statements change nothing.
func (o *Ops) GiveBack(ctx context.Context, tx *sql.Tx, workspaceID string, amount int64, createdAt time.Time) error {
	if _, err := o.exec(ctx, tx, giveBackSpendSQL,
		workspaceID, payoutkit.SpendHour(createdAt), amount); err != nil {
		return err
	}
	_, err := o.exec(ctx, tx, giveBackExpiredSQL,
		workspaceID, payoutkit.SpendHour(createdAt), amount, o.c.TS(createdAt))
	return err
}

// PayoutPolicy implements payoutkit.ControlStore.
func (o *Ops) PayoutPolicy(ctx context.Context, workspaceID string) (payoutkit.PayoutPolicy, error) {
	row, err := scanPolicy(o.w.Reader().QueryRowContext(ctx, selectPolicySQL, workspaceID))
	if errors.Is(err, sql.ErrNoRows) {
		if err := WorkspaceExists(ctx, o.w.Reader(), workspaceID); err != nil {
			return payoutkit.PayoutPolicy{}, o.c.Translate(ctx, "payout policy", err)
		}
		return payoutkit.DefaultPayoutPolicy(), nil
	}
	if err != nil {
		return payoutkit.PayoutPolicy{}, o.c.Translate(ctx, "payout policy", err)
	}
	return row.pol, nil
}

// UpdatePayoutPolicy implements payoutkit.ControlStore. It locks the
// balance row first (by writing its controls flag), so that every create
// either finished before it, or waits and then reads the new policy.
func (o *Ops) UpdatePayoutPolicy(ctx context.Context, workspaceID string, patch payoutkit.PolicyPatch, log payoutkit.SecurityLogEntry) (payoutkit.PayoutPolicy, error) {
	var pol payoutkit.PayoutPolicy
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, setControlsSQL, workspaceID, false); err != nil {
			return err
		}
		row, err := scanPolicy(tx.QueryRowContext(ctx, selectPolicySQL, workspaceID))
		if errors.Is(err, sql.ErrNoRows) {
			if err := WorkspaceExists(ctx, tx, workspaceID); err != nil {
				return err
			}
			row, err = policyRow{pol: payoutkit.DefaultPayoutPolicy()}, nil
		}
		if err != nil {
			return err
		}
		was := row.pol.DailyLimit.Set
		row.pol = patch.Apply(row.pol)
		pol = row.pol
		switch {
		case pol.DailyLimit.Set && !was:
			if row, err = o.fillWindow(ctx, tx, workspaceID, row, log.At); err != nil {
				return err
			}
		case !pol.DailyLimit.Set && was:
			if _, err := tx.ExecContext(ctx, spendClearSQL, workspaceID); err != nil {
				return err
			}
			row.hour, row.pos, row.expired = 0, time.Time{}, 0
		}
		if _, err := tx.ExecContext(ctx, upsertPolicySQL, workspaceID, limitArg(pol.MaxPayout), limitArg(pol.DailyLimit), limitArg(pol.ApprovalOver),
			pol.AddressAllowlist, pol.CoolingOff.Microseconds(), row.hour, o.c.TS(row.pos), row.expired); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, setControlsSQL, workspaceID, pol.Controls()); err != nil {
			return err
		}
		return o.appendLog(ctx, tx, log)
	})
	if err != nil {
		return payoutkit.PayoutPolicy{}, o.c.Translate(ctx, "update payout policy", err)
	}
	return pol, nil
}

// fillWindow writes the hourly sums of the workspace's payouts of the 24
// hours before now that have not failed, for a daily limit just set.
func (o *Ops) fillWindow(ctx context.Context, tx *sql.Tx, workspaceID string, row policyRow, now time.Time) (policyRow, error) {
	cutoff := now.Add(-payoutkit.DailyWindow)
	if _, err := tx.ExecContext(ctx, spendClearSQL, workspaceID); err != nil {
		return row, err
	}
	rows, err := tx.QueryContext(ctx, windowFillSQL, workspaceID, o.c.TS(cutoff))
	if err != nil {
		return row, err
	}
	sums := map[int64]int64{}
	for rows.Next() {
		var at time.Time
		var amount int64
		if err := rows.Scan(TimeCol{&at}, &amount); err != nil {
			rows.Close()
			return row, err
		}
		sums[payoutkit.SpendHour(at)] += amount
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return row, err
	}
	for h, sum := range sums {
		if _, err := tx.ExecContext(ctx, spendAddSQL, workspaceID, h, sum); err != nil {
			return row, err
		}
	}
	// The boundary hour's sum holds only what is after cutoff: nothing of
	// it is expired.
	row.hour, row.pos, row.expired = payoutkit.SpendHour(cutoff), cutoff, 0
	return row, nil
}

// appendLog inserts a security log entry in tx.
func (o *Ops) appendLog(ctx context.Context, tx *sql.Tx, e payoutkit.SecurityLogEntry) error {
	d := e.Details
	if d == nil {
		d = map[string]string{}
	}
	details, err := json.Marshal(d)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, insertLogSQL, e.WorkspaceID, o.c.TS(e.At), e.Action, e.Actor, e.ClientAddr, string(details))
	return err
}

// AppendLog inserts a security log entry in tx, for a store's own
// transactions (an approval, a rejection).
func (o *Ops) AppendLog(ctx context.Context, tx *sql.Tx, e payoutkit.SecurityLogEntry) error {
	return o.appendLog(ctx, tx, e)
}

// AppendSecurityLog implements payoutkit.ControlStore.
func (o *Ops) AppendSecurityLog(ctx context.Context, e payoutkit.SecurityLogEntry) error {
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		if err := WorkspaceExists(ctx, tx, e.WorkspaceID); err != nil {
			return err
		}
		return o.appendLog(ctx, tx, e)
	})
	return o.c.Translate(ctx, "append security log", err)
}

// ScanSecurityLog scans securityLogCols, then extra.
func ScanSecurityLog(sc Scanner, extra ...any) (payoutkit.SecurityLogEntry, error) {
	var e payoutkit.SecurityLogEntry
	var details string
	err := sc.Scan(append([]any{&e.WorkspaceID, TimeCol{&e.At}, &e.Action, &e.Actor, &e.ClientAddr, &details}, extra...)...)
	if err == nil {
		err = json.Unmarshal([]byte(details), &e.Details)
	}
	return e, err
}

// SecurityLog implements payoutkit.ControlStore.
func (o *Ops) SecurityLog(ctx context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.SecurityLogEntry], error) {
	return List(ctx, o, "security log", workspaceID, page, securityPageSQL, ScanSecurityLog)
}

// AddAddress implements payoutkit.ControlStore: the entry, its event and
// the log entry in one transaction.
func (o *Ops) AddAddress(ctx context.Context, e payoutkit.AddressEntry, ev payoutkit.Event, log payoutkit.SecurityLogEntry) error {
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		if err := WorkspaceExists(ctx, tx, e.WorkspaceID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, insertAddressSQL, e.WorkspaceID, e.Network, e.Address, e.Key, e.Label, o.c.TS(e.AddedAt), o.c.TS(e.UsableFrom))
		if err != nil {
			return err
		}
		if err := MustAffect(res, payoutkit.ErrConflict); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, o.c.InsertEventSQL, append([]any{e.WorkspaceID}, EventArgs(ev, o.c.TS)...)...); err != nil {
			return err
		}
		return o.appendLog(ctx, tx, log)
	})
	if err != nil {
		return o.c.Translate(ctx, "add address", err)
	}
	o.w.Committed()
	return nil
}

// Addresses implements payoutkit.ControlStore.
func (o *Ops) Addresses(ctx context.Context, workspaceID string) ([]payoutkit.AddressEntry, error) {
	rows, err := o.w.Reader().QueryContext(ctx, addressesSQL, workspaceID)
	if err != nil {
		return nil, o.c.Translate(ctx, "addresses", err)
	}
	defer rows.Close()
	list := []payoutkit.AddressEntry{}
	for rows.Next() {
		var a payoutkit.AddressEntry
		if err := rows.Scan(&a.WorkspaceID, &a.Network, &a.Address, &a.Key, &a.Label, TimeCol{&a.AddedAt}, TimeCol{&a.UsableFrom}); err != nil {
			return nil, o.c.Translate(ctx, "addresses", err)
		}
		list = append(list, a)
	}
	if err := rows.Err(); err != nil {
		return nil, o.c.Translate(ctx, "addresses", err)
	}
	if len(list) == 0 {
		if err := WorkspaceExists(ctx, o.w.Reader(), workspaceID); err != nil {
			return nil, o.c.Translate(ctx, "addresses", err)
		}
	}
	return list, nil
}

// RemoveAddress implements payoutkit.ControlStore.
func (o *Ops) RemoveAddress(ctx context.Context, workspaceID, network, key string, log payoutkit.SecurityLogEntry) (int, error) {
	var n int64
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		if err := WorkspaceExists(ctx, tx, workspaceID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, removeAddressSQL, workspaceID, network, key)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		return o.appendLog(ctx, tx, log)
	})
	if err != nil {
		return 0, o.c.Translate(ctx, "remove address", err)
	}
	return int(n), nil
}

// ApprovePayout implements payoutkit.ControlStore.
func (o *Ops) ApprovePayout(ctx context.Context, workspaceID, payoutID string, at time.Time, log payoutkit.SecurityLogEntry) error {
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, approveSQL, workspaceID, payoutID, o.c.TS(at))
		if err != nil {
			return err
		}
		if err := MustAffect(res, payoutkit.ErrConflict); err != nil {
			var one int
			if rerr := tx.QueryRowContext(ctx, `SELECT 1 FROM payouts WHERE workspace_id = $1 AND payout_id = $2`, workspaceID, payoutID).Scan(&one); rerr != nil {
				return rerr
			}
			return err
		}
		return o.appendLog(ctx, tx, log)
	})
	if err != nil {
		return o.c.Translate(ctx, "approve payout", err)
	}
	o.w.Committed()
	return nil
}
