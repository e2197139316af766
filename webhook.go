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

// The events the engine records. Each is stored in the same transaction as the
// change it describes.
const (
	EventPayoutSubmitted EventType = "payout.submitted"
	EventPayoutCompleted EventType = "payout.completed"
	EventPayoutFailed    EventType = "payout.failed"
	EventOrderPaid       EventType = "order.paid"
	// EventAddressAdded announces a new address book entry (its data is
	// the entry), so that the merchant hears of every addition.
	EventAddressAdded EventType = "address.added"
)

// DeliveryState is where an event stands in the outbox.
type DeliveryState string

// An event is pending until a delivery succeeds (delivered) or every retry
// has failed (failed). A failed event can be resent by hand.
const (
	DeliveryPending   DeliveryState = "pending"
	DeliveryDelivered DeliveryState = "delivered"
	DeliveryFailed    DeliveryState = "failed"
)

// NoWebhookURLError is the LastError of an event recorded while its
// workspace had no webhook URL. Such an event is kept, failed, and never
// attempted, so that setting a URL later does not send it; a resend does
// (contract, section 5). It is also the error of an event due while its
// workspace had no URL (one resent, or waiting for a retry when the URL was
// removed). EventDelivery.EventState shows such events as EventStateNotSent.
const NoWebhookURLError = "not sent: the workspace had no webhook URL"

// EventState is where an event stands as staff and operators see it: its
// stored DeliveryState, except that a failed event left unsent for want of
// a webhook URL is EventStateNotSent. No receiver refused such an event, so
// it is neither shown nor counted as a failure.
type EventState string

// The states EventDelivery.EventState returns.
const (
	EventStatePending   EventState = "pending"
	EventStateDelivered EventState = "delivered"
	EventStateFailed    EventState = "failed"
	// EventStateNotSent is a failed event whose workspace had no webhook
	// URL when it was recorded or came due: it was not sent, and is not
	// until it is resent.
	EventStateNotSent EventState = "not_sent"
)

// Event is a recorded change, with its webhook delivery state.
type Event struct {
	ID          string // evt_…
	WorkspaceID string
	Type        EventType
	// Subject groups events that must be delivered in order: "payout:<id>",
	// "order:<id>".
	Subject   string
	CreatedAt time.Time
	// Body is the exact JSON sent to the webhook receiver, fixed when the
	// event is recorded so that every retry sends the same bytes.
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

// EventState returns the state the event is shown and counted in:
// EventStateNotSent for a failed event whose LastError is NoWebhookURLError,
// otherwise its State. It is derived from what every store keeps, so that
// no store needs another stored state, and a resend makes such an event
// pending like any failed one.
func (d EventDelivery) EventState() EventState {
	if d.State == DeliveryFailed && d.LastError == NoWebhookURLError {
		return EventStateNotSent
	}
	return EventState(d.State)
}

// DeliveryAttempt is one try at delivering an event, for the delivery log.
type DeliveryAttempt struct {
	EventID    string
	Attempt    int // 1 for the first
	At         time.Time
	StatusCode int // 0 when no HTTP answer came
	Latency    time.Duration
	Error      string // empty on success
	// ResponseHead is the first bytes of the receiver's answer.
	ResponseHead string
}

// Notifier delivers one event to a workspace's webhook destination. It
// returns a nil error only when the receiver acknowledged the event, and
// describes what the receiver answered in the result either way (a zero
// result when no answer came). The default one, HTTPNotifier, POSTs signed
// JSON over HTTP; embedders may plug in another (DeliveryConfig.Notifier).
// The engine's delivery loop calls it only for a workspace with a webhook
// URL.
type Notifier interface {
	Notify(ctx context.Context, ws Workspace, ev Event) (DeliveryResult, error)
}

// DeliveryResult is what a receiver answered to one delivery, kept in the
// delivery log.
type DeliveryResult struct {
	// StatusCode is the HTTP status of the answer; 0 when none came.
	StatusCode int
	// ResponseHead is the first bytes of the answer's body (at most 256,
	// valid UTF-8).
	ResponseHead string
}

// The headers of a webhook request.
const (
	// HeaderSignature carries Sign(secret, body).
	HeaderSignature = "X-Signature"
	// HeaderEventID carries the event's id, the receiver's deduplication key.
	HeaderEventID = "X-Event-Id"
	// HeaderEventType carries the event's type.
	HeaderEventType = "X-Event-Type"
)

// WebhookEvent is a webhook body as a receiver reads it, after checking its
// signature with VerifySignature. Data is a payout object for payout.* events
// and an order object for order.paid; unmarshal it into Payout or Order.
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

// Sign returns the contract's X-Signature value for body: the lowercase hex
// HMAC-SHA256 of the raw body, keyed with the whole secret string.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// VerifySignature reports, in constant time, whether signature (an
// X-Signature header value) signs body with secret. Receivers call it on the
// raw body before parsing it.
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

// PayoutEvents returns the events of one payout of the workspace, oldest
// first, each with its delivery attempts. An unknown payout is ErrNotFound.
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

// ResendEvent makes a failed (or delivered) event due again now; the
// engine's running delivery loop claims it at once, and those of other
// engines sharing the store at their next poll. An unknown event is
// ErrNotFound.
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
