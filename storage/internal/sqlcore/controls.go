package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/payoutkit/payoutkit"
)

// The payout controls (contract, section 10) on both databases.
//
// The 24-hour limit. The window's state lives on the balance row, which
// every create already writes: window_spent is the sum of the workspace's
// payouts created after window_pos that have not failed, and window_next
// is no later than the first of them (NULL: there is none). A create at
// now adds its amount if window_spent stays within the limit: the window's
// sum when no payout lies in (window_pos, now-24h] (window_next is after
// now-24h), and otherwise a larger sum, so that what it accepts is within
// the limit too (Fast lets the edge lag WindowLag behind). JudgeCreate,
// which decides every refusal, first moves window_pos to now-24h, taking
// off the payouts it passes, read through the (workspace_id, created_at,
// seq) index: every payout is passed once, so the cost per payout is O(1)
// however many payouts the window holds. A payout that fails gives its
// amount back in the transaction that fails it, if the window still holds
// it. Setting a daily limit fills the state from the payouts of the last
// 24 hours in the transaction that sets it; without one, window_pos is
// NULL and nothing reads or writes the window.
//
// Judged from memory. Every change of a workspace's policy or address
// book writes a new random balances.controls_version. A create judged once
// (JudgeCreate) leaves its workspace's policy, and the address book's
// answer for its address, in the Ops's memory with that version; the
// workspace's next creates are judged from there (Ops.Fast), and their
// debit carries "controls_version = the one read", with the daily limit as
// a condition on the balance row. A debit that does not match (the policy
// changed on any instance, the window's edge is due to move, the limit or
// the balance refuses) is judged again from the database, which decides
// the answer.
//
// Payouts of workspaces without controls never read any of this: their
// debit carries no version, so it happens only while balances.controls
// (kept with the policy) is false, and only a debit refused by it reads the
// policy. All three (not judged, judged from memory, judged by
// JudgeCreate) are the same debit (Debit), told apart by its arguments.

// policyCols are payout_policies' columns after workspace_id.
const policyCols = `max_payout, daily_limit, approval_over, address_allowlist, cooling_off`

