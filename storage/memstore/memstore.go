// Package memstore is an in-memory payoutkit.Store: safe for concurrent use,
// fast, and gone when the process ends. Use it in unit tests of code that
// embeds the engine, and as the reference the SQL stores are checked against.
package memstore

import (
	"container/list"
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/internal/wake"
)

// Store is an in-memory payoutkit.Store. One mutex guards everything, which
// makes every operation trivially atomic; it is not built for throughput.
// Unlike the SQL stores it has no Orphans method: it refuses every row of
// an unknown workspace and never removes a workspace, so it cannot hold a
// row whose workspace or parent is gone.
type Store struct {
	mu         sync.Mutex
	seq        int64 // orders every row, for newest-first listings
	workspaces map[string]*workspace
	staff      map[string]payoutkit.StaffUser // by e-mail
	keys       map[string]*payoutkit.APIKey   // by prefix
	events     map[string]*event              // by id
	pending    []*event                       // pending events, oldest first
	handoffs   list.List                      // of *payout that may await their hand-off, oldest first
	sessions   map[[32]byte]payoutkit.StaffSession
	failures   map[string]payoutkit.SignInFailures // by e-mail
	recovery   map[string]map[[32]byte]bool        // unused recovery codes by e-mail
	work       wake.Signal                         // see SubscribeWork
}

type workspace struct {
	ws      payoutkit.Workspace
	balance payoutkit.Balance
	payouts map[string]*payout
	orders  map[string]*order
	// Rows in creation order, for listings.
	payoutList []*payout
	orderList  []*order
	ledger     []ledgerEntry
	eventList  []*event
	customers  map[string]*customer
	// customerList holds customers in order of their first movement.
	customerList []*customer
	controls     controls
	// days counts the payouts per day of their creation
	// (payoutkit.PayoutDay) and where they stand now, for PayoutsPerDay.
	days map[int64]*payoutkit.DayCount
	// batches holds the payout batches by id, batchList in creation order.
	batches   map[string]*batch
	batchList []*batch
}

type customer struct {
	payoutkit.Customer
	seq int64
}

type payout struct {
	payoutkit.Payout
	seq        int64
	handedOff  bool
	leaseUntil time.Time
	leaseOwner string
	leaseToken int64 // the fencing token of the latest claim
}

type order struct {
	payoutkit.Order
	seq int64
}

type ledgerEntry struct {
	payoutkit.LedgerEntry
	seq int64
}

type event struct {
	payoutkit.Event
	seq        int64
	leaseOwner string
	leaseUntil time.Time
	attempts   []payoutkit.DeliveryAttempt
}

var _ payoutkit.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{
		workspaces: make(map[string]*workspace),
		staff:      make(map[string]payoutkit.StaffUser),
		keys:       make(map[string]*payoutkit.APIKey),
		events:     make(map[string]*event),
		sessions:   make(map[[32]byte]payoutkit.StaffSession),
		recovery:   make(map[string]map[[32]byte]bool),
		failures:   make(map[string]payoutkit.SignInFailures),
	}
}

// SubscribeWork returns a channel that receives when the store has taken
// work for the engine's loops (a new event, a payout to hand over, an event
// sent again), and cancel, which ends the subscription
// (payoutkit.Store.SubscribeWork). The loops of an engine over the store subscribe
// by themselves, so that they claim such work at once instead of at their
// next poll.
func (s *Store) SubscribeWork() (ch <-chan struct{}, cancel func()) { return s.work.Subscribe() }

// Close does nothing; the store lives as long as the value.
func (s *Store) Close() error { return nil }

func (s *Store) next() int64 { s.seq++; return s.seq }

func (s *Store) workspace(id string) (*workspace, error) {
	w := s.workspaces[id]
	if w == nil {
		return nil, payoutkit.ErrNotFound
	}
	return w, nil
}

// CreateWorkspace implements payoutkit.Store.
func (s *Store) CreateWorkspace(_ context.Context, ws payoutkit.Workspace, staff payoutkit.StaffUser, key payoutkit.APIKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.workspaces[ws.ID] != nil || s.keys[key.Prefix] != nil {
		return payoutkit.ErrConflict
	}
	if _, taken := s.staff[staff.Email]; taken {
		return payoutkit.ErrConflict
	}
	s.workspaces[ws.ID] = &workspace{
		ws: ws, payouts: make(map[string]*payout), orders: make(map[string]*order), customers: make(map[string]*customer),
	}
	if staff.Role == "" {
		staff.Role = payoutkit.RoleViewer
	}
	s.staff[staff.Email] = staff
	key = cloneKey(key)
	s.keys[key.Prefix] = &key
	return nil
}

// cloneKey copies a key's slices, so that neither the store nor its caller
// sees the other change them.
func cloneKey(k payoutkit.APIKey) payoutkit.APIKey {
	k.Scopes, k.AllowIPs = slices.Clone(k.Scopes), slices.Clone(k.AllowIPs)
	return k
}

