package memstore

import (
	"context"
	"maps"
	"time"

	"github.com/payoutkit/payoutkit"
)

// controls is a workspace's payout policy, address book and security log.
type controls struct {
	policy   *payoutkit.PayoutPolicy // nil until changed
	book     map[string]*payoutkit.AddressEntry
	bookList []*payoutkit.AddressEntry
	log      []logRow
	window   window
}

// window keeps the sum of the payouts of the last 24 hours that have not
// failed, so that a payout under a daily limit costs O(1) amortised however
// many payouts the window holds. payoutList is in creation order, and while
// creation times never go back it is sorted by them: the payouts before edge
// were created at or before cutoff, the rest after it, and sum is what those
// after it, not failed, add up to. When a payout arrives dated before one
// created earlier (the clock went back), unordered falls back to reading
// every payout: exact, and rare enough not to matter in a store for tests.
type window struct {
	sum       payoutkit.Amount
	edge      int
	cutoff    time.Time
	latest    time.Time
	unordered bool
}

// spent returns the sum of the payouts created after from that have not
// failed, moving the window's edge up to from.
func (w *workspace) spent(from time.Time) payoutkit.Amount {
	win := &w.controls.window
	if win.unordered || from.Before(win.cutoff) {
		var sum payoutkit.Amount
		for _, r := range w.payoutList {
			if r.Status != payoutkit.PayoutFailed && r.CreatedAt.After(from) {
				sum += r.Amount
			}
		}
		return sum
	}
	for win.edge < len(w.payoutList) {
		r := w.payoutList[win.edge]
		if r.CreatedAt.After(from) {
			break
		}
		if r.Status != payoutkit.PayoutFailed {
			win.sum -= r.Amount
		}
		win.edge++
	}
	win.cutoff = from
	return win.sum
}

// created counts a payout just appended to payoutList.
func (w *workspace) created(row *payout) {
	win := &w.controls.window
	if row.CreatedAt.Before(win.latest) {
		win.unordered = true
	}
	win.latest = row.CreatedAt
	if !row.CreatedAt.After(win.cutoff) {
		// Dated at or before the edge (only when the clock went back,
		// which unordered already records): outside the sum.
		return
	}
	win.sum += row.Amount
}

// failed gives back the share of a payout that has just failed.
func (w *workspace) failed(row *payout) {
	if win := &w.controls.window; row.CreatedAt.After(win.cutoff) {
		win.sum -= row.Amount
	}
}

type logRow struct {
	payoutkit.SecurityLogEntry
	seq int64
}

func bookKey(network, key string) string { return network + "\x00" + key }

func (w *workspace) policy() payoutkit.PayoutPolicy {
	if w.controls.policy == nil {
		return payoutkit.DefaultPayoutPolicy()
	}
	return *w.controls.policy
}

// judge applies the workspace's policy to a new payout p.
func (w *workspace) judge(p payoutkit.Payout) (payoutkit.Approval, error) {
	c := payoutkit.PolicyCheck{Policy: w.policy()}
	if !c.Policy.Controls() {
		return payoutkit.ApprovalNone, nil
	}
	if c.Policy.DailyLimit.Set {
		c.Spent = w.spent(p.CreatedAt.Add(-payoutkit.DailyWindow))
	}
	if c.Policy.AddressAllowlist {
		if e := w.controls.book[bookKey(p.Network, payoutkit.AddressKey(p.Network, p.Address))]; e != nil {
			c.Entry, c.InBook = *e, true
		}
	}
	return c.Judge(p)
}

func (s *Store) appendLog(w *workspace, e payoutkit.SecurityLogEntry) {
	e.Details = maps.Clone(e.Details)
	w.controls.log = append(w.controls.log, logRow{SecurityLogEntry: e, seq: s.next()})
}

// PayoutPolicy implements payoutkit.Store.
func (s *Store) PayoutPolicy(_ context.Context, workspaceID string) (payoutkit.PayoutPolicy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return payoutkit.PayoutPolicy{}, err
	}
	return w.policy(), nil
}

