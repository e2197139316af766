package payoutkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit/internal/jsonappend"
	"github.com/payoutkit/payoutkit/internal/textcheck"
)

// PayoutStatus is the state of a payout.
type PayoutStatus string

// A payout is submitted (debited) when accepted, then completed (the money
// left) or failed (credited back).
const (
	PayoutSubmitted PayoutStatus = "submitted"
	PayoutCompleted PayoutStatus = "completed"
	PayoutFailed    PayoutStatus = "failed"
)

// Currency is the currency of every amount.
const Currency = "USD"

// Payout is a withdrawal from a workspace's available balance to a
// customer's address, in a crypto asset on a network. Its JSON form is the
// contract's payout object.
type Payout struct {
	WorkspaceID, PayoutID   string
	Status                  PayoutStatus
	Amount                  Amount
	Asset, Network, Address string
	PayerID                 string
	TxID                    string // set when completed
	FailureReason           string // set when failed
	// AssetAmount (sent) and NetworkFee are in the asset's units, unset
	// unless the processor reported them with the completion.
	AssetAmount, NetworkFee decimal.NullDecimal
	CreatedAt, UpdatedAt    time.Time
	Approval                Approval // zero: ApprovalNone
	// BatchID names the batch that created the payout, if one did; it is
	// not part of the contract's payout object.
	BatchID string
}

// approval is the payout's Approval, ApprovalNone when unset.
func (p Payout) approval() Approval {
	if p.Approval == "" {
		return ApprovalNone
	}
	return p.Approval
}

// payoutJSON is the contract's payout object as UnmarshalJSON reads it
// (appendJSON writes the same members in the same order).
type payoutJSON struct {
	PayoutID      string       `json:"payout_id"`
	Status        PayoutStatus `json:"status"`
	Amount        Amount       `json:"amount"`
	Currency      string       `json:"currency"`
	Asset         string       `json:"asset"`
	Network       string       `json:"network"`
	Address       string       `json:"address"`
	PayerID       string       `json:"payer_id"`
	TxID          *string      `json:"txid"`
	AssetAmount   *string      `json:"asset_amount"`
	NetworkFee    *string      `json:"network_fee"`
	FailureReason *string      `json:"failure_reason"`
	CreatedAt     string       `json:"created_at"`
	UpdatedAt     string       `json:"updated_at"`
	Approval      Approval     `json:"approval"`
}

// MarshalJSON renders the contract's payout object.
func (p Payout) MarshalJSON() ([]byte, error) {
	return p.appendJSON(make([]byte, 0, 512)), nil
}

// appendJSON appends the contract's payout object, member for member what
// json.Marshal of its payoutJSON writes (FuzzPayoutJSON holds it to that):
// it is rendered on every create, as the answer and in the event's body.
func (p Payout) appendJSON(b []byte) []byte {
	b = jsonappend.String(append(b, `{"payout_id":`...), p.PayoutID)
	b = jsonappend.String(append(b, `,"status":`...), string(p.Status))
	b = append(p.Amount.appendText(append(b, `,"amount":"`...)), '"')
	b = jsonappend.String(append(b, `,"currency":`...), Currency)
	b = jsonappend.String(append(b, `,"asset":`...), p.Asset)
	b = jsonappend.String(append(b, `,"network":`...), p.Network)
	b = jsonappend.String(append(b, `,"address":`...), p.Address)
	b = jsonappend.String(append(b, `,"payer_id":`...), p.PayerID)
	b = jsonappend.Nullable(append(b, `,"txid":`...), p.TxID)
	b = jsonappend.Decimal(append(b, `,"asset_amount":`...), p.AssetAmount)
	b = jsonappend.Decimal(append(b, `,"network_fee":`...), p.NetworkFee)
	b = jsonappend.Nullable(append(b, `,"failure_reason":`...), p.FailureReason)
	b = jsonappend.Time(append(b, `,"created_at":`...), p.CreatedAt)
	b = jsonappend.Time(append(b, `,"updated_at":`...), p.UpdatedAt)
	b = jsonappend.String(append(b, `,"approval":`...), string(p.approval()))
	return append(b, '}')
}