// Workspace implements payoutkit.Store.
func (s *Store) Workspace(_ context.Context, id string) (payoutkit.Workspace, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(id)
	if err != nil {
		return payoutkit.Workspace{}, err
	}
	return w.ws, nil
}

// SetWebhook implements payoutkit.Store.
func (s *Store) SetWebhook(_ context.Context, workspaceID, url, secret string, log payoutkit.SecurityLogEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return err
	}
	w.ws.WebhookURL, w.ws.WebhookSecret = url, secret
	s.appendLog(w, log)
	return nil
}

// SwapWebhookSecret implements payoutkit.Store.
func (s *Store) SwapWebhookSecret(_ context.Context, workspaceID, old, next string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return err
	}
	if w.ws.WebhookSecret != old {
		return payoutkit.ErrConflict
	}
	w.ws.WebhookSecret = next
	return nil
}

// StaffUser implements staff.Store.
func (s *Store) StaffUser(_ context.Context, email string) (payoutkit.StaffUser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.staff[email]
	if !ok {
		return payoutkit.StaffUser{}, payoutkit.ErrNotFound
	}
	u.RecoveryCodes = len(s.recovery[email])
	return u, nil
}

// WorkspaceIDs implements payoutkit.Store.
func (s *Store) WorkspaceIDs(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := make([]payoutkit.Workspace, 0, len(s.workspaces))
	for _, w := range s.workspaces {
		ws = append(ws, w.ws)
	}
	slices.SortFunc(ws, func(a, b payoutkit.Workspace) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	return ids, nil
}

// InsertAPIKey implements payoutkit.Store.
func (s *Store) InsertAPIKey(_ context.Context, key payoutkit.APIKey, revokeOthers bool, log payoutkit.SecurityLogEntry) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys[key.Prefix] != nil {
		return 0, payoutkit.ErrConflict
	}
	w, err := s.workspace(key.WorkspaceID)
	if err != nil {
		return 0, err
	}
	n := 0
	if revokeOthers {
		n = s.revoke(key.WorkspaceID, "", key.CreatedAt)
		log.Details = maps.Clone(log.Details)
		if log.Details == nil {
			log.Details = map[string]string{}
		}
		log.Details["revoked"] = strconv.Itoa(n)
	}
	s.insertKey(key)
	s.appendLog(w, log)
	return n, nil
}

// insertKey stores a key whose prefix is free, of a workspace that exists.
func (s *Store) insertKey(key payoutkit.APIKey) {
	key = cloneKey(key)
	s.keys[key.Prefix] = &key
}

// APIKey implements payoutkit.Store.
func (s *Store) APIKey(_ context.Context, prefix string) (payoutkit.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keys[prefix]
	if k == nil {
		return payoutkit.APIKey{}, payoutkit.ErrNotFound
	}
	return cloneKey(*k), nil
}

// APIKeyBalance implements payoutkit.Store.
func (s *Store) APIKeyBalance(_ context.Context, prefix string) (payoutkit.APIKey, payoutkit.Balance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keys[prefix]
	if k == nil {
		return payoutkit.APIKey{}, payoutkit.Balance{}, payoutkit.ErrNotFound
	}
	w, err := s.workspace(k.WorkspaceID)
	if err != nil {
		return payoutkit.APIKey{}, payoutkit.Balance{}, err
	}
	return cloneKey(*k), w.balance, nil
}

// APIKeys implements payoutkit.Store.
func (s *Store) APIKeys(_ context.Context, workspaceID string) ([]payoutkit.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []payoutkit.APIKey
	for _, k := range s.keys {
		if k.WorkspaceID == workspaceID {
			out = append(out, cloneKey(*k))
		}
	}
	slices.SortFunc(out, func(a, b payoutkit.APIKey) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.Prefix, a.Prefix)
	})
	return out, nil
}

// RevokeAPIKeys implements payoutkit.Store.
func (s *Store) RevokeAPIKeys(_ context.Context, workspaceID, prefix string, at time.Time, log payoutkit.SecurityLogEntry) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.revoke(workspaceID, prefix, at)
	if w, err := s.workspace(workspaceID); err == nil && n > 0 {
		s.appendLog(w, log)
	}
	return n, nil
}

func (s *Store) revoke(workspaceID, prefix string, at time.Time) int {
	n := 0
	for _, k := range s.keys {
		if k.WorkspaceID == workspaceID && k.Active() && (prefix == "" || k.Prefix == prefix) {
			k.RevokedAt = at
			n++
		}
	}
	return n
}

// TouchAPIKey implements payoutkit.Store.
func (s *Store) TouchAPIKey(_ context.Context, prefix string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.keys[prefix]; k != nil && at.After(k.LastUsedAt) {
		k.LastUsedAt = at
	}
	return nil
}

