package payoutkit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/payoutkit/payoutkit/internal/jsonappend"
)

// MaxBatchItems is how many payouts one batch may hold.
const MaxBatchItems = 1000

// CreatePayoutBatchRequest is a mass payout (contract, section 12): up to
// MaxBatchItems payouts applied in order under one idempotency key,
// BatchID. With AllOrNothing every item must be accepted, or nothing is
// created.
type CreatePayoutBatchRequest struct {
	BatchID      string                `json:"batch_id"`
	Payouts      []CreatePayoutRequest `json:"payouts"`
	AllOrNothing bool                  `json:"all_or_nothing"`
}

// PayoutBatch is a batch as stored: its record and one result per item, in
// request order. Its JSON form is the contract's batch object.
type PayoutBatch struct {
	WorkspaceID, BatchID string
	CreatedAt            time.Time
	AllOrNothing         bool
	// Accepted counts the results with code 0, replays included;
	// AcceptedAmount sums the payouts the batch created.
	Accepted, Refused int
	AcceptedAmount    Amount
	// Results is nil in a listing of batches.
	Results []BatchResult
}

// BatchResult is what a batch answered for one item: Code 0 with the
// payout (as it is now, when read back), or a refusal's code and message.
type BatchResult struct {
	PayoutID string
	Code     Code
	Message  string
	Payout   *Payout
	// Created is set when this batch created the payout (not a replay).
	Created bool
	// Requested is the item as the batch asked for it, by which a replay
	// of the batch compares its items.
	Requested Payout
	// refusal is the item's refusal as Apply judged it.
	refusal error
}

// Err is the item's refusal (nil when accepted): the error a single create
// would have returned, matching errors.Is as that one does where the batch
// was judged in this process, else an *Error of its code and message.
func (r BatchResult) Err() error {
	switch {
	case r.Code == 0:
		return nil
	case r.refusal != nil:
		return r.refusal
	}
	return NewError(r.Code, r.Message, nil)
}

// MarshalJSON renders the contract's batch object.
func (b PayoutBatch) MarshalJSON() ([]byte, error) {
	out := jsonappend.String(append(make([]byte, 0, 256+len(b.Results)*600), `{"batch_id":`...), b.BatchID)
	out = jsonappend.Time(append(out, `,"created_at":`...), b.CreatedAt)
	out = strconv.AppendBool(append(out, `,"all_or_nothing":`...), b.AllOrNothing)
	out = strconv.AppendInt(append(out, `,"accepted":`...), int64(b.Accepted), 10)
	out = strconv.AppendInt(append(out, `,"refused":`...), int64(b.Refused), 10)
	out = append(b.AcceptedAmount.appendText(append(out, `,"accepted_amount":"`...)), '"')
	if b.Results != nil {
		out = append(out, `,"results":[`...)
		for i, r := range b.Results {
			if i > 0 {
				out = append(out, ',')
			}
			out = jsonappend.String(append(out, `{"payout_id":`...), r.PayoutID)
			out = strconv.AppendInt(append(out, `,"code":`...), int64(r.Code), 10)
			out = jsonappend.String(append(out, `,"message":`...), r.Message)
			out = append(out, `,"payout":`...)
			if r.Payout != nil {
				out = r.Payout.appendJSON(out)
			} else {
				out = append(out, "null"...)
			}
			out = append(out, '}')
		}
		out = append(out, ']')
	}
	return append(out, '}'), nil
}

// BatchItem is one payout of a batch as the engine hands it to
// Store.CreatePayoutBatch: validated and submitted at the batch's time,
// with its payout.submitted event.
type BatchItem struct {
	Payout Payout
	Event  Event
}

// ErrBatchRefused is Store.CreatePayoutBatch's answer to an all-or-nothing
// batch with a refused item: nothing was stored, and the batch it returns
// holds the results as judged.
var ErrBatchRefused = errors.New("payoutkit: an item of an all-or-nothing batch was refused")

// BatchCheck is what Store.CreatePayoutBatch reads, under the balance's
// lock (as exact under concurrency as a single create's), to apply a
// batch with Apply.
type BatchCheck struct {
	Available Amount
	// Policy, Spent (with a DailyLimit) and Book (with AddressAllowlist,
	// keyed by BookKey) are as PolicyCheck's.
	Policy PayoutPolicy
	Spent  Amount
	Book   map[string]AddressEntry
	// Existing holds the stored payouts among the batch's payout_ids.
	Existing map[string]Payout
}

