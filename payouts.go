package payoutkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// PayoutStatus is the state of a payout.
type PayoutStatus string

// A payout is submitted when accepted (its amount is debited), then ends
// completed (the money left) or failed (the amount was credited back).
const (
	PayoutSubmitted PayoutStatus = "submitted"
	PayoutCompleted PayoutStatus = "completed"
	PayoutFailed    PayoutStatus = "failed"
)

// Currency is the currency of every balance, order and payout amount.
const Currency = "USD"

// Payout is a withdrawal from a workspace's available balance to a customer's
// address, in a crypto asset on a network. Its JSON form is the contract's
// payout object.
type Payout struct {
	WorkspaceID   string
	PayoutID      string
	Status        PayoutStatus
	Amount        Amount
	Asset         string
	Network       string
	Address       string
	PayerID       string
	TxID          string // set when completed
	FailureReason string // set when failed
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// payoutJSON fixes the contract's member order and nulls.
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
	FailureReason *string      `json:"failure_reason"`
	CreatedAt     string       `json:"created_at"`
	UpdatedAt     string       `json:"updated_at"`
}

// MarshalJSON renders the contract's payout object.
func (p Payout) MarshalJSON() ([]byte, error) {
	return json.Marshal(payoutJSON{
		PayoutID: p.PayoutID, Status: p.Status, Amount: p.Amount, Currency: Currency,
		Asset: p.Asset, Network: p.Network, Address: p.Address, PayerID: p.PayerID,
		TxID: nullable(p.TxID), FailureReason: nullable(p.FailureReason),
		CreatedAt: formatTime(p.CreatedAt), UpdatedAt: formatTime(p.UpdatedAt),
	})
}

// UnmarshalJSON reads the contract's payout object (for clients and receivers).
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
	*p = Payout{
		PayoutID: j.PayoutID, Status: j.Status, Amount: j.Amount,
		Asset: j.Asset, Network: j.Network, Address: j.Address, PayerID: j.PayerID,
		TxID: deref(j.TxID), FailureReason: deref(j.FailureReason),
		CreatedAt: created, UpdatedAt: updated,
	}
	return nil
}

// CreatePayoutRequest is a merchant's request to pay a customer. All fields
// are required; Amount is a decimal string as ParseAmount reads it.
type CreatePayoutRequest struct {
	PayoutID string `json:"payout_id"`
	Amount   string `json:"amount"`
	Asset    string `json:"asset"`
	Network  string `json:"network"`
	Address  string `json:"address"`
	PayerID  string `json:"payer_id"`
}

// CreatePayout validates req and, when the available balance covers it,
// debits the amount and records the payout as submitted together with a
// payout.submitted event. Repeating a create with the same payout_id and the
// same parameters returns the stored payout with replayed true and changes
// nothing; other parameters are ErrConflict. An overdraft is
// ErrInsufficientBalance.
func (e *Engine) CreatePayout(ctx context.Context, workspaceID string, req CreatePayoutRequest) (Payout, bool, error) {
	p, err := e.validatePayout(req)
	if err != nil {
		return Payout{}, false, err
	}
	now := e.clock()
	p.WorkspaceID, p.Status, p.CreatedAt, p.UpdatedAt = workspaceID, PayoutSubmitted, now, now

	// One store call: it checks uniqueness before the balance, so a replay
	// is answered even when the balance no longer covers it.
	ev, err := newEvent(workspaceID, EventPayoutSubmitted, payoutSubject(p.PayoutID), p, now)
	if err != nil {
		return Payout{}, false, err
	}
	stored, created, err := e.store.CreatePayout(ctx, p, ev)
	switch {
	case errors.Is(err, ErrInsufficientBalance):
		return Payout{}, false, errInsufficientBalance()
	case err != nil:
		return Payout{}, false, err
	case !created:
		return replayPayout(stored, p)
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
	checkText(&v, "payer_id", req.PayerID, true, maxText)
	if err := v.err(); err != nil {
		return Payout{}, err
	}
	return Payout{
		PayoutID: req.PayoutID, Amount: amount, Asset: coin.Ticker, Network: coin.Network,
		Address: req.Address, PayerID: req.PayerID,
	}, nil
}

// Payout returns one payout of the workspace; an unknown id is ErrNotFound.
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

// Payouts lists the workspace's payouts that match f, newest first. An
// unknown status is a 40000.
func (e *Engine) Payouts(ctx context.Context, workspaceID string, f PayoutFilter, page PageRequest) (Page[Payout], error) {
	switch f.Status {
	case "", PayoutSubmitted, PayoutCompleted, PayoutFailed:
	default:
		return Page[Payout]{}, invalidField("status", "must be submitted, completed or failed")
	}
	return listing(e.store.Payouts(ctx, workspaceID, f, page))
}

// CompletePayout records that a submitted payout was paid on chain, with its
// transaction id (required), and emits payout.completed. Settling a payout that is not
// submitted is ErrConflict.
func (e *Engine) CompletePayout(ctx context.Context, workspaceID, payoutID, txid string) (Payout, error) {
	var v validation
	checkText(&v, "txid", txid, true, maxText)
	if err := v.err(); err != nil {
		return Payout{}, err
	}
	return e.settle(ctx, workspaceID, payoutID, func(p *Payout) EventType {
		p.Status, p.TxID = PayoutCompleted, txid
		return EventPayoutCompleted
	})
}

// FailPayout records that a submitted payout did not go through, credits its
// amount back to the available balance and emits payout.failed. Settling a
// payout that is not submitted is ErrConflict.
func (e *Engine) FailPayout(ctx context.Context, workspaceID, payoutID, reason string) (Payout, error) {
	var v validation
	checkText(&v, "reason", reason, false, maxDescription)
	if err := v.err(); err != nil {
		return Payout{}, err
	}
	if reason == "" {
		reason = "payout failed"
	}
	return e.settle(ctx, workspaceID, payoutID, func(p *Payout) EventType {
		p.Status, p.FailureReason = PayoutFailed, reason
		return EventPayoutFailed
	})
}

func (e *Engine) settle(ctx context.Context, workspaceID, payoutID string, apply func(*Payout) EventType) (Payout, error) {
	p, err := e.Payout(ctx, workspaceID, payoutID)
	if err != nil {
		return Payout{}, err
	}
	if p.Status != PayoutSubmitted {
		return Payout{}, errPayoutSettled(p)
	}
	typ := apply(&p)
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
const maxText = 128

// checkText accepts 1 to maxLen characters (0 when optional) of valid UTF-8
// without control characters, format characters (bidi overrides, zero-width
// ones) or U+FFFD.
func checkText(v *validation, field, s string, required bool, maxLen int) {
	switch {
	case s == "" && required:
		v.add(field, "is required")
	case !utf8.ValidString(s):
		v.add(field, "must be valid UTF-8")
	case len(s) > maxLen && utf8.RuneCountInString(s) > maxLen:
		v.add(field, fmt.Sprintf("must be at most %d characters", maxLen))
	case hasControl(s):
		v.add(field, "must not contain control characters")
	case hasInvisible(s):
		v.add(field, "must not contain invisible or bidirectional formatting characters, or U+FFFD")
	}
}

// hasInvisible reports format characters (zero-width spaces and joiners,
// bidirectional overrides such as U+202E, the byte order mark), which could
// make a page or a log line read other than it is, and U+FFFD, which is what
// a lone surrogate in the request's JSON decodes to.
func hasInvisible(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Cf, r) || r == utf8.RuneError })
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
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