// CreatePayout implements payoutkit.Store.
func (s *Store) CreatePayout(_ context.Context, p payoutkit.Payout, ev payoutkit.Event, lease payoutkit.Lease) (payoutkit.Payout, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(p.WorkspaceID)
	if err != nil {
		return payoutkit.Payout{}, false, err
	}
	if old := w.payouts[p.PayoutID]; old != nil {
		return old.Payout, false, nil
	}
	approval, err := w.judge(p)
	if err != nil {
		return payoutkit.Payout{}, false, err
	}
	if w.balance.Available < p.Amount {
		return payoutkit.Payout{}, false, payoutkit.ErrInsufficientBalance
	}
	if p.Approval = approval; approval != payoutkit.ApprovalNone {
		if ev, err = ev.WithPayout(p); err != nil {
			return payoutkit.Payout{}, false, err
		}
	}
	s.insertPayout(w, p, ev, lease)
	return p, true, nil
}

// insertPayout stores the new payout p, judged and covered by the balance,
// with its debit, ledger entry and event ev, its work leased as lease says.
func (s *Store) insertPayout(w *workspace, p payoutkit.Payout, ev payoutkit.Event, lease payoutkit.Lease) {
	w.balance.Available -= p.Amount
	w.balance.InProgress += p.Amount
	row := &payout{Payout: p, seq: s.next()}
	if lease.Owner != "" && p.Approval != payoutkit.ApprovalPending {
		row.leaseOwner, row.leaseUntil, row.leaseToken = lease.Owner, lease.Until, 1
	}
	w.payouts[p.PayoutID] = row
	w.payoutList = append(w.payoutList, row)
	s.handoffs.PushBack(row)
	w.created(row)
	w.day(p.CreatedAt).InProgress++
	s.customer(w, p.PayerID, p.CreatedAt).InProgress += p.Amount
	s.addLedger(w, payoutkit.LedgerPayoutDebit, -p.Amount, p.PayoutID, ev)
	if e := s.addEvent(w, ev, lease.Owner == ""); lease.Owner != "" && e.State == payoutkit.DeliveryPending {
		e.leaseOwner, e.leaseUntil = lease.Owner, lease.Until
	}
}

// SettlePayout implements payoutkit.Store.
func (s *Store) SettlePayout(_ context.Context, p payoutkit.Payout, ev payoutkit.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(p.WorkspaceID)
	if err != nil {
		return err
	}
	row := w.payouts[p.PayoutID]
	if row == nil {
		return payoutkit.ErrNotFound
	}
	if row.Status != payoutkit.PayoutSubmitted {
		return payoutkit.ErrConflict
	}
	s.settle(w, row, p, ev)
	return nil
}

// settle moves the submitted payout row as p says, with ev.
func (s *Store) settle(w *workspace, row *payout, p payoutkit.Payout, ev payoutkit.Event) {
	if p.Approval != "" {
		row.Approval = p.Approval
	}
	row.Status, row.TxID, row.FailureReason, row.UpdatedAt = p.Status, p.TxID, p.FailureReason, p.UpdatedAt
	row.AssetAmount, row.NetworkFee = p.AssetAmount, p.NetworkFee
	w.balance.InProgress -= row.Amount
	d := w.day(row.CreatedAt)
	d.InProgress--
	if p.Status == payoutkit.PayoutCompleted {
		d.Completed++
	} else {
		d.Failed++
	}
	c := s.customer(w, row.PayerID, p.UpdatedAt)
	c.InProgress -= row.Amount
	if p.Status == payoutkit.PayoutCompleted {
		c.PaidOut += row.Amount
	}
	if p.Status == payoutkit.PayoutFailed {
		w.failed(row)
		w.balance.Available += row.Amount
		s.addLedger(w, payoutkit.LedgerPayoutRefund, row.Amount, p.PayoutID, ev)
	}
	s.addEvent(w, ev, true)
}

// Payout implements payoutkit.Store.
func (s *Store) Payout(_ context.Context, workspaceID, payoutID string) (payoutkit.Payout, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return payoutkit.Payout{}, err
	}
	row := w.payouts[payoutID]
	if row == nil {
		return payoutkit.Payout{}, payoutkit.ErrNotFound
	}
	return row.Payout, nil
}

// Payouts implements payoutkit.Store.
func (s *Store) Payouts(_ context.Context, workspaceID string, f payoutkit.PayoutFilter, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.Payout], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return payoutkit.Page[payoutkit.Payout]{}, err
	}
	return newestOf(w.payoutList, page, func(r *payout) (bool, time.Time, int64, payoutkit.Payout) {
		keep := (f.Status == "" || r.Status == f.Status) && (f.PayerID == "" || r.PayerID == f.PayerID) &&
			inRange(r.CreatedAt, f.CreatedFrom, f.CreatedTo) && (f.Approval == "" || r.Approval == f.Approval)
		return keep, r.CreatedAt, r.seq, r.Payout
	})
}