func scanPolicy(sc Scanner) (payoutkit.PayoutPolicy, error) {
	var pol payoutkit.PayoutPolicy
	var maxP, daily, approval sql.NullInt64
	var cooling int64
	err := sc.Scan(&maxP, &daily, &approval, &pol.AddressAllowlist, &cooling)
	pol.MaxPayout, pol.DailyLimit, pol.ApprovalOver = limitOf(maxP), limitOf(daily), limitOf(approval)
	pol.CoolingOff = time.Duration(cooling) * time.Microsecond
	return pol, err
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
	upsertPolicySQL = `INSERT INTO payout_policies (workspace_id, ` + policyCols + `) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (workspace_id) DO UPDATE SET max_payout = excluded.max_payout, daily_limit = excluded.daily_limit,
			approval_over = excluded.approval_over, address_allowlist = excluded.address_allowlist, cooling_off = excluded.cooling_off`
	setControlsSQL = `UPDATE balances SET controls = $2 WHERE workspace_id = $1`
	// newVersionSQL gives the workspace's controls a new version; written
	// first, it also takes the balance row's lock (a create in flight
	// either finished before, or waits and then reads what changed).
	newVersionSQL = `UPDATE balances SET controls_version = $2 WHERE workspace_id = $1`
	setWindowSQL  = `UPDATE balances SET window_pos = $2, window_spent = $3, window_next = $4 WHERE workspace_id = $1`
	// windowFillSQL: the sum of the payouts after $2 that have not failed,
	// but $3 (a create's own, inserted but not judged), and the first of
	// them.
	windowFillSQL = `SELECT COALESCE(SUM(CASE WHEN status <> 'failed' THEN amount ELSE 0 END), 0), MIN(created_at)
		FROM payouts WHERE workspace_id = $1 AND created_at > $2 AND payout_id <> $3`
	// windowMoveSQL: the sum of the payouts in ($2, $3] that have not
	// failed, and the first payout after $3.
	windowMoveSQL = `SELECT (SELECT COALESCE(SUM(amount), 0) FROM payouts
			WHERE workspace_id = $1 AND created_at > $2 AND created_at <= $3 AND status <> 'failed'),
		(SELECT MIN(created_at) FROM payouts WHERE workspace_id = $1 AND created_at > $3)`
	insertLogSQL     = `INSERT INTO security_log (workspace_id, at, action, actor, client_addr, details) VALUES ($1, $2, $3, $4, $5, $6)`
	securityLogCols  = `workspace_id, at, action, actor, client_addr, details`
	securityPageSQL  = `SELECT ` + securityLogCols + `, seq FROM security_log WHERE workspace_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`
	addressCols      = `workspace_id, network, address, address_key, label, added_at, usable_from`
	insertAddressSQL = `INSERT INTO address_book (` + addressCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (workspace_id, network, address_key) DO NOTHING`
	addressesSQL     = `SELECT ` + addressCols + ` FROM address_book WHERE workspace_id = $1 ORDER BY seq`
	removeAddressSQL = `DELETE FROM address_book WHERE workspace_id = $1 AND network = $2 AND address_key = $3`
	approveSQL       = `UPDATE payouts SET approval = 'approved', updated_at = $3
		WHERE workspace_id = $1 AND payout_id = $2 AND status = 'submitted' AND approval = 'pending'`
)

// holdPayoutSQL holds a payout for approval. It is not handed over until
// approved, so a hand-off lease its create took (payoutkit.Lease) is given
// up: the approval's claim need not wait for it.
const holdPayoutSQL = `UPDATE payouts SET approval = 'pending', handoff_owner = NULL, handoff_lease_until = NULL
	WHERE workspace_id = $1 AND payout_id = $2`

// ControlWriteSQL are the statements that creates run for the payout
// controls, for a store that prepares the statements of its hot paths
// (OpsConfig.Exec, OpsConfig.QueryRow).
var ControlWriteSQL = []string{holdPayoutSQL, windowMoveSQL}

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

// newControlsVersion is a workspace's controls' next version: random, so
// that a version read in a transaction that rolled back is never taken for
// a later change's.
func newControlsVersion() int64 { return int64(rand.Uint64() >> 1) }

// ErrNoControls is JudgeCreate's answer for a workspace whose policy
// refuses nothing: the debit that sent the create to it was refused by the
// balance alone.
var ErrNoControls = errors.New("sqlstore: no payout controls")

// Window is the 24-hour window's state on a workspace's balance row. Pos
// is zero when the workspace has no daily limit.
type Window struct {
	// Pos is the window's edge: the payouts created at or before it are
	// out of it.
	Pos time.Time
	// Spent is the sum of the payouts after Pos that have not failed.
	Spent int64
	// Next is no later than the first payout after Pos; zero when there is
	// none.
	Next time.Time
}

// WindowArgs are w's window_pos, window_spent and window_next as the store's
// database takes them.
func (o *Ops) WindowArgs(w Window) []any { return []any{o.c.TS(w.Pos), w.Spent, o.c.TS(w.Next)} }

// Judged is a create that passed the policy: its hold, and the window's
// state once it is debited, which the store's debit writes with the
// balance (DebitArgs).
type Judged struct {
	Approval payoutkit.Approval
	Window   Window

	o *Ops
	p payoutkit.Payout
}

// Fast is what a create's debit carries to be judged by it alone: the
// version of the controls it was judged by, the daily limit (nil for none),
// now-24h (Cutoff) and WindowLag before it (Stale). The debit happens only
// if the version is still the workspace's (or the workspace has no
// controls), the balance covers it, and, under a daily limit, the window's
// sum stays within the limit with the payout, while either no payout has to
// leave the window or its edge moved less than WindowLag ago. A sum with
// payouts still in it that have left the window is larger than the
// window's: within the limit, so is the window's. A debit refused goes to
// JudgeCreate, which moves the edge and decides.
type Fast struct {
	Version int64
	Limit   any
	Cutoff  any
	Stale   any
}

// WindowLag is how far the window's edge may lag behind a create judged
// from memory. Without it, once a workspace has 24 hours of payouts every
// create passes one and goes to JudgeCreate; with it, one create in each
// WindowLag does, walking the payouts of that WindowLag.
const WindowLag = time.Second

// controlsCache is what JudgeCreate read last of each workspace's controls,
// with the version it read.
type controlsCache struct {
	policies  sync.Map // workspace ID → *cachedPolicy
	addresses sync.Map // addressID → *cachedAddress
	nAddress  atomic.Int64
}

// maxCachedAddresses bounds the address answers kept: past it, the memory
// starts again empty.
const maxCachedAddresses = 1 << 16

type cachedPolicy struct {
	version int64
	pol     payoutkit.PayoutPolicy
}

// addressID is a payout's address as the payout names it.
type addressID struct{ workspaceID, network, address string }

// cachedAddress is the address book's answer: usable is the entry's
// usable_from, zero when the address is not in the book.
type cachedAddress struct {
	version int64
	usable  time.Time
}

func (c *controlsCache) remember(p payoutkit.Payout, version int64, pol payoutkit.PayoutPolicy, usable time.Time) {
	c.policies.Store(p.WorkspaceID, &cachedPolicy{version: version, pol: pol})
	if !pol.AddressAllowlist {
		return
	}
	if c.nAddress.Add(1) > maxCachedAddresses {
		c.addresses.Clear()
		c.nAddress.Store(1)
	}
	c.addresses.Store(addressID{p.WorkspaceID, p.Network, p.Address}, &cachedAddress{version: version, usable: usable})
}

// Controlled reports whether the workspace's last create judged found
// payout controls: its next create is judged (Fast, or JudgeCreate) before
// its debit, instead of first trying the debit that controls refuse.
func (o *Ops) Controlled(workspaceID string) bool {
	_, ok := o.cache.policies.Load(workspaceID)
	return ok
}

// Fast judges p by what JudgeCreate last read of its workspace's controls.
// It reports false when that is not known, or when p would be refused or
// held: JudgeCreate judges those from the database.
func (o *Ops) Fast(p payoutkit.Payout) (Fast, bool) {
	v, ok := o.cache.policies.Load(p.WorkspaceID)
	if !ok {
		return Fast{}, false
	}
	c := v.(*cachedPolicy)
	check := payoutkit.PolicyCheck{Policy: c.pol}
	check.Policy.DailyLimit = payoutkit.Limit{} // the debit judges it
	if c.pol.AddressAllowlist {
		v, ok := o.cache.addresses.Load(addressID{p.WorkspaceID, p.Network, p.Address})
		if !ok || v.(*cachedAddress).version != c.version {
			return Fast{}, false
		}
		a := v.(*cachedAddress)
		check.InBook, check.Entry.UsableFrom = !a.usable.IsZero(), a.usable
	}
	if approval, err := check.Judge(p); err != nil || approval != payoutkit.ApprovalNone {
		return Fast{}, false
	}
	cutoff := p.CreatedAt.Add(-payoutkit.DailyWindow)
	return Fast{Version: c.version, Limit: limitArg(c.pol.DailyLimit), Cutoff: o.c.TS(cutoff), Stale: o.c.TS(cutoff.Add(-WindowLag))}, true
}

// judgeSQL reads, in one statement, what JudgeCreate needs: the policy,
// the controls' version and the window's state, and the address book's
// entry. $1 workspace, $2 network, $3 address key.
func judgeSQL(param func(n int, cast string) string) string {
	return `SELECT p.max_payout, p.daily_limit, p.approval_over, p.address_allowlist, p.cooling_off,
	b.controls_version, b.window_pos, b.window_spent, b.window_next,
	(SELECT a.usable_from FROM address_book a WHERE a.workspace_id = p.workspace_id AND a.network = ` + param(2, "text") + `
		AND a.address_key = ` + param(3, "text") + `)
	FROM payout_policies p JOIN balances b ON b.workspace_id = p.workspace_id WHERE p.workspace_id = ` + param(1, "text")
}

// JudgeSQL is JudgeCreate's statement as the store's OpsConfig renders it,
// for a store that prepares it.
func (o *Ops) JudgeSQL() string { return o.judge }

// JudgeCreate judges the payout p, inserted in tx but not yet debited,
// against its workspace's policy, reading the policy, the window and the
// address book in tx, after the balance row's lock where the database
// needs one (OpsConfig.LockBalanceSQL), and moving the window's edge to
// p's now-24h if payouts have to leave it. It changes nothing: a refusal
// is the policy's error, a workspace without controls ErrNoControls. What
// it read is remembered for Fast.
func (o *Ops) JudgeCreate(ctx context.Context, tx *sql.Tx, p payoutkit.Payout) (*Judged, error) {
	if o.c.LockBalanceSQL != "" {
		if _, err := o.exec(ctx, tx, o.c.LockBalanceSQL, p.WorkspaceID); err != nil {
			return nil, err
		}
	}
	var pol payoutkit.PayoutPolicy
	var maxP, daily, approval sql.NullInt64
	var cooling, version int64
	var w Window
	var usable time.Time
	err := o.queryRow(ctx, tx, o.judge, p.WorkspaceID, p.Network, payoutkit.AddressKey(p.Network, p.Address)).
		Scan(&maxP, &daily, &approval, &pol.AddressAllowlist, &cooling, &version, TimeCol{&w.Pos}, &w.Spent, TimeCol{&w.Next}, TimeCol{&usable})
	pol.MaxPayout, pol.DailyLimit, pol.ApprovalOver = limitOf(maxP), limitOf(daily), limitOf(approval)
	pol.CoolingOff = time.Duration(cooling) * time.Microsecond
	if errors.Is(err, sql.ErrNoRows) || err == nil && !pol.Controls() {
		o.cache.policies.Delete(p.WorkspaceID)
		return nil, ErrNoControls
	} else if err != nil {
		return nil, err
	}
	o.cache.remember(p, version, pol, usable)
	check := payoutkit.PolicyCheck{Policy: pol, InBook: !usable.IsZero()}
	check.Entry.UsableFrom = usable
	if pol.DailyLimit.Set {
		if w, err = o.moveWindow(ctx, tx, p, w); err != nil {
			return nil, err
		}
		check.Spent = payoutkit.Amount(w.Spent)
	} else {
		w = Window{}
	}
	j := &Judged{o: o, p: p}
	if j.Approval, err = check.Judge(p); err != nil {
		return nil, err
	}
	if pol.DailyLimit.Set && p.CreatedAt.After(w.Pos) {
		w.Spent += int64(p.Amount)
		if w.Next.IsZero() || p.CreatedAt.Before(w.Next) {
			w.Next = p.CreatedAt
		}
	}
	j.Window = w
	return j, nil
}

// moveWindow returns the window w with its edge at p's now-24h, when
// payouts have to leave it (or its state is missing).
func (o *Ops) moveWindow(ctx context.Context, tx *sql.Tx, p payoutkit.Payout, w Window) (Window, error) {
	cutoff := p.CreatedAt.Add(-payoutkit.DailyWindow)
	switch {
	case w.Pos.IsZero():
		return o.fillWindow(ctx, tx, p.WorkspaceID, p.PayoutID, cutoff)
	case w.Next.IsZero() || w.Next.After(cutoff):
		return w, nil
	}
	var passed int64
	var next time.Time
	err := o.queryRow(ctx, tx, windowMoveSQL, p.WorkspaceID, o.c.TS(w.Pos), o.c.TS(cutoff)).Scan(&passed, TimeCol{&next})
	return Window{Pos: cutoff, Spent: w.Spent - passed, Next: next}, err
}

// fillWindow is the window at cutoff, from the workspace's payouts after
// it but the one named except.
func (o *Ops) fillWindow(ctx context.Context, tx *sql.Tx, workspaceID, except string, cutoff time.Time) (Window, error) {
	w := Window{Pos: cutoff}
	err := tx.QueryRowContext(ctx, windowFillSQL, workspaceID, o.c.TS(cutoff), except).Scan(&w.Spent, TimeCol{&w.Next})
	return w, err
}

// Record writes what the policy keeps of the debited payout that its
// debit did not: its hold.
func (j *Judged) Record(ctx context.Context, tx *sql.Tx) error {
	if j.Approval != payoutkit.ApprovalPending {
		return nil
	}
	_, err := j.o.exec(ctx, tx, holdPayoutSQL, j.p.WorkspaceID, j.p.PayoutID)
	return err
}

// PayoutPolicy implements payoutkit.Store.
func (o *Ops) PayoutPolicy(ctx context.Context, workspaceID string) (payoutkit.PayoutPolicy, error) {
	pol, err := scanPolicy(o.w.Reader().QueryRowContext(ctx, selectPolicySQL, workspaceID))
	if errors.Is(err, sql.ErrNoRows) {
		if err := WorkspaceExists(ctx, o.w.Reader(), workspaceID); err != nil {
			return payoutkit.PayoutPolicy{}, o.c.Translate(ctx, "payout policy", err)
		}
		return payoutkit.DefaultPayoutPolicy(), nil
	}
	if err != nil {
		return payoutkit.PayoutPolicy{}, o.c.Translate(ctx, "payout policy", err)
	}
	return pol, nil
}

// UpdatePayoutPolicy implements payoutkit.Store. It gives the
// controls a new version first, which takes the balance row's lock.
func (o *Ops) UpdatePayoutPolicy(ctx context.Context, workspaceID string, patch payoutkit.PolicyPatch, log payoutkit.SecurityLogEntry) (payoutkit.PayoutPolicy, error) {
	var pol payoutkit.PayoutPolicy
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, newVersionSQL, workspaceID, newControlsVersion()); err != nil {
			return err
		}
		var err error
		pol, err = scanPolicy(tx.QueryRowContext(ctx, selectPolicySQL, workspaceID))
		if errors.Is(err, sql.ErrNoRows) {
			if err := WorkspaceExists(ctx, tx, workspaceID); err != nil {
				return err
			}
			pol, err = payoutkit.DefaultPayoutPolicy(), nil
		}
		if err != nil {
			return err
		}
		was := pol.DailyLimit.Set
		pol = patch.Apply(pol)
		switch {
		case pol.DailyLimit.Set && !was:
			w, err := o.fillWindow(ctx, tx, workspaceID, "", log.At.Add(-payoutkit.DailyWindow))
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, setWindowSQL, append([]any{workspaceID}, o.WindowArgs(w)...)...); err != nil {
				return err
			}
		case !pol.DailyLimit.Set && was:
			if _, err := tx.ExecContext(ctx, setWindowSQL, append([]any{workspaceID}, o.WindowArgs(Window{})...)...); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, upsertPolicySQL, workspaceID, limitArg(pol.MaxPayout), limitArg(pol.DailyLimit), limitArg(pol.ApprovalOver),
			pol.AddressAllowlist, pol.CoolingOff.Microseconds()); err != nil {
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

// AppendSecurityLog implements staff.Store.
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

// SecurityLog implements payoutkit.Store.
func (o *Ops) SecurityLog(ctx context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.SecurityLogEntry], error) {
	return List(ctx, o, "security log", workspaceID, page, securityPageSQL, ScanSecurityLog)
}

// AddAddress implements payoutkit.Store: the entry, its event and
// the log entry in one transaction.
func (o *Ops) AddAddress(ctx context.Context, e payoutkit.AddressEntry, ev payoutkit.Event, log payoutkit.SecurityLogEntry) error {
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		if err := WorkspaceExists(ctx, tx, e.WorkspaceID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, newVersionSQL, e.WorkspaceID, newControlsVersion()); err != nil {
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

// Addresses implements payoutkit.Store.
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

// RemoveAddress implements payoutkit.Store.
func (o *Ops) RemoveAddress(ctx context.Context, workspaceID, network, key string, log payoutkit.SecurityLogEntry) (int, error) {
	var n int64
	ctx = o.c.Detach(ctx)
	err := o.w.InTx(ctx, func(tx *sql.Tx) error {
		if err := WorkspaceExists(ctx, tx, workspaceID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, newVersionSQL, workspaceID, newControlsVersion()); err != nil {
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

// ApprovePayout implements payoutkit.Store.
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
