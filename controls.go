package payoutkit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/payoutkit/payoutkit/address"
)

// Approval is where a payout stands with the workspace's approval hold
// (contract, section 10).
type Approval string

// A payout above the policy's ApprovalOver is pending until approved (then
// handed off as any other) or rejected (failed and credited back).
const (
	ApprovalNone     Approval = "none"
	ApprovalPending  Approval = "pending"
	ApprovalApproved Approval = "approved"
	ApprovalRejected Approval = "rejected"
)

// defaultCoolingOff is DefaultPayoutPolicy's CoolingOff.
const defaultCoolingOff = 24 * time.Hour

// DailyWindow is the span of PayoutPolicy.DailyLimit.
const DailyWindow = 24 * time.Hour

// Limit is an optional amount of a payout policy; unset means no limit.
type Limit struct {
	Amount Amount
	Set    bool
}

// LimitOf returns a set limit of a.
func LimitOf(a Amount) Limit { return Limit{Amount: a, Set: true} }

// MarshalJSON renders the amount ("500.00"), or null when unset.
func (l Limit) MarshalJSON() ([]byte, error) {
	if !l.Set {
		return []byte("null"), nil
	}
	return json.Marshal(l.Amount)
}

// UnmarshalJSON reads what MarshalJSON renders.
func (l *Limit) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*l = Limit{}
		return nil
	}
	*l = Limit{Set: true}
	return l.Amount.UnmarshalJSON(data)
}

// PayoutPolicy is a workspace's payout controls (contract, section 10).
type PayoutPolicy struct {
	// MaxPayout refuses a payout above it (ErrPayoutLimit), and DailyLimit
	// one that would take the sum of the payouts not failed in the last
	// DailyWindow above it.
	MaxPayout, DailyLimit Limit
	// ApprovalOver holds a payout above it until staff approve it.
	ApprovalOver Limit
	// AddressAllowlist refuses (ErrForbidden) a payout to an address not
	// in the address book, or not yet usable.
	AddressAllowlist bool
	// CoolingOff is how long a new address book entry waits before use.
	CoolingOff time.Duration
}

// DefaultPayoutPolicy is a workspace's policy until changed: no limit, no
// hold, no allowlist, and a cooling-off of 24 hours.
func DefaultPayoutPolicy() PayoutPolicy { return PayoutPolicy{CoolingOff: defaultCoolingOff} }

// Controls reports whether the policy can refuse or hold a payout; a store
// may skip reading it while it cannot.
func (p PayoutPolicy) Controls() bool {
	return p.MaxPayout.Set || p.DailyLimit.Set || p.ApprovalOver.Set || p.AddressAllowlist
}

type payoutPolicyJSON struct {
	MaxPayout        Limit  `json:"max_payout"`
	DailyLimit       Limit  `json:"daily_limit"`
	ApprovalOver     Limit  `json:"approval_over"`
	AddressAllowlist bool   `json:"address_allowlist"`
	CoolingOff       string `json:"cooling_off"`
}

// MarshalJSON renders the contract's policy object.
func (p PayoutPolicy) MarshalJSON() ([]byte, error) {
	return json.Marshal(payoutPolicyJSON{p.MaxPayout, p.DailyLimit, p.ApprovalOver, p.AddressAllowlist, p.CoolingOff.String()})
}

// PolicyPatch changes the members of a payout policy that are not nil; the
// zero Limit clears a limit.
type PolicyPatch struct {
	MaxPayout, DailyLimit, ApprovalOver *Limit
	AddressAllowlist                    *bool
	CoolingOff                          *time.Duration
}

// Apply returns p with the patch's members set.
func (c PolicyPatch) Apply(p PayoutPolicy) PayoutPolicy {
	if c.MaxPayout != nil {
		p.MaxPayout = *c.MaxPayout
	}
	if c.DailyLimit != nil {
		p.DailyLimit = *c.DailyLimit
	}
	if c.ApprovalOver != nil {
		p.ApprovalOver = *c.ApprovalOver
	}
	if c.AddressAllowlist != nil {
		p.AddressAllowlist = *c.AddressAllowlist
	}
	if c.CoolingOff != nil {
		p.CoolingOff = *c.CoolingOff
	}
	return p
}

// details names the members the patch sets, as the security log records them.
func (c PolicyPatch) details() map[string]string {
	d := map[string]string{}
	limit := func(name string, l *Limit) {
		if l == nil {
			return
		}
		d[name] = "null"
		if l.Set {
			d[name] = l.Amount.String()
		}
	}
	limit("max_payout", c.MaxPayout)
	limit("daily_limit", c.DailyLimit)
	limit("approval_over", c.ApprovalOver)
	if c.AddressAllowlist != nil {
		d["address_allowlist"] = fmt.Sprint(*c.AddressAllowlist)
	}
	if c.CoolingOff != nil {
		d["cooling_off"] = c.CoolingOff.String()
	}
	return d
}

// AddressEntry is one destination of a workspace's address book.
type AddressEntry struct {
	WorkspaceID, Network string
	// Address is as added; Key is AddressKey of it, by which entries are
	// compared.
	Address, Key string
	Label        string
	// UsableFrom is AddedAt plus the cooling-off then in force.
	AddedAt, UsableFrom time.Time
}

type addressEntryJSON struct {
	Network    string `json:"network"`
	Address    string `json:"address"`
	Label      string `json:"label"`
	AddedAt    string `json:"added_at"`
	UsableFrom string `json:"usable_from"`
}