// inRange reports whether t is at or after from and before to; a zero
// bound is no bound.
func inRange(t, from, to time.Time) bool {
	return (from.IsZero() || !t.Before(from)) && (to.IsZero() || t.Before(to))
}

// newestOf cuts one page, newest first by creation time and then by seq,
// out of the rows that item keeps. Its cursor is the last row's creation
// time in Unix microseconds and its seq, as "micros.seq" (the SQL store's
// form too).
func newestOf[R, T any](rows []R, req payoutkit.PageRequest, item func(R) (keep bool, created time.Time, seq int64, v T)) (payoutkit.Page[T], error) {
	req = req.Normalize()
	type row struct {
		at, seq int64
		v       T
	}
	var after *row
	if req.Cursor != "" {
		at, seq, ok := parseTimeCursor(req.Cursor)
		if !ok {
			return payoutkit.Page[T]{}, payoutkit.ErrInvalidInput
		}
		after = &row{at: at, seq: seq}
	}
	var kept []row
	for _, r := range rows {
		keep, created, seq, v := item(r)
		at := created.UnixMicro()
		if keep && (after == nil || at < after.at || at == after.at && seq < after.seq) {
			kept = append(kept, row{at, seq, v})
		}
	}
	slices.SortFunc(kept, func(a, b row) int {
		if a.at != b.at {
			return cmpInt(b.at, a.at)
		}
		return cmpInt(b.seq, a.seq)
	})
	var page payoutkit.Page[T]
	for i, r := range kept {
		if i == req.Limit {
			last := kept[i-1]
			page.Next = strconv.FormatInt(last.at, 10) + "." + strconv.FormatInt(last.seq, 10)
			break
		}
		page.Items = append(page.Items, r.v)
	}
	return page, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// parseTimeCursor reads a "micros.seq" cursor.
func parseTimeCursor(c string) (at, seq int64, ok bool) {
	a, b, found := strings.Cut(c, ".")
	if !found {
		return 0, 0, false
	}
	at, err1 := strconv.ParseInt(a, 10, 64)
	seq, err2 := strconv.ParseInt(b, 10, 64)
	return at, seq, err1 == nil && err2 == nil && seq > 0
}

// ClaimPayoutHandoffs implements payoutkit.Store.
func (s *Store) ClaimPayoutHandoffs(_ context.Context, owner string, now, leaseUntil time.Time, limit int) ([]payoutkit.PayoutLease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Payouts handed off or settled leave the queue as a claim meets them,
	// so that each is passed once; those behind a live lease or held for
	// approval are passed over.
	var out []payoutkit.PayoutLease
	for e := s.handoffs.Front(); e != nil && len(out) < limit; {
		r, next := e.Value.(*payout), e.Next()
		switch {
		case r.leftHandoffs():
			s.handoffs.Remove(e)
		case !r.leaseUntil.After(now) && r.Approval != payoutkit.ApprovalPending:
			r.leaseUntil, r.leaseOwner = leaseUntil, owner
			r.leaseToken++
			out = append(out, payoutkit.PayoutLease{Payout: r.Payout, Owner: owner, Token: r.leaseToken})
		}
		e = next
	}
	return out, nil
}

// leftHandoffs reports whether the payout needs no hand-off any more.
func (r *payout) leftHandoffs() bool {
	return r.Status != payoutkit.PayoutSubmitted || r.handedOff
}

// MarkPayoutHandedOff implements payoutkit.Store.
func (s *Store) MarkPayoutHandedOff(_ context.Context, l payoutkit.PayoutLease, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(l.WorkspaceID)
	if err != nil {
		return err
	}
	row := w.payouts[l.PayoutID]
	if row == nil {
		return payoutkit.ErrNotFound
	}
	if row.leaseOwner != l.Owner || row.leaseToken != l.Token {
		return payoutkit.ErrConflict
	}
	row.handedOff, row.leaseUntil = true, time.Time{}
	return nil
}

// CreateOrder implements payoutkit.Store.
func (s *Store) CreateOrder(_ context.Context, o payoutkit.Order) (payoutkit.Order, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(o.WorkspaceID)
	if err != nil {
		return payoutkit.Order{}, false, err
	}
	if old := w.orders[o.OrderID]; old != nil {
		return old.Order, false, nil
	}
	row := &order{Order: o, seq: s.next()}
	w.orders[o.OrderID] = row
	w.orderList = append(w.orderList, row)
	return o, true, nil
}

// MarkOrderPaid implements payoutkit.Store.
func (s *Store) MarkOrderPaid(_ context.Context, o payoutkit.Order, ev payoutkit.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(o.WorkspaceID)
	if err != nil {
		return err
	}
	row := w.orders[o.OrderID]
	if row == nil {
		return payoutkit.ErrNotFound
	}
	if row.Status != payoutkit.OrderPending {
		return payoutkit.ErrConflict
	}
	row.Status, row.PaidAt, row.UpdatedAt = payoutkit.OrderPaid, o.PaidAt, o.UpdatedAt
	w.balance.Available += row.Amount
	if row.PayerID != "" {
		s.customer(w, row.PayerID, o.PaidAt).PaidIn += row.Amount
	}
	s.addLedger(w, payoutkit.LedgerOrderCredit, row.Amount, o.OrderID, ev)
	s.addEvent(w, ev, true)
	return nil
}

// Order implements payoutkit.Store.
func (s *Store) Order(_ context.Context, workspaceID, orderID string) (payoutkit.Order, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return payoutkit.Order{}, err
	}
	row := w.orders[orderID]
	if row == nil {
		return payoutkit.Order{}, payoutkit.ErrNotFound
	}
	return row.Order, nil
}

