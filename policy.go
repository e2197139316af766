package payoutkit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// PayoutPolicy returns the workspace's payout policy.
func (e *Engine) PayoutPolicy(ctx context.Context, workspaceID string) (PayoutPolicy, error) {
	p, err := e.store.PayoutPolicy(ctx, workspaceID)
	if errors.Is(err, ErrNotFound) {
		return PayoutPolicy{}, errNotFound("workspace")
	}
	return p, err
}

// SetPayoutPolicy applies patch and returns the policy after it, from the
// next payout on every engine. A limit must be above 0 and the cooling-off 0
// or more, else ErrInvalidInput.
func (e *Engine) SetPayoutPolicy(ctx context.Context, workspaceID string, patch PolicyPatch, by Actor) (PayoutPolicy, error) {
	if err := patch.check(); err != nil {
		return PayoutPolicy{}, err
	}
	if err := by.confirm(ctx); err != nil {
		return PayoutPolicy{}, err
	}
	log := logEntry(workspaceID, e.clock(), ActionPolicyChanged, by, patch.details())
	p, err := e.store.UpdatePayoutPolicy(ctx, workspaceID, patch, log)
	if errors.Is(err, ErrNotFound) {
		return PayoutPolicy{}, errNotFound("workspace")
	}
	return p, err
}

// check refuses a limit of 0 or less and a cooling-off out of range.
func (patch PolicyPatch) check() error {
	var v validation
	for _, l := range []struct {
		field string
		l     *Limit
	}{{"max_payout", patch.MaxPayout}, {"daily_limit", patch.DailyLimit}, {"approval_over", patch.ApprovalOver}} {
		if l.l != nil && l.l.Set && (l.l.Amount <= 0 || l.l.Amount > MaxAmount) {
			v.add(l.field, "must be greater than 0 and at most "+MaxAmount.String())
		}
	}
	if patch.CoolingOff != nil && (*patch.CoolingOff < 0 || *patch.CoolingOff > 10*365*24*time.Hour) {
		v.add("cooling_off", "must be between 0 and 87600h")
	}
	return v.err()
}

// AddAddress adds a valid address of a coin's network to the address book,
// usable after the policy's cooling-off, with an address.added event,
// atomically. An address already there in any spelling is ErrConflict.
func (e *Engine) AddAddress(ctx context.Context, workspaceID, network, addr, label string, by Actor) (AddressEntry, error) {
	if err := e.checkAddress(network, addr, label); err != nil {
		return AddressEntry{}, err
	}
	if err := by.confirm(ctx); err != nil {
		return AddressEntry{}, err
	}
	net, _, _ := e.coins.network(network)
	pol, err := e.PayoutPolicy(ctx, workspaceID)
	if err != nil {
		return AddressEntry{}, err
	}
	now := e.clock()
	entry := AddressEntry{
		WorkspaceID: workspaceID, Network: net, Address: addr, Key: AddressKey(net, addr), Label: label,
		AddedAt: now, UsableFrom: now.Add(pol.CoolingOff),
	}
	ev, err := newEvent(workspaceID, EventAddressAdded, "address:"+net+":"+entry.Key, entry, now)
	if err != nil {
		return AddressEntry{}, err
	}
	log := logEntry(workspaceID, now, ActionAddressAdded, by, map[string]string{
		"network": net, "address": addr, "label": label, "usable_from": formatTime(entry.UsableFrom),
	})
	switch err := e.store.AddAddress(ctx, entry, ev, log); {
	case errors.Is(err, ErrConflict):
		return AddressEntry{}, errConflict("address is already in the address book")
	case errors.Is(err, ErrNotFound):
		return AddressEntry{}, errNotFound("workspace")
	case err != nil:
		return AddressEntry{}, err
	}
	return entry, nil
}

// checkAddress refuses an address book entry that AddAddress would refuse
// for its fields.
func (e *Engine) checkAddress(network, addr, label string) error {
	var v validation
	net, valid, ok := e.coins.network(network)
	switch {
	case network == "":
		v.add("network", "is required")
	case !ok:
		v.add("network", "is not a network of the payout coins (see GET /v1/coins)")
	}
	switch {
	case addr == "":
		v.add("address", "is required")
	case ok && valid(addr) != nil:
		v.add("address", "is not a valid "+net+" address")
	}
	checkText(&v, "label", label, false, maxText)
	return v.err()
}

// Addresses lists the workspace's address book, oldest first.
func (e *Engine) Addresses(ctx context.Context, workspaceID string) ([]AddressEntry, error) {
	list, err := e.store.Addresses(ctx, workspaceID)
	if errors.Is(err, ErrNotFound) {
		return nil, errNotFound("workspace")
	}
	if list == nil {
		list = []AddressEntry{}
	}
	return list, err
}

// RemoveAddress removes the entry of network and addr, in any spelling, and
// returns how many it removed (0 or 1).
func (e *Engine) RemoveAddress(ctx context.Context, workspaceID, network, addr string, by Actor) (int, error) {
	var v validation
	net, _, ok := e.coins.network(network)
	if !ok {
		v.add("network", "is not a network of the payout coins (see GET /v1/coins)")
	}
	checkText(&v, "address", addr, true, maxText)
	if err := v.err(); err != nil {
		return 0, err
	}
	if err := by.confirm(ctx); err != nil {
		return 0, err
	}
	log := logEntry(workspaceID, e.clock(), ActionAddressRemoved, by, map[string]string{"network": net, "address": addr})
	n, err := e.store.RemoveAddress(ctx, workspaceID, net, AddressKey(net, addr), log)
	if errors.Is(err, ErrNotFound) {
		return 0, errNotFound("workspace")
	}
	return n, err
}