// MarshalJSON renders the contract's entry object.
func (a AddressEntry) MarshalJSON() ([]byte, error) {
	return json.Marshal(addressEntryJSON{a.Network, a.Address, a.Label, formatTime(a.AddedAt), formatTime(a.UsableFrom)})
}

// AddressKey is addr in its network's one form (address.Normalize), by
// which two addresses compare; addr itself on a network address does not
// know.
func AddressKey(network, addr string) string {
	if k, err := address.Normalize(network, addr); err == nil {
		return k
	}
	return addr
}

// PolicyCheck is what Store.CreatePayout reads to judge a payout.
type PolicyCheck struct {
	Policy PayoutPolicy
	// Spent is the sum of the payouts not failed created within
	// DailyWindow before the new one; read only with a DailyLimit.
	Spent Amount
	// Entry is the address book's entry of the payout's network and
	// AddressKey, if InBook; read only with AddressAllowlist.
	Entry  AddressEntry
	InBook bool
}

// Judge applies the policy to p in the contract's order and returns p's
// Approval, or the refusal (ErrPayoutLimit or ErrForbidden).
func (c PolicyCheck) Judge(p Payout) (Approval, error) {
	pol := c.Policy
	if pol.MaxPayout.Set && p.Amount > pol.MaxPayout.Amount {
		return "", newError(ErrPayoutLimit, "amount exceeds the payout limit of "+pol.MaxPayout.Amount.String())
	}
	if pol.DailyLimit.Set && c.Spent+p.Amount > pol.DailyLimit.Amount {
		left := max(pol.DailyLimit.Amount-c.Spent, 0)
		return "", newError(ErrPayoutLimit, "amount exceeds the 24-hour payout limit of "+
			pol.DailyLimit.Amount.String()+" ("+left.String()+" left)")
	}
	if pol.AddressAllowlist {
		switch {
		case !c.InBook:
			return "", errForbidden("address is not in the allowlist")
		case p.CreatedAt.Before(c.Entry.UsableFrom):
			return "", errForbidden("address is allowlisted but usable only from " + formatTime(c.Entry.UsableFrom))
		}
	}
	if pol.ApprovalOver.Set && p.Amount > pol.ApprovalOver.Amount {
		return ApprovalPending, nil
	}
	return ApprovalNone, nil
}

// WithPayout returns ev with its body's data replaced by p, for a store
// that holds p for approval.
func (ev Event) WithPayout(p Payout) (Event, error) {
	body, err := eventJSON(ev.ID, ev.Type, ev.CreatedAt, ev.WorkspaceID, p)
	if err != nil {
		return Event{}, fmt.Errorf("encoding event %s: %w", ev.Type, err)
	}
	ev.Body = body
	return ev, nil
}

// Actor is who changes a security or money control, as the security log
// records it.
type Actor struct {
	// ID is "cli", a staff e-mail, or "api:<key prefix>".
	ID string
	// ClientAddr is the client's IP address; empty for the CLI.
	ClientAddr string
	// Confirm, when set, is called after the action has checked its input
	// and before it changes anything; its error refuses the action.
	// Package staff uses it to spend a step-up code only on valid input.
	Confirm func(ctx context.Context) error
}

// confirm runs a.Confirm, when set.
func (a Actor) confirm(ctx context.Context) error {
	if a.Confirm == nil {
		return nil
	}
	return a.Confirm(ctx)
}

// ActorCLI is an operator on the server's command line.
var ActorCLI = Actor{ID: "cli"}

// StaffActor is a staff user of the portal.
func StaffActor(email, clientAddr string) Actor { return Actor{ID: email, ClientAddr: clientAddr} }

// KeyActor is an API key, named by its prefix.
func KeyActor(prefix, clientAddr string) Actor {
	return Actor{ID: "api:" + prefix, ClientAddr: clientAddr}
}

// The actions of the security log that the engine records.
const (
	ActionKeyCreated           = "key.created"
	ActionKeyRevoked           = "key.revoked"
	ActionKeysReset            = "keys.reset"
	ActionWebhookURLSet        = "webhook.url_set"
	ActionWebhookSecretRotated = "webhook.secret_rotated"
	ActionPolicyChanged        = "policy.changed"
	ActionAddressAdded         = "address.added"
	ActionAddressRemoved       = "address.removed"
	ActionPayoutApproved       = "payout.approved"
	ActionPayoutRejected       = "payout.rejected"
)

// SecurityLogEntry is one entry of a workspace's append-only security log.
// Details never holds a key, secret, password or code.
type SecurityLogEntry struct {
	WorkspaceID string
	At          time.Time
	Action      string
	Actor       string
	ClientAddr  string
	Details     map[string]string
}

type securityLogJSON struct {
	At         string            `json:"at"`
	Action     string            `json:"action"`
	Actor      string            `json:"actor"`
	ClientAddr *string           `json:"client_addr"`
	Details    map[string]string `json:"details"`
}

// MarshalJSON renders the entry as the CLI prints it.
func (e SecurityLogEntry) MarshalJSON() ([]byte, error) {
	d := e.Details
	if d == nil {
		d = map[string]string{}
	}
	return json.Marshal(securityLogJSON{formatTime(e.At), e.Action, e.Actor, nullable(e.ClientAddr), d})
}

// logEntry is an entry of the security log by a, now.
func logEntry(workspaceID string, at time.Time, action string, a Actor, details map[string]string) SecurityLogEntry {
	return SecurityLogEntry{WorkspaceID: workspaceID, At: at, Action: action, Actor: a.ID, ClientAddr: a.ClientAddr, Details: details}
}