// Orders implements payoutkit.Store.
func (s *Store) Orders(_ context.Context, workspaceID string, f payoutkit.OrderFilter, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.Order], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return payoutkit.Page[payoutkit.Order]{}, err
	}
	return newestOf(w.orderList, page, func(r *order) (bool, time.Time, int64, payoutkit.Order) {
		keep := (f.Status == "" || r.Status == f.Status) && (f.PayerID == "" || r.PayerID == f.PayerID) &&
			inRange(r.CreatedAt, f.CreatedFrom, f.CreatedTo)
		return keep, r.CreatedAt, r.seq, r.Order
	})
}

// Balance implements payoutkit.Store.
func (s *Store) Balance(_ context.Context, workspaceID string) (payoutkit.Balance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return payoutkit.Balance{}, err
	}
	return w.balance, nil
}

// Ledger implements payoutkit.Store.
func (s *Store) Ledger(_ context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.LedgerEntry], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return payoutkit.Page[payoutkit.LedgerEntry]{}, err
	}
	return pageOf(w.ledger, page, func(e ledgerEntry) (int64, payoutkit.LedgerEntry) { return e.seq, e.LedgerEntry })
}

// Audit implements payoutkit.Store.
func (s *Store) Audit(_ context.Context, workspaceID string) (payoutkit.Audit, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return payoutkit.Audit{}, err
	}
	a := payoutkit.Audit{Available: w.balance.Available, InProgress: w.balance.InProgress}
	for _, e := range w.ledger {
		a.LedgerSum += e.Amount
	}
	for _, o := range w.orderList {
		if o.Status == payoutkit.OrderPaid {
			a.PaidOrders += o.Amount
			if o.PayerID != "" {
				a.PayerPaidOrders += o.Amount
			}
		}
	}
	for _, c := range w.customerList {
		a.CustomersPaidIn += c.PaidIn
		a.CustomersPaidOut += c.PaidOut
		a.CustomersInProgress += c.InProgress
	}
	for _, p := range w.payoutList {
		switch p.Status {
		case payoutkit.PayoutSubmitted:
			a.SubmittedPayouts += p.Amount
			a.PayoutCounts[0]++
		case payoutkit.PayoutCompleted:
			a.CompletedPayouts += p.Amount
			a.PayoutCounts[1]++
		case payoutkit.PayoutFailed:
			a.PayoutCounts[2]++
		}
	}
	for _, d := range w.days {
		a.DayCounters[0] += int64(d.InProgress)
		a.DayCounters[1] += int64(d.Completed)
		a.DayCounters[2] += int64(d.Failed)
	}
	return a, nil
}

// Customers implements payoutkit.Store.
func (s *Store) Customers(_ context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.Customer], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return payoutkit.Page[payoutkit.Customer]{}, err
	}
	return pageOf(w.customerList, page, func(c *customer) (int64, payoutkit.Customer) { return c.seq, c.Customer })
}

// customer returns the workspace's customer row of payerID, adding it, first
// seen at, when money moves for it the first time.
func (s *Store) customer(w *workspace, payerID string, at time.Time) *customer {
	c := w.customers[payerID]
	if c == nil {
		c = &customer{seq: s.next(), Customer: payoutkit.Customer{WorkspaceID: w.ws.ID, PayerID: payerID, FirstSeenAt: at}}
		w.customers[payerID] = c
		w.customerList = append(w.customerList, c)
	}
	return c
}

func (s *Store) addLedger(w *workspace, kind payoutkit.LedgerKind, amount payoutkit.Amount, ref string, ev payoutkit.Event) {
	w.ledger = append(w.ledger, ledgerEntry{seq: s.next(), LedgerEntry: payoutkit.LedgerEntry{
		WorkspaceID: w.ws.ID, Kind: kind, Amount: amount, Ref: ref, EventID: ev.ID, CreatedAt: ev.CreatedAt,
	}})
}

func (s *Store) addEvent(w *workspace, ev payoutkit.Event, notify bool) *event {
	if w.ws.WebhookURL == "" {
		ev.EventDelivery = payoutkit.EventDelivery{State: payoutkit.DeliveryFailed, LastError: payoutkit.NoWebhookURLError}
	}
	row := &event{Event: ev, seq: s.next()}
	s.events[ev.ID] = row
	w.eventList = append(w.eventList, row)
	if ev.State == payoutkit.DeliveryPending {
		s.pending = append(s.pending, row)
	}
	// Every new event comes with its change: a payout to hand over, or one
	// settled, or an order paid; a payout leased to its creator is none.
	if notify {
		s.work.Notify()
	}
	return row
}