// UpdatePayoutPolicy implements payoutkit.Store.
func (s *Store) UpdatePayoutPolicy(_ context.Context, workspaceID string, patch payoutkit.PolicyPatch, log payoutkit.SecurityLogEntry) (payoutkit.PayoutPolicy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return payoutkit.PayoutPolicy{}, err
	}
	p := patch.Apply(w.policy())
	w.controls.policy = &p
	s.appendLog(w, log)
	return p, nil
}

// AddAddress implements payoutkit.Store.
func (s *Store) AddAddress(_ context.Context, e payoutkit.AddressEntry, ev payoutkit.Event, log payoutkit.SecurityLogEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(e.WorkspaceID)
	if err != nil {
		return err
	}
	k := bookKey(e.Network, e.Key)
	if w.controls.book[k] != nil {
		return payoutkit.ErrConflict
	}
	if w.controls.book == nil {
		w.controls.book = make(map[string]*payoutkit.AddressEntry)
	}
	w.controls.book[k] = &e
	w.controls.bookList = append(w.controls.bookList, &e)
	s.addEvent(w, ev, true)
	s.appendLog(w, log)
	return nil
}

// Addresses implements payoutkit.Store.
func (s *Store) Addresses(_ context.Context, workspaceID string) ([]payoutkit.AddressEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return nil, err
	}
	out := make([]payoutkit.AddressEntry, 0, len(w.controls.bookList))
	for _, e := range w.controls.bookList {
		out = append(out, *e)
	}
	return out, nil
}

// RemoveAddress implements payoutkit.Store.
func (s *Store) RemoveAddress(_ context.Context, workspaceID, network, key string, log payoutkit.SecurityLogEntry) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return 0, err
	}
	k := bookKey(network, key)
	e := w.controls.book[k]
	s.appendLog(w, log)
	if e == nil {
		return 0, nil
	}
	delete(w.controls.book, k)
	for i, x := range w.controls.bookList {
		if x == e {
			w.controls.bookList = append(w.controls.bookList[:i:i], w.controls.bookList[i+1:]...)
			break
		}
	}
	return 1, nil
}

// held returns the workspace's payout when it awaits approval.
func (s *Store) held(workspaceID, payoutID string) (*workspace, *payout, error) {
	w, err := s.workspace(workspaceID)
	if err != nil {
		return nil, nil, err
	}
	row := w.payouts[payoutID]
	if row == nil {
		return nil, nil, payoutkit.ErrNotFound
	}
	if row.Status != payoutkit.PayoutSubmitted || row.Approval != payoutkit.ApprovalPending {
		return nil, nil, payoutkit.ErrConflict
	}
	return w, row, nil
}

// ApprovePayout implements payoutkit.Store.
func (s *Store) ApprovePayout(_ context.Context, workspaceID, payoutID string, at time.Time, log payoutkit.SecurityLogEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, row, err := s.held(workspaceID, payoutID)
	if err != nil {
		return err
	}
	row.Approval, row.UpdatedAt = payoutkit.ApprovalApproved, at
	s.appendLog(w, log)
	s.work.Notify() // a payout to hand over
	return nil
}

// RejectPayout implements payoutkit.Store.
func (s *Store) RejectPayout(_ context.Context, p payoutkit.Payout, ev payoutkit.Event, log payoutkit.SecurityLogEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, row, err := s.held(p.WorkspaceID, p.PayoutID)
	if err != nil {
		return err
	}
	p.Status, p.Approval = payoutkit.PayoutFailed, payoutkit.ApprovalRejected
	s.settle(w, row, p, ev)
	s.appendLog(w, log)
	return nil
}

// AppendSecurityLog implements staff.Store.
func (s *Store) AppendSecurityLog(_ context.Context, e payoutkit.SecurityLogEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(e.WorkspaceID)
	if err != nil {
		return err
	}
	s.appendLog(w, e)
	return nil
}

// SecurityLog implements payoutkit.Store.
func (s *Store) SecurityLog(_ context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.SecurityLogEntry], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return payoutkit.Page[payoutkit.SecurityLogEntry]{}, err
	}
	return pageOf(w.controls.log, page, func(r logRow) (int64, payoutkit.SecurityLogEntry) {
		e := r.SecurityLogEntry
		e.Details = maps.Clone(e.Details)
		return r.seq, e
	})
}
