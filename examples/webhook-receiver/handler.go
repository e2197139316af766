package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/payoutkit/payoutkit"
)

// maxBody bounds a webhook body; payoutkit's are a few hundred bytes.
const maxBody = 1 << 20

// newHandler returns the webhook endpoint. It answers:
//
//   - 200 "success" once handle has returned nil for the event, now or on an
//     earlier delivery of the same id;
//   - 401 when X-Signature does not sign the body with secret;
//   - 400 when the signed body is not an event, 405 for other methods than
//     POST, 413 for a body over 1 MiB;
//   - 409 while the same event is being handled by another request, and 500
//     when handle fails; payoutkit retries both later.
func newHandler(secret string, seen *seenIDs, log *slog.Logger, handle func(context.Context, payoutkit.WebhookEvent) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			} else {
				http.Error(w, "reading body", http.StatusBadRequest)
			}
			return
		}
		// Verify the raw bytes first: parse nothing that is not signed.
		if !payoutkit.VerifySignature(secret, body, r.Header.Get(payoutkit.HeaderSignature)) {
			log.WarnContext(r.Context(), "webhook with a bad signature", "remote", r.RemoteAddr)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		var ev payoutkit.WebhookEvent
		if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" || ev.Type == "" {
			http.Error(w, "not an event", http.StatusBadRequest)
			return
		}
		switch seen.begin(ev.ID) {
		case alreadyDone:
			log.DebugContext(r.Context(), "duplicate event", "id", ev.ID)
			io.WriteString(w, "success")
			return
		case inProgress:
			http.Error(w, "event being handled", http.StatusConflict)
			return
		}
		if err := handle(r.Context(), ev); err != nil {
			seen.abandon(ev.ID)
			log.ErrorContext(r.Context(), "handling event", "id", ev.ID, "err", err)
			http.Error(w, "try again later", http.StatusInternalServerError)
			return
		}
		seen.finish(ev.ID)
		io.WriteString(w, "success")
	})
}

type seenState int

const (
	fresh seenState = iota
	inProgress
	alreadyDone
)

// seenIDs remembers the ids of the last handled events, a bounded number of
// them (oldest forgotten first), and those being handled. A real receiver
// keeps them in its database, ideally in the transaction that applies the
// event.
type seenIDs struct {
	mu    sync.Mutex
	state map[string]seenState
	ring  []string // handled ids, oldest at next
	next  int
}

func newSeenIDs(capacity int) *seenIDs {
	return &seenIDs{state: make(map[string]seenState), ring: make([]string, max(capacity, 1))}
}

// begin reports the id's state and, when fresh, marks it in progress.
func (s *seenIDs) begin(id string) seenState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state[id]
	if st == fresh {
		s.state[id] = inProgress
	}
	return st
}

// finish records id as handled, forgetting the oldest handled id when full.
func (s *seenIDs) finish(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.ring[s.next]; old != "" {
		delete(s.state, old)
	}
	s.ring[s.next] = id
	s.next = (s.next + 1) % len(s.ring)
	s.state[id] = alreadyDone
}

// abandon forgets an id whose handling failed, so that a retry handles it.
func (s *seenIDs) abandon(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.state, id)
}