// RecordAttempt implements payoutkit.Store.
func (s *Store) RecordAttempt(_ context.Context, owner string, a payoutkit.DeliveryAttempt, next payoutkit.EventDelivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.events[a.EventID]
	if e == nil {
		return payoutkit.ErrNotFound
	}
	if e.leaseOwner != owner || e.State != payoutkit.DeliveryPending {
		return payoutkit.ErrConflict
	}
	e.attempts = append(e.attempts, a)
	e.EventDelivery = next
	e.leaseOwner, e.leaseUntil = "", time.Time{}
	if next.State != payoutkit.DeliveryPending {
		s.pending = slices.DeleteFunc(s.pending, func(p *event) bool { return p == e })
	}
	return nil
}

// Events implements payoutkit.Store.
func (s *Store) Events(_ context.Context, workspaceID string, page payoutkit.PageRequest) (payoutkit.Page[payoutkit.Event], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return payoutkit.Page[payoutkit.Event]{}, err
	}
	return pageOf(w.eventList, page, func(e *event) (int64, payoutkit.Event) { return e.seq, e.Event })
}

// Event implements payoutkit.Store.
func (s *Store) Event(_ context.Context, workspaceID, eventID string) (payoutkit.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.events[eventID]
	if e == nil || e.WorkspaceID != workspaceID {
		return payoutkit.Event{}, payoutkit.ErrNotFound
	}
	return e.Event, nil
}

// SubjectEvents implements payoutkit.Store.
func (s *Store) SubjectEvents(_ context.Context, workspaceID, subject string) ([]payoutkit.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return nil, err
	}
	var out []payoutkit.Event
	for _, e := range w.eventList {
		if e.Subject == subject {
			out = append(out, e.Event)
		}
	}
	return out, nil
}

// DeliveryAttempts implements payoutkit.Store.
func (s *Store) DeliveryAttempts(_ context.Context, workspaceID, eventID string) ([]payoutkit.DeliveryAttempt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.events[eventID]
	if e == nil || e.WorkspaceID != workspaceID {
		return nil, payoutkit.ErrNotFound
	}
	return slices.Clone(e.attempts), nil
}

// ResendEvent implements payoutkit.Store.
func (s *Store) ResendEvent(_ context.Context, workspaceID, eventID string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.events[eventID]
	if e == nil || e.WorkspaceID != workspaceID {
		return payoutkit.ErrNotFound
	}
	if e.State == payoutkit.DeliveryPending {
		return nil
	}
	e.State, e.NextAttemptAt = payoutkit.DeliveryPending, now
	// Keep the pending list in event order so that per-subject ordering holds.
	i, _ := slices.BinarySearchFunc(s.pending, e.seq, func(p *event, seq int64) int { return int(p.seq - seq) })
	s.pending = slices.Insert(s.pending, i, e)
	s.work.Notify()
	return nil
}

// PruneEvents implements payoutkit.Store.
func (s *Store) PruneEvents(_ context.Context, before time.Time, limit int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var old []*event
	for _, e := range s.events {
		if e.State == payoutkit.DeliveryDelivered && e.CreatedAt.Before(before) {
			old = append(old, e)
		}
	}
	slices.SortFunc(old, func(a, b *event) int { return int(a.seq - b.seq) })
	old = old[:min(limit, len(old))]
	for _, e := range old {
		delete(s.events, e.ID)
		w := s.workspaces[e.WorkspaceID]
		w.eventList = slices.DeleteFunc(w.eventList, func(x *event) bool { return x == e })
	}
	return len(old), nil
}

// OutboxHealth implements payoutkit.Store.
func (s *Store) OutboxHealth(context.Context) (payoutkit.OutboxHealth, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var h payoutkit.OutboxHealth
	for _, e := range s.events {
		switch e.EventState() {
		case payoutkit.EventStatePending:
			h.Pending++
			if h.OldestPending.IsZero() || e.CreatedAt.Before(h.OldestPending) {
				h.OldestPending = e.CreatedAt
			}
		case payoutkit.EventStateDelivered:
			h.Delivered++
		case payoutkit.EventStateFailed:
			h.Failed++
		case payoutkit.EventStateNotSent:
			h.NotSent++
		}
	}
	return h, nil
}