// parseDecimal reads what jsonappend.Decimal rendered.
func parseDecimal(s *string) (decimal.NullDecimal, error) {
	if s == nil {
		return decimal.NullDecimal{}, nil
	}
	if !isDecimalText(*s) {
		return decimal.NullDecimal{}, fmt.Errorf("payoutkit: %q is not a decimal number", *s)
	}
	d, err := decimal.NewFromString(*s)
	return decimal.NullDecimal{Decimal: d, Valid: err == nil}, err
}

// isDecimalText accepts plain non-negative decimals: digits, optionally a
// dot and more digits. No sign, exponent or blank.
func isDecimalText(s string) bool {
	intPart, frac, dot := strings.Cut(s, ".")
	return intPart != "" && allDigits(intPart) && (!dot || frac != "" && allDigits(frac))
}

// UnmarshalJSON reads the contract's payout object.
func (p *Payout) UnmarshalJSON(data []byte) error {
	var j payoutJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	created, err := parseTime(j.CreatedAt)
	if err != nil {
		return err
	}
	updated, err := parseTime(j.UpdatedAt)
	if err != nil {
		return err
	}
	assetAmount, err := parseDecimal(j.AssetAmount)
	if err != nil {
		return err
	}
	fee, err := parseDecimal(j.NetworkFee)
	if err != nil {
		return err
	}
	*p = Payout{
		PayoutID: j.PayoutID, Status: j.Status, Amount: j.Amount,
		Asset: j.Asset, Network: j.Network, Address: j.Address, PayerID: j.PayerID,
		TxID: deref(j.TxID), FailureReason: deref(j.FailureReason),
		AssetAmount: assetAmount, NetworkFee: fee,
		CreatedAt: created, UpdatedAt: updated, Approval: j.Approval,
	}
	return nil
}

// CreatePayoutRequest is a merchant's request to pay a customer. Every field
// is required; Amount is as ParseAmount reads it.
type CreatePayoutRequest struct {
	PayoutID string `json:"payout_id"`
	Amount   string `json:"amount"`
	Asset    string `json:"asset"`
	Network  string `json:"network"`
	Address  string `json:"address"`
	PayerID  string `json:"payer_id"`
}

// CreatePayout validates req against the coins and the workspace's policy,
// then debits the amount and records the payout as submitted with a
// payout.submitted event, atomically. The same payout_id again returns the
// stored payout with replayed true, or ErrConflict if the parameters differ.
// An overdraft is ErrInsufficientBalance.
func (e *Engine) CreatePayout(ctx context.Context, workspaceID string, req CreatePayoutRequest) (Payout, bool, error) {
	p, err := e.validatePayout(req)
	if err != nil {
		return Payout{}, false, err
	}
	now := e.clock()
	p.WorkspaceID, p.Status, p.CreatedAt, p.UpdatedAt, p.Approval = workspaceID, PayoutSubmitted, now, now, ApprovalNone

	// One store call: it checks uniqueness before the balance, so a replay
	// is answered even when the balance no longer covers it.
	ev, err := newEvent(workspaceID, EventPayoutSubmitted, payoutSubject(p.PayoutID), p, now)
	if err != nil {
		return Payout{}, false, err
	}
	// While this engine's loops run, the payout's hand-off and event are
	// leased to them in the create's transaction and given to them from
	// memory after it (dispatcher.offer; internal/delivery's Offers).
	d := e.runningLoops()
	var lease Lease
	if d != nil {
		lease = d.offerLease()
	}
	stored, created, err := e.store.CreatePayout(ctx, p, ev, lease)
	switch {
	case errors.Is(err, ErrInsufficientBalance):
		return Payout{}, false, errInsufficientBalance()
	case err != nil:
		return Payout{}, false, err
	case !created:
		return replayPayout(stored, p)
	}
	if lease.Owner != "" {
		d.offer(stored, ev, lease)
	}
	if e.observePayout != nil {
		e.observePayout(stored)
	}
	return stored, false, nil
}

