package payoutkit

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/payoutkit/payoutkit/internal/jsonappend"
	"github.com/payoutkit/payoutkit/internal/random"
)

// EventType names what happened.
type EventType string

// The events the engine records, each in the transaction of its change.
// The data of address.added is the new address book entry.
const (
	EventPayoutSubmitted EventType = "payout.submitted"
	EventPayoutCompleted EventType = "payout.completed"
	EventPayoutFailed    EventType = "payout.failed"
	EventOrderPaid       EventType = "order.paid"
	EventAddressAdded    EventType = "address.added"
)

// DeliveryState is where an event stands in the outbox.
type DeliveryState string

// An event is pending until delivered, or failed once every retry has;
// a resend makes it pending again.
const (
	DeliveryPending   DeliveryState = "pending"
	DeliveryDelivered DeliveryState = "delivered"
	DeliveryFailed    DeliveryState = "failed"
)

// NoWebhookURLError is the LastError of an event failed unsent because its
// workspace had no webhook URL when it was recorded or came due; setting a
// URL later does not send it, a resend does (contract, section 5).
const NoWebhookURLError = "not sent: the workspace had no webhook URL"

// EventState is where an event stands as staff and operators see it: its
// DeliveryState, except that one failed with NoWebhookURLError, which no
// receiver refused, is EventStateNotSent rather than a failure.
type EventState string

// The states EventDelivery.EventState returns.
const (
	EventStatePending   EventState = "pending"
	EventStateDelivered EventState = "delivered"
	EventStateFailed    EventState = "failed"
	EventStateNotSent   EventState = "not_sent"
)

// Event is a recorded change, with its webhook delivery state.
type Event struct {
	ID          string // evt_…
	WorkspaceID string
	Type        EventType
	// Subject ("payout:<id>", "order:<id>") groups events delivered in order.
	Subject   string
	CreatedAt time.Time
	// Body is the JSON every attempt sends, fixed when recorded.
	Body []byte
	EventDelivery
}

// EventDelivery is the delivery state of one event.
type EventDelivery struct {
	State         DeliveryState
	Attempts      int
	NextAttemptAt time.Time
	LastError     string
}

// EventState returns the state the event is shown and counted in.
func (d EventDelivery) EventState() EventState {
	if d.State == DeliveryFailed && d.LastError == NoWebhookURLError {
		return EventStateNotSent
	}
	return EventState(d.State)
}

// DeliveryAttempt is one try at delivering an event, for the delivery log.
type DeliveryAttempt struct {
	EventID      string
	Attempt      int // 1 for the first
	At           time.Time
	StatusCode   int // 0 when no HTTP answer came
	Latency      time.Duration
	Error        string // empty on success
	ResponseHead string // the first bytes of the answer
}

// Notifier delivers one event to a workspace that has a webhook URL. It
// returns a nil error only when the receiver acknowledged the event, and
// what the receiver answered either way.
type Notifier interface {
	Notify(ctx context.Context, ws Workspace, ev Event) (DeliveryResult, error)
}

// DeliveryResult is what a receiver answered, if anything: the HTTP status
// and up to 256 bytes of the body, valid UTF-8.
type DeliveryResult struct {
	StatusCode   int
	ResponseHead string
}

// The headers of a webhook request: Sign(secret, body), the event's id (the
// receiver's deduplication key) and its type.
const (
	HeaderSignature = "X-Signature"
	HeaderEventID   = "X-Event-Id"
	HeaderEventType = "X-Event-Type"
)

// WebhookEvent is a webhook body as a receiver reads it, after
// VerifySignature. Data unmarshals into a Payout for payout.* events and an
// Order for order.paid.
type WebhookEvent struct {
	ID          string          `json:"id"`
	Type        EventType       `json:"type"`
	CreatedAt   time.Time       `json:"created_at"`
	WorkspaceID string          `json:"workspace_id"`
	Data        json.RawMessage `json:"data"`
}

// newEvent records that typ happened to subject, with data (a Payout or an
// Order) as the body's data member.
func newEvent(workspaceID string, typ EventType, subject string, data any, at time.Time) (Event, error) {
	id := "evt_" + random.TimeOrderedID(at)
	body, err := eventJSON(id, typ, at, workspaceID, data)
	if err != nil {
		return Event{}, fmt.Errorf("encoding event %s: %w", typ, err)
	}
	return Event{
		ID: id, WorkspaceID: workspaceID, Type: typ, Subject: subject, CreatedAt: at, Body: body,
		EventDelivery: EventDelivery{State: DeliveryPending, NextAttemptAt: at},
	}, nil
}

// eventJSON renders the body every webhook carries: the event's id, type,
// time and workspace, and data (a Payout or an Order) as its data member.
func eventJSON(id string, typ EventType, at time.Time, workspaceID string, data any) ([]byte, error) {
	var rendered []byte
	if p, ok := data.(Payout); ok {
		rendered = p.appendJSON(make([]byte, 0, 512))
	} else {
		var err error
		if rendered, err = json.Marshal(data); err != nil {
			return nil, err
		}
	}
	return jsonappend.Event(id, string(typ), at, workspaceID, rendered), nil
}

// Sign returns the X-Signature of body: the lowercase hex HMAC-SHA256 of
// it, keyed with the whole secret string.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// VerifySignature reports, in constant time, whether signature signs the
// raw body with secret.
func VerifySignature(secret string, body []byte, signature string) bool {
	got, err := hex.DecodeString(signature)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// EventLog is an event with its delivery attempts, oldest first.
type EventLog struct {
	Event
	DeliveryAttempts []DeliveryAttempt
}

// PayoutEvents returns a payout's events, oldest first, with their
// attempts. An unknown payout is ErrNotFound.
func (e *Engine) PayoutEvents(ctx context.Context, workspaceID, payoutID string) ([]EventLog, error) {
	if _, err := e.Payout(ctx, workspaceID, payoutID); err != nil {
		return nil, err
	}
	evs, err := e.store.SubjectEvents(ctx, workspaceID, payoutSubject(payoutID))
	if err != nil {
		return nil, err
	}
	out := make([]EventLog, len(evs))
	for i, ev := range evs {
		attempts, err := e.store.DeliveryAttempts(ctx, workspaceID, ev.ID)
		if err != nil {
			return nil, err
		}
		out[i] = EventLog{Event: ev, DeliveryAttempts: attempts}
	}
	return out, nil
}

// ResendEvent makes a failed or delivered event due now; this engine's loop
// claims it at once, others at their next poll.
func (e *Engine) ResendEvent(ctx context.Context, workspaceID, eventID string) error {
	err := e.store.ResendEvent(ctx, workspaceID, eventID, e.clock())
	if errors.Is(err, ErrNotFound) {
		return errNotFound("event")
	}
	if err == nil {
		e.wakeDelivery()
	}
	return err
}