// pageOf cuts one newest-first page out of rows kept oldest first.
func pageOf[R, T any](rows []R, req payoutkit.PageRequest, item func(R) (int64, T)) (payoutkit.Page[T], error) {
	req = req.Normalize()
	end := len(rows) // rows[:end] are older than the cursor
	if req.Cursor != "" {
		before, err := strconv.ParseInt(req.Cursor, 10, 64)
		if err != nil {
			return payoutkit.Page[T]{}, payoutkit.ErrInvalidInput
		}
		end, _ = slices.BinarySearchFunc(rows, before, func(r R, seq int64) int {
			s, _ := item(r)
			return int(s - seq)
		})
	}
	var page payoutkit.Page[T]
	for i := end - 1; i >= 0 && len(page.Items) < req.Limit; i-- {
		_, v := item(rows[i])
		page.Items = append(page.Items, v)
		if len(page.Items) == req.Limit && i > 0 {
			seq, _ := item(rows[i])
			page.Next = strconv.FormatInt(seq, 10)
		}
	}
	return page, nil
}

// InsertStaffUser implements staff.Store.
func (s *Store) InsertStaffUser(_ context.Context, u payoutkit.StaffUser, log payoutkit.SecurityLogEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(u.WorkspaceID)
	if err != nil {
		return err
	}
	if _, taken := s.staff[u.Email]; taken {
		return payoutkit.ErrConflict
	}
	if u.Role == "" {
		u.Role = payoutkit.RoleViewer
	}
	u.TOTPSecret, u.TOTPPending, u.TOTPLastStep, u.RecoveryCodes, u.LastSignInAt = "", "", 0, 0, time.Time{}
	s.staff[u.Email] = u
	s.appendLog(w, log)
	return nil
}

// DeleteStaffUser implements staff.Store.
func (s *Store) DeleteStaffUser(_ context.Context, workspaceID, email string, log payoutkit.SecurityLogEntry) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return 0, err
	}
	u, ok := s.staff[email]
	if !ok || u.WorkspaceID != workspaceID {
		return 0, nil
	}
	if s.lastAdmin(workspaceID, email) {
		return 0, payoutkit.ErrConflict
	}
	delete(s.staff, email)
	delete(s.recovery, email)
	s.endSessions(email, [32]byte{})
	s.appendLog(w, log)
	return 1, nil
}

// lastAdmin reports whether email is the workspace's only admin.
func (s *Store) lastAdmin(workspaceID, email string) bool {
	if u := s.staff[email]; u.Role != payoutkit.RoleAdmin {
		return false
	}
	for e, u := range s.staff {
		if e != email && u.WorkspaceID == workspaceID && u.Role == payoutkit.RoleAdmin {
			return false
		}
	}
	return true
}

// StaffUsers implements staff.Store.
func (s *Store) StaffUsers(_ context.Context, workspaceID string) ([]payoutkit.StaffUser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var list []payoutkit.StaffUser
	for e, u := range s.staff {
		if u.WorkspaceID == workspaceID {
			u.RecoveryCodes = len(s.recovery[e])
			list = append(list, u)
		}
	}
	slices.SortFunc(list, func(a, b payoutkit.StaffUser) int { return strings.Compare(a.Email, b.Email) })
	return list, nil
}

// SetStaffRole implements staff.Store.
func (s *Store) SetStaffRole(_ context.Context, workspaceID, email string, role payoutkit.Role, log payoutkit.SecurityLogEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return err
	}
	u, ok := s.staff[email]
	if !ok || u.WorkspaceID != workspaceID {
		return payoutkit.ErrNotFound
	}
	if role != payoutkit.RoleAdmin && s.lastAdmin(workspaceID, email) {
		return payoutkit.ErrConflict
	}
	u.Role = role
	s.staff[email] = u
	s.appendLog(w, log)
	return nil
}

// SetStaffTOTP implements staff.Store.
func (s *Store) SetStaffTOTP(_ context.Context, email string, t payoutkit.StaffTOTP, log *payoutkit.SecurityLogEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.staff[email]
	if !ok {
		return payoutkit.ErrNotFound
	}
	var w *workspace
	if log != nil {
		var err error
		if w, err = s.workspace(log.WorkspaceID); err != nil {
			return err
		}
	}
	u.TOTPSecret, u.TOTPPending, u.TOTPLastStep = t.Secret, t.Pending, t.LastStep
	s.staff[email] = u
	codes := make(map[[32]byte]bool, len(t.RecoveryHashes))
	for _, h := range t.RecoveryHashes {
		codes[h] = true
	}
	s.recovery[email] = codes
	if w != nil {
		s.appendLog(w, *log)
	}
	return nil
}

// UseTOTPStep implements staff.Store.
func (s *Store) UseTOTPStep(_ context.Context, email string, step int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.staff[email]
	if !ok || u.TOTPSecret == "" || u.TOTPLastStep >= step {
		return payoutkit.ErrConflict
	}
	u.TOTPLastStep = step
	s.staff[email] = u
	return nil
}

// UseRecoveryCode implements staff.Store.
func (s *Store) UseRecoveryCode(_ context.Context, email string, hash [32]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.recovery[email][hash] {
		return payoutkit.ErrNotFound
	}
	delete(s.recovery[email], hash)
	return nil
}