// replayPayout returns the stored payout when req asks for the same payout,
// and a conflict otherwise.
func replayPayout(stored, req Payout) (Payout, bool, error) {
	if stored.Amount != req.Amount || stored.Asset != req.Asset || stored.Network != req.Network ||
		stored.Address != req.Address || stored.PayerID != req.PayerID {
		return Payout{}, false, errConflict(fmt.Sprintf("payout_id %q is already used with different parameters", req.PayoutID))
	}
	return stored, true, nil
}

func (e *Engine) validatePayout(req CreatePayoutRequest) (Payout, error) {
	var v validation
	checkID(&v, "payout_id", req.PayoutID)
	amount := checkAmount(&v, "amount", req.Amount)
	coin := e.coins.check(&v, req.Asset, req.Network, req.Address)
	if amount > 0 && coin.Ticker != "" {
		checkLimits(&v, coin, amount)
	}
	checkText(&v, "payer_id", req.PayerID, true, maxText)
	if err := v.err(); err != nil {
		return Payout{}, err
	}
	return Payout{
		PayoutID: req.PayoutID, Amount: amount, Asset: coin.Ticker, Network: coin.Network,
		Address: req.Address, PayerID: req.PayerID,
	}, nil
}

// Payout returns one payout of the workspace, or ErrNotFound.
func (e *Engine) Payout(ctx context.Context, workspaceID, payoutID string) (Payout, error) {
	if err := checkLookupID("payout_id", payoutID); err != nil {
		return Payout{}, err
	}
	p, err := e.store.Payout(ctx, workspaceID, payoutID)
	if errors.Is(err, ErrNotFound) {
		return Payout{}, errNotFound("payout")
	}
	return p, err
}

// Completion is what a processor reports when a payout has left: the
// required transaction id and, when known, the amount sent (above 0) and the
// network fee (0 or more), in the asset's units with at most its Decimals
// places.
type Completion struct {
	TxID                    string
	AssetAmount, NetworkFee decimal.NullDecimal
}

// maxAssetDigits bounds the integer digits of a reported asset amount or
// fee: no real amount comes near it, and it keeps every value storable.
const maxAssetDigits = 30

// CompletePayout records that a submitted payout was paid on chain, as c
// reports it, with a payout.completed event. An invalid c is
// ErrInvalidInput; a payout not submitted is ErrConflict.
func (e *Engine) CompletePayout(ctx context.Context, workspaceID, payoutID string, c Completion) (Payout, error) {
	var v validation
	checkText(&v, "txid", c.TxID, true, maxText)
	if err := v.err(); err != nil {
		return Payout{}, err
	}
	return e.settle(ctx, workspaceID, payoutID, func(p *Payout) (EventType, error) {
		if p.Approval == ApprovalPending {
			return "", errConflict(fmt.Sprintf("payout %q is awaiting approval", p.PayoutID))
		}
		places := int32(MaxDecimals)
		if coin, ok := e.coins.coin(p.Asset, p.Network); ok {
			places = int32(coin.Decimals)
		}
		checkAssetAmount(&v, "asset_amount", c.AssetAmount, places, false)
		checkAssetAmount(&v, "network_fee", c.NetworkFee, places, true)
		if err := v.err(); err != nil {
			return "", err
		}
		p.Status, p.TxID = PayoutCompleted, c.TxID
		p.AssetAmount, p.NetworkFee = canonical(c.AssetAmount), canonical(c.NetworkFee)
		return EventPayoutCompleted, nil
	})
}

// checkAssetAmount accepts an unset value, or one greater than 0 (or equal
// to 0 when zeroOK) with at most places decimal places.
func checkAssetAmount(v *validation, field string, d decimal.NullDecimal, places int32, zeroOK bool) {
	switch {
	case !d.Valid:
	case d.Decimal.Sign() < 0 || d.Decimal.Sign() == 0 && !zeroOK:
		if zeroOK {
			v.add(field, "must not be negative")
		} else {
			v.add(field, "must be greater than 0")
		}
	case !d.Decimal.Equal(d.Decimal.Truncate(places)):
		v.add(field, fmt.Sprintf("must have at most %d decimal places", places))
	case d.Decimal.Truncate(0).NumDigits() > maxAssetDigits:
		v.add(field, fmt.Sprintf("must have at most %d integer digits", maxAssetDigits))
	}
}

