package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/payoutkit/payoutkit"
)

// receiver is a webhook receiver on loopback. It checks every delivery's
// signature, answers "success", and remembers when each event first
// arrived, so that delivery lag can be measured against the moment the API
// answered the request that caused the event.
type receiver struct {
	srv *http.Server
	url string

	mu         sync.Mutex
	secrets    map[string]string    // workspace id → signing secret
	answered   map[string]time.Time // event key → when the API answered its request
	arrived    map[string]time.Time // event key → first delivery
	ids        map[string]bool      // event ids seen
	batches    []expectedBatch      // the batches answered since the last measure
	deliveries int
	badSig     int
	changed    chan struct{} // closed and replaced on every first arrival
}

// eventKey names the event a request causes, before its id is known.
func eventKey(typ, workspaceID, subject string) string {
	return typ + " " + workspaceID + " " + subject
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{
		url:      "http://" + ln.Addr().String() + "/webhook",
		secrets:  map[string]string{},
		answered: map[string]time.Time{},
		arrived:  map[string]time.Time{},
		ids:      map[string]bool{},
		changed:  make(chan struct{}),
	}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *receiver) close() { r.srv.Close() }

func (r *receiver) setSecret(workspaceID, secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets[workspaceID] = secret
}

// expect records that the API answered, at at, the request that causes the
// event key.
func (r *receiver) expect(key string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answered[key] = at
}

// expectedBatch is a batch the API answered at at, and its events' keys.
type expectedBatch struct {
	at   time.Time
	keys []string
}

// expectBatch records that the API answered, at at, a batch whose accepted
// items cause the events keys (each also given to expect), so that the
// time until the last of them arrived is measured per batch.
func (r *receiver) expectBatch(keys []string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, expectedBatch{at: at, keys: keys})
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	var ev struct {
		ID          string `json:"id"`
		Type        string `json:"type"`
		WorkspaceID string `json:"workspace_id"`
		Data        struct {
			PayoutID string `json:"payout_id"`
			OrderID  string `json:"order_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, "json", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deliveries++
	if !payoutkit.VerifySignature(r.secrets[ev.WorkspaceID], body, req.Header.Get("X-Signature")) {
		r.badSig++
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	r.ids[ev.ID] = true
	key := eventKey(ev.Type, ev.WorkspaceID, ev.Data.PayoutID+ev.Data.OrderID)
	if _, ok := r.arrived[key]; !ok {
		r.arrived[key] = now
		close(r.changed)
		r.changed = make(chan struct{})
	}
	io.WriteString(w, "success")
}

// delivery is how the webhooks of one workload arrived.
type delivery struct {
	Expected  int    `json:"expected"`
	Delivered int    `json:"delivered"`
	LagP50    millis `json:"lag_p50_ms"`
	LagP99    millis `json:"lag_p99_ms"`
	LagMax    millis `json:"lag_max_ms"`
	// DrainAfterLoad is how long after the load stopped the last of them
	// arrived (0 when all had arrived by then).
	DrainAfterLoad millis `json:"drain_after_load_ms"`
	// For the batch workloads: of Batches answered with webhooks to send,
	// those all of whose webhooks arrived, and how long after the batch's
	// answer the last of them did.
	Batches          int    `json:"batches,omitempty"`
	BatchesDelivered int    `json:"batches_delivered,omitempty"`
	BatchP50         millis `json:"batch_delivered_p50_ms,omitempty"`
	BatchP99         millis `json:"batch_delivered_p99_ms,omitempty"`
	BatchMax         millis `json:"batch_delivered_max_ms,omitempty"`
}

// waitDelivered waits, up to maxWait, until every event expected so far has
// arrived, then measures the lag of those expected since the last call.
func (r *receiver) waitDelivered(ctx context.Context, loadEnded time.Time, maxWait time.Duration) *delivery {
	deadline := time.NewTimer(maxWait)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		missing := 0
		for k := range r.answered {
			if _, ok := r.arrived[k]; !ok {
				missing++
			}
		}
		changed := r.changed
		r.mu.Unlock()
		if missing == 0 {
			break
		}
		select {
		case <-changed:
		case <-deadline.C:
			return r.measure(loadEnded)
		case <-ctx.Done():
			return r.measure(loadEnded)
		}
	}
	return r.measure(loadEnded)
}

// measure reports on the expected events and forgets them, so the next
// workload is measured alone.
func (r *receiver) measure(loadEnded time.Time) *delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := &delivery{Expected: len(r.answered)}
	var lags []time.Duration
	var last time.Time
	for k, answered := range r.answered {
		at, ok := r.arrived[k]
		if !ok {
			continue
		}
		d.Delivered++
		lags = append(lags, max(0, at.Sub(answered)))
		if at.After(last) {
			last = at
		}
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		d.LagP50 = millis(percentile(lags, 0.50))
		d.LagP99 = millis(percentile(lags, 0.99))
		d.LagMax = millis(lags[len(lags)-1])
	}
	if last.After(loadEnded) {
		d.DrainAfterLoad = millis(last.Sub(loadEnded))
	}
	r.measureBatches(d)
	clear(r.answered)
	return d
}

// measureBatches adds to d, for each batch expected, the time from its
// answer to its last webhook's arrival, and forgets the batches.
func (r *receiver) measureBatches(d *delivery) {
	d.Batches = len(r.batches)
	var lags []time.Duration
	for _, b := range r.batches {
		var last time.Time
		for _, k := range b.keys {
			at, ok := r.arrived[k]
			if !ok {
				last = time.Time{}
				break
			}
			if at.After(last) {
				last = at
			}
		}
		if !last.IsZero() {
			lags = append(lags, max(0, last.Sub(b.at)))
		}
	}
	d.BatchesDelivered = len(lags)
	if len(lags) > 0 {
		slices.Sort(lags)
		d.BatchP50 = millis(percentile(lags, 0.50))
		d.BatchP99 = millis(percentile(lags, 0.99))
		d.BatchMax = millis(lags[len(lags)-1])
	}
	r.batches = nil
}

// eventCheck is the end-of-run check of the webhooks: every event the run
// caused arrived, correctly signed.
type eventCheck struct {
	Expected      int `json:"expected"`
	Missing       int `json:"missing"`
	Deliveries    int `json:"deliveries"`
	UniqueIDs     int `json:"unique_ids"`
	Duplicates    int `json:"duplicates"` // allowed (at least once), but worth seeing
	BadSignatures int `json:"bad_signatures"`
}

func (r *receiver) check(expected []string) *eventCheck {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &eventCheck{Expected: len(expected), Deliveries: r.deliveries, UniqueIDs: len(r.ids), BadSignatures: r.badSig}
	for _, k := range expected {
		if _, ok := r.arrived[k]; !ok {
			c.Missing++
		}
	}
	c.Duplicates = r.deliveries - r.badSig - len(r.ids)
	return c
}