// BookKey is the key of an address book entry in BatchCheck.Book.
func BookKey(network, addressKey string) string { return network + "\x00" + addressKey }

// Apply judges items in order, each as a single create of that moment (a
// replay or a conflict, the policy with the 24-hour limit counting the
// batch's earlier items, the balance), and fills b's results and counts.
// It returns the items to create, with their holds set, and ErrBatchRefused
// (and none) when b is all or nothing and an item was refused.
func (c BatchCheck) Apply(b *PayoutBatch, items []BatchItem) ([]BatchItem, error) {
	b.Results = make([]BatchResult, len(items))
	b.Accepted, b.Refused, b.AcceptedAmount = 0, 0, 0
	created := make([]BatchItem, 0, len(items))
	available, spent := c.Available, c.Spent
	for i, it := range items {
		p := it.Payout
		r := &b.Results[i]
		r.PayoutID, r.Requested = p.PayoutID, p
		var refusal error
		if old, ok := c.Existing[p.PayoutID]; ok {
			if _, _, err := replayPayout(old, p); err != nil {
				refusal = err
			} else {
				r.Payout = &old
			}
		} else {
			check := PolicyCheck{Policy: c.Policy, Spent: spent}
			if check.Policy.AddressAllowlist {
				check.Entry, check.InBook = c.Book[BookKey(p.Network, AddressKey(p.Network, p.Address))]
			}
			approval, err := ApprovalNone, error(nil)
			if check.Policy.Controls() {
				approval, err = check.Judge(p)
			}
			switch {
			case err != nil:
				refusal = err
			case available < p.Amount:
				refusal = errInsufficientBalance()
			default:
				if p.Approval = approval; approval != ApprovalNone {
					if it.Event, err = it.Event.WithPayout(p); err != nil {
						return nil, err
					}
				}
				it.Payout = p
				available -= p.Amount
				spent += p.Amount
				created = append(created, it)
				r.Payout, r.Created = &p, true
				b.AcceptedAmount += p.Amount
			}
		}
		if refusal != nil {
			r.Code, r.Message, r.refusal = CodeOf(refusal), refusal.Error(), refusal
			b.Refused++
			continue
		}
		r.Message = "OK"
		b.Accepted++
	}
	if b.AllOrNothing && b.Refused > 0 {
		return nil, ErrBatchRefused
	}
	return created, nil
}

// CreatePayoutBatch validates every item of req as CreatePayout would, then
// applies them in order in one atomic change with the batch's record
// (contract, section 12): each item is accepted, replayed or refused on its
// own. The same batch_id again returns the stored batch with replayed true
// when the request is the same, else ErrConflict. An invalid request is
// ErrInvalidInput with each bad field named by its path
// ("payouts[3].address"); a refused all-or-nothing batch is its first
// refusal's error, its message prefixed with the item's path, and stores
// nothing.
func (e *Engine) CreatePayoutBatch(ctx context.Context, workspaceID string, req CreatePayoutBatchRequest) (PayoutBatch, bool, error) {
	items, err := e.validateBatch(req)
	if err != nil {
		return PayoutBatch{}, false, err
	}
	now := e.clock()
	b := PayoutBatch{WorkspaceID: workspaceID, BatchID: req.BatchID, CreatedAt: now, AllOrNothing: req.AllOrNothing}
	batch := make([]BatchItem, len(items))
	for i, p := range items {
		p.WorkspaceID, p.Status, p.CreatedAt, p.UpdatedAt, p.Approval, p.BatchID = workspaceID, PayoutSubmitted, now, now, ApprovalNone, req.BatchID
		ev, err := newEvent(workspaceID, EventPayoutSubmitted, payoutSubject(p.PayoutID), p, now)
		if err != nil {
			return PayoutBatch{}, false, err
		}
		batch[i] = BatchItem{Payout: p, Event: ev}
	}
	// As a single create's, a batch's payouts and events are leased to
	// this engine's loops in its transaction and given to them after it.
	d := e.runningLoops()
	var lease Lease
	if d != nil {
		lease = d.offerLease()
	}
	stored, created, err := e.store.CreatePayoutBatch(ctx, b, batch, lease)
	switch {
	case errors.Is(err, ErrBatchRefused):
		for i, r := range stored.Results {
			var refusal *Error
			if errors.As(r.refusal, &refusal) {
				prefixed := *refusal
				prefixed.Message = fmt.Sprintf("payouts[%d]: %s", i, r.Message)
				return PayoutBatch{}, false, &prefixed
			}
		}
		return PayoutBatch{}, false, err
	case errors.Is(err, ErrNotFound):
		return PayoutBatch{}, false, errNotFound("workspace")
	case err != nil:
		return PayoutBatch{}, false, err
	case !created:
		if !sameBatch(stored, b, batch) {
			return PayoutBatch{}, false, errConflict(fmt.Sprintf("batch_id %q is already used with a different request", req.BatchID))
		}
		return stored, true, nil
	}
	for i, r := range stored.Results {
		if !r.Created {
			continue
		}
		if lease.Owner != "" {
			d.offer(*r.Payout, batch[i].Event, lease)
		}
		if e.observePayout != nil {
			e.observePayout(*r.Payout)
		}
	}
	return stored, false, nil
}