// SetRequireTwoFactor implements staff.Store.
func (s *Store) SetRequireTwoFactor(_ context.Context, workspaceID string, on bool, log payoutkit.SecurityLogEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return err
	}
	w.ws.RequireTwoFactor = on
	s.appendLog(w, log)
	return nil
}

// SetStaffPassword implements staff.Store.
func (s *Store) SetStaffPassword(_ context.Context, email, passwordHash string, keep [32]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.staff[email]
	if !ok {
		return payoutkit.ErrNotFound
	}
	u.PasswordHash = passwordHash
	s.staff[email] = u
	s.endSessions(email, keep)
	return nil
}

// endSessions deletes the staff user's sessions but keep.
func (s *Store) endSessions(email string, keep [32]byte) {
	for h, ss := range s.sessions {
		if ss.StaffEmail == email && h != keep {
			delete(s.sessions, h)
		}
	}
}

// InsertStaffSession implements staff.Store.
func (s *Store) InsertStaffSession(_ context.Context, ss payoutkit.StaffSession) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.staff[ss.StaffEmail]; !ok || u.WorkspaceID != ss.WorkspaceID {
		return payoutkit.ErrNotFound
	}
	if _, taken := s.sessions[ss.TokenHash]; taken {
		return payoutkit.ErrConflict
	}
	ss.Role, ss.TwoFactor = "", false // not stored with the session
	s.sessions[ss.TokenHash] = ss
	u := s.staff[ss.StaffEmail]
	u.LastSignInAt = ss.CreatedAt
	s.staff[ss.StaffEmail] = u
	return nil
}

// StaffSession implements staff.Store.
func (s *Store) StaffSession(_ context.Context, tokenHash [32]byte) (payoutkit.StaffSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[tokenHash]
	if !ok {
		return payoutkit.StaffSession{}, payoutkit.ErrNotFound
	}
	return ss, nil
}

// TouchStaffSession implements staff.Store.
func (s *Store) TouchStaffSession(_ context.Context, tokenHash [32]byte, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[tokenHash]; ok && at.After(ss.LastSeenAt) {
		ss.LastSeenAt = at
		s.sessions[tokenHash] = ss
	}
	return nil
}

// DeleteStaffSession implements staff.Store.
func (s *Store) DeleteStaffSession(_ context.Context, tokenHash [32]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, tokenHash)
	return nil
}

// PurgeStaffSessions implements staff.Store.
func (s *Store) PurgeStaffSessions(_ context.Context, idleBefore, createdBefore, failuresBefore time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for h, ss := range s.sessions {
		if ss.LastSeenAt.Before(idleBefore) || ss.CreatedAt.Before(createdBefore) {
			delete(s.sessions, h)
			n++
		}
	}
	for email, f := range s.failures {
		if f.WindowStart.Before(failuresBefore) {
			delete(s.failures, email)
		}
	}
	return n, nil
}

// SignInFailures implements staff.Store.
func (s *Store) SignInFailures(_ context.Context, email string) (payoutkit.SignInFailures, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.failures[email]
	if !ok {
		return payoutkit.SignInFailures{Email: email}, nil
	}
	return f, nil
}

// RecordSignInFailure implements staff.Store.
func (s *Store) RecordSignInFailure(_ context.Context, email string, at time.Time, window time.Duration) (payoutkit.SignInFailures, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.failures[email]
	if !ok || !f.WindowStart.After(at.Add(-window)) {
		f = payoutkit.SignInFailures{Email: email, WindowStart: at}
	}
	f.Count++
	s.failures[email] = f
	return f, nil
}

// ClearSignInFailures implements staff.Store.
func (s *Store) ClearSignInFailures(_ context.Context, email string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.failures, email)
	return nil
}

// day returns the counters of the day that t falls in.
func (w *workspace) day(t time.Time) *payoutkit.DayCount {
	n := payoutkit.PayoutDay(t)
	d := w.days[n]
	if d == nil {
		if w.days == nil {
			w.days = map[int64]*payoutkit.DayCount{}
		}
		d = &payoutkit.DayCount{Day: time.UnixMicro(n * int64(24*time.Hour/time.Microsecond)).UTC()}
		w.days[n] = d
	}
	return d
}

// PayoutsPerDay implements payoutkit.Store: it reads the day
// counters that CreatePayout and the settlements keep.
func (s *Store) PayoutsPerDay(_ context.Context, workspaceID string, from, to time.Time) ([]payoutkit.DayCount, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.workspace(workspaceID)
	if err != nil {
		return nil, err
	}
	first, end := payoutkit.PayoutDayRange(from, to)
	var out []payoutkit.DayCount
	for n, d := range w.days {
		if n >= first && n < end && d.Total() > 0 {
			out = append(out, *d)
		}
	}
	slices.SortFunc(out, func(a, b payoutkit.DayCount) int { return a.Day.Compare(b.Day) })
	return out, nil
}