// canonical drops trailing zeros, so that a value reads back as it was
// stored on every store ("1.50" and "1.5" are one amount).
func canonical(d decimal.NullDecimal) decimal.NullDecimal {
	if !d.Valid {
		return d
	}
	s := d.Decimal.String()
	c, err := decimal.NewFromString(s)
	if err != nil {
		return d
	}
	return decimal.NullDecimal{Decimal: c, Valid: true}
}

// FailPayout records that a submitted payout did not go through and credits
// its amount back, with a payout.failed event. A payout not submitted is
// ErrConflict.
func (e *Engine) FailPayout(ctx context.Context, workspaceID, payoutID, reason string) (Payout, error) {
	var v validation
	checkText(&v, "reason", reason, false, maxDescription)
	if err := v.err(); err != nil {
		return Payout{}, err
	}
	if reason == "" {
		reason = "payout failed"
	}
	return e.settle(ctx, workspaceID, payoutID, func(p *Payout) (EventType, error) {
		p.Status, p.FailureReason = PayoutFailed, reason
		return EventPayoutFailed, nil
	})
}

func (e *Engine) settle(ctx context.Context, workspaceID, payoutID string, apply func(*Payout) (EventType, error)) (Payout, error) {
	p, err := e.Payout(ctx, workspaceID, payoutID)
	if err != nil {
		return Payout{}, err
	}
	if p.Status != PayoutSubmitted {
		return Payout{}, errPayoutSettled(p)
	}
	typ, err := apply(&p)
	if err != nil {
		return Payout{}, err
	}
	p.UpdatedAt = e.clock()
	ev, err := newEvent(workspaceID, typ, payoutSubject(p.PayoutID), p, p.UpdatedAt)
	if err != nil {
		return Payout{}, err
	}
	if err := e.store.SettlePayout(ctx, p, ev); err != nil {
		if errors.Is(err, ErrConflict) { // settled by someone else meanwhile
			if now, rerr := e.store.Payout(ctx, workspaceID, payoutID); rerr == nil {
				return Payout{}, errPayoutSettled(now)
			}
		}
		return Payout{}, err
	}
	if e.observePayout != nil {
		e.observePayout(p)
	}
	return p, nil
}

func errPayoutSettled(p Payout) error {
	return errConflict(fmt.Sprintf("payout %q is already %s", p.PayoutID, p.Status))
}

func payoutSubject(payoutID string) string { return "payout:" + payoutID }

// checkID applies the contract's id rule: 1 to 128 characters of [A-Za-z0-9_.:-].
func checkID(v *validation, field, id string) {
	switch {
	case id == "":
		v.add(field, "is required")
	case len(id) > 128:
		v.add(field, "must be at most 128 characters")
	default:
		for i := 0; i < len(id); i++ {
			if c := id[i]; !isIDChar(c) {
				v.add(field, "may contain only letters, digits, '_', '.', ':' and '-'")
				return
			}
		}
	}
}

func isIDChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == ':' || c == '-'
}

// checkLookupID validates an id used to look a resource up.
func checkLookupID(field, id string) error {
	var v validation
	checkID(&v, field, id)
	return v.err()
}

func checkAmount(v *validation, field, s string) Amount {
	if s == "" {
		v.add(field, "is required")
		return 0
	}
	a, err := ParseAmount(s)
	if err != nil {
		v.add(field, err.Error())
	}
	return a
}

// maxText is the length limit of free-text fields such as payer_id, in characters.
const maxText = textcheck.MaxText

// checkText accepts 1 to maxLen characters (0 when optional) of valid UTF-8
// without control characters, format characters (bidi overrides, zero-width
// ones) or U+FFFD (textcheck.Problem).
func checkText(v *validation, field, s string, required bool, maxLen int) {
	if problem := textcheck.Problem(s, required, maxLen); problem != "" {
		v.add(field, problem)
	}
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339, s)
}