// ApprovePayout releases a payout held for approval to the hand-off; any
// other payout is ErrConflict.
func (e *Engine) ApprovePayout(ctx context.Context, workspaceID, payoutID string, by Actor) (Payout, error) {
	if err := by.confirm(ctx); err != nil {
		return Payout{}, err
	}
	p, err := e.heldPayout(ctx, workspaceID, payoutID)
	if err != nil {
		return Payout{}, err
	}
	now := e.clock()
	log := logEntry(workspaceID, now, ActionPayoutApproved, by, map[string]string{"payout_id": payoutID, "amount": p.Amount.String()})
	if err := e.store.ApprovePayout(ctx, workspaceID, payoutID, now, log); err != nil {
		return Payout{}, e.decisionError(ctx, workspaceID, payoutID, err)
	}
	return e.Payout(ctx, workspaceID, payoutID)
}

// RejectPayout fails a payout held for approval, credited back, with
// failure_reason "rejected: <reason>" (or "rejected: by staff"); any other
// payout is ErrConflict.
func (e *Engine) RejectPayout(ctx context.Context, workspaceID, payoutID, reason string, by Actor) (Payout, error) {
	if err := by.confirm(ctx); err != nil {
		return Payout{}, err
	}
	var v validation
	checkText(&v, "reason", reason, false, maxDescription)
	if err := v.err(); err != nil {
		return Payout{}, err
	}
	if reason == "" {
		reason = "by staff"
	}
	p, err := e.heldPayout(ctx, workspaceID, payoutID)
	if err != nil {
		return Payout{}, err
	}
	p.Status, p.FailureReason, p.Approval, p.UpdatedAt = PayoutFailed, "rejected: "+reason, ApprovalRejected, e.clock()
	ev, err := newEvent(workspaceID, EventPayoutFailed, payoutSubject(payoutID), p, p.UpdatedAt)
	if err != nil {
		return Payout{}, err
	}
	log := logEntry(workspaceID, p.UpdatedAt, ActionPayoutRejected, by, map[string]string{
		"payout_id": payoutID, "amount": p.Amount.String(), "reason": reason,
	})
	if err := e.store.RejectPayout(ctx, p, ev, log); err != nil {
		return Payout{}, e.decisionError(ctx, workspaceID, payoutID, err)
	}
	if e.observePayout != nil {
		e.observePayout(p)
	}
	return p, nil
}

// heldPayout returns the payout when it awaits approval.
func (e *Engine) heldPayout(ctx context.Context, workspaceID, payoutID string) (Payout, error) {
	p, err := e.Payout(ctx, workspaceID, payoutID)
	if err != nil {
		return Payout{}, err
	}
	if p.Status != PayoutSubmitted || p.Approval != ApprovalPending {
		return Payout{}, errNotHeld(p)
	}
	return p, nil
}

// decisionError explains a store's refusal of an approval or a rejection:
// someone else decided or settled the payout meanwhile.
func (e *Engine) decisionError(ctx context.Context, workspaceID, payoutID string, err error) error {
	if errors.Is(err, ErrConflict) {
		if now, rerr := e.store.Payout(ctx, workspaceID, payoutID); rerr == nil {
			return errNotHeld(now)
		}
	}
	if errors.Is(err, ErrNotFound) {
		return errNotFound("payout")
	}
	return err
}

func errNotHeld(p Payout) error {
	return errConflict(fmt.Sprintf("payout %q is not awaiting approval (status %s, approval %s)", p.PayoutID, p.Status, p.approval()))
}

// SecurityLog returns a page of the workspace's security log, newest first.
func (e *Engine) SecurityLog(ctx context.Context, workspaceID string, page PageRequest) (Page[SecurityLogEntry], error) {
	p, err := e.store.SecurityLog(ctx, workspaceID, page.Normalize())
	if errors.Is(err, ErrNotFound) {
		return Page[SecurityLogEntry]{}, errNotFound("workspace")
	}
	if p.Items == nil {
		p.Items = []SecurityLogEntry{}
	}
	return p, err
}

// decisionScan bounds how far back PayoutDecision looks in the log.
const decisionScan = 2000

// PayoutDecision returns the security log entry that approved or rejected a
// payout, among the latest 2000, or ErrNotFound.
func (e *Engine) PayoutDecision(ctx context.Context, workspaceID, payoutID string) (SecurityLogEntry, error) {
	req := PageRequest{Limit: 500}
	for seen := 0; seen < decisionScan; {
		page, err := e.SecurityLog(ctx, workspaceID, req)
		if err != nil {
			return SecurityLogEntry{}, err
		}
		for _, it := range page.Items {
			if (it.Action == ActionPayoutApproved || it.Action == ActionPayoutRejected) && it.Details["payout_id"] == payoutID {
				return it, nil
			}
		}
		seen += len(page.Items)
		if page.Next == "" || len(page.Items) == 0 {
			break
		}
		req.Cursor = page.Next
	}
	return SecurityLogEntry{}, errNotFound("decision")
}