// sameBatch reports whether the stored batch was asked for as b with items
// are: the same all_or_nothing and the same items in the same order,
// compared as a single create's replay compares them.
func sameBatch(stored, b PayoutBatch, items []BatchItem) bool {
	if stored.AllOrNothing != b.AllOrNothing || len(stored.Results) != len(items) {
		return false
	}
	for i, r := range stored.Results {
		q, p := r.Requested, items[i].Payout
		if q.PayoutID != p.PayoutID || q.Amount != p.Amount || q.Asset != p.Asset || q.Network != p.Network ||
			q.Address != p.Address || q.PayerID != p.PayerID {
			return false
		}
	}
	return true
}

// validateBatch judges the whole request before anything is applied: the
// batch_id, the item count, every item as a single create's validation
// judges it, and no payout_id twice.
func (e *Engine) validateBatch(req CreatePayoutBatchRequest) ([]Payout, error) {
	var v validation
	checkID(&v, "batch_id", req.BatchID)
	switch {
	case len(req.Payouts) == 0:
		v.add("payouts", "must hold at least one payout")
	case len(req.Payouts) > MaxBatchItems:
		v.add("payouts", "must hold at most "+strconv.Itoa(MaxBatchItems)+" payouts")
	}
	if len(req.Payouts) > MaxBatchItems {
		return nil, v.err()
	}
	items := make([]Payout, len(req.Payouts))
	seen := make(map[string]int, len(req.Payouts))
	for i, it := range req.Payouts {
		p, err := e.validatePayout(it)
		var ve *Error
		if errors.As(err, &ve) {
			for _, f := range ve.Fields {
				v.add(fmt.Sprintf("payouts[%d].%s", i, f.Field), f.Message)
			}
		}
		if j, dup := seen[it.PayoutID]; dup && it.PayoutID != "" {
			v.add(fmt.Sprintf("payouts[%d].payout_id", i), fmt.Sprintf("is also payouts[%d]'s", j))
		} else {
			seen[it.PayoutID] = i
		}
		items[i] = p
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	return items, nil
}

// CheckPayoutBatch validates req as CreatePayoutBatch does before it
// applies anything, for a preview: nil, or ErrInvalidInput naming each bad
// field by its path.
func (e *Engine) CheckPayoutBatch(req CreatePayoutBatchRequest) error {
	_, err := e.validateBatch(req)
	return err
}

// PayoutBatch returns a batch of the workspace with each result's code and
// message as first answered and each accepted item's payout as it is now,
// or ErrNotFound.
func (e *Engine) PayoutBatch(ctx context.Context, workspaceID, batchID string) (PayoutBatch, error) {
	if err := checkLookupID("batch_id", batchID); err != nil {
		return PayoutBatch{}, err
	}
	b, err := e.store.PayoutBatch(ctx, workspaceID, batchID)
	if errors.Is(err, ErrNotFound) {
		return PayoutBatch{}, errNotFound("batch")
	}
	return b, err
}

// PayoutBatches returns a page of the workspace's batches, newest first,
// with their counts and no results.
func (e *Engine) PayoutBatches(ctx context.Context, workspaceID string, page PageRequest) (Page[PayoutBatch], error) {
	p, err := e.store.PayoutBatches(ctx, workspaceID, page.Normalize())
	if errors.Is(err, ErrNotFound) {
		return Page[PayoutBatch]{}, errNotFound("workspace")
	}
	if p.Items == nil {
		p.Items = []PayoutBatch{}
	}
	return p, err
}
