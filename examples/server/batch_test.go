package main

// Mass payouts (contract, section 12) over the real server binary (this test
// binary run as the program, see startProc) and a real listener, on SQLite
// and PostgreSQL: a batch end to end with its webhooks and settlement,
// identical batches racing, batches racing single payouts on one balance,
// two instances on one PostgreSQL, and SIGKILLs during batches of 1,000.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// ---- requests and answers ----

const batchAddress = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"

// payoutItem is the body of a single create, and an item of a batch.
func payoutItem(id, amount string) string {
	return fmt.Sprintf(`{"payout_id":%q,"amount":%q,"asset":"USDT","network":"TRON","address":%q,"payer_id":"cust-1"}`,
		id, amount, batchAddress)
}

// batchBody is a batch create with items (payoutItem bodies).
func batchBody(batchID string, allOrNothing bool, items ...string) string {
	return fmt.Sprintf(`{"batch_id":%q,"payouts":[%s],"all_or_nothing":%t}`, batchID, strings.Join(items, ","), allOrNothing)
}

// uniformBatch is a batch of n items of amount, named prefix0, prefix1, ...
func uniformBatch(batchID, prefix, amount string, n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = payoutItem(fmt.Sprintf("%s%d", prefix, i), amount)
	}
	return batchBody(batchID, false, items...)
}

// wirePayout is the contract's payout object, every member.
type wirePayout struct {
	PayoutID      string  `json:"payout_id"`
	Status        string  `json:"status"`
	Amount        string  `json:"amount"`
	Currency      string  `json:"currency"`
	Asset         string  `json:"asset"`
	Network       string  `json:"network"`
	Address       string  `json:"address"`
	PayerID       string  `json:"payer_id"`
	TxID          *string `json:"txid"`
	AssetAmount   *string `json:"asset_amount"`
	NetworkFee    *string `json:"network_fee"`
	FailureReason *string `json:"failure_reason"`
	CreatedAt     string  `json:"created_at"`
	UpdatedAt     string  `json:"updated_at"`
	Approval      string  `json:"approval"`
}

// wireBatch is the contract's batch object.
type wireBatch struct {
	BatchID        string `json:"batch_id"`
	CreatedAt      string `json:"created_at"`
	AllOrNothing   bool   `json:"all_or_nothing"`
	Accepted       int    `json:"accepted"`
	Refused        int    `json:"refused"`
	AcceptedAmount string `json:"accepted_amount"`
	Results        []struct {
		PayoutID string      `json:"payout_id"`
		Code     int         `json:"code"`
		Message  string      `json:"message"`
		Payout   *wirePayout `json:"payout"`
	} `json:"results"`
}

func decodeBatch(t testing.TB, data json.RawMessage) wireBatch {
	t.Helper()
	var b wireBatch
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		t.Fatalf("not a batch object: %v: %.500s", err, data)
	}
	return b
}

// stable returns b without what settling a payout changes (its status,
// updated_at, txid and the settlement's amounts), for comparing a batch as
// first answered with the batch as read later.
func stable(b wireBatch) wireBatch {
	out := b
	out.Results = slices.Clone(b.Results)
	for i, r := range out.Results {
		if r.Payout == nil {
			continue
		}
		p := *r.Payout
		p.Status, p.UpdatedAt, p.TxID, p.AssetAmount, p.NetworkFee = "", "", nil, nil, nil
		out.Results[i].Payout = &p
	}
	return out
}

// batchAnswer is one answer to a batch create; status 0 means none.
type batchAnswer struct {
	status   int
	env      envelope
	replayed bool
	err      error
}

func postBatch(ctx context.Context, hc *http.Client, url, key, body string) batchAnswer {
	st, env, h, err := doJSON(ctx, hc, "POST", url+"/v1/payouts/batch", key, body)
	return batchAnswer{status: st, env: env, replayed: h.Get("Idempotent-Replayed") == "true", err: err}
}

// batchInfo reads a batch with POST /v1/payouts/batch/info.
func batchInfo(t testing.TB, url, key, batchID string) (int, envelope) {
	t.Helper()
	st, env, _, err := doJSON(context.Background(), plainClient, "POST", url+"/v1/payouts/batch/info", key, fmt.Sprintf(`{"batch_id":%q}`, batchID))
	if err != nil {
		t.Fatalf("batch/info %s: %v", batchID, err)
	}
	return st, env
}

// mustBatchInfo reads a batch that exists.
func mustBatchInfo(t testing.TB, url, key, batchID string) wireBatch {
	t.Helper()
	st, env := batchInfo(t, url, key, batchID)
	if st != 200 || env.Code != 0 {
		t.Fatalf("batch/info %s: %d %+v", batchID, st, env)
	}
	return decodeBatch(t, env.Data)
}

// balanceOf reads the balance over HTTP.
func balanceOf(t testing.TB, url, key string) (avail, inProgress string) {
	t.Helper()
	st, env, _, err := doJSON(context.Background(), plainClient, "GET", url+"/v1/balance", key, "")
	if err != nil || st != 200 || env.Code != 0 {
		t.Fatalf("balance: %d %+v %v", st, env, err)
	}
	var m map[string]string
	if err := json.Unmarshal(env.Data, &m); err != nil {
		t.Fatal(err)
	}
	return m["available"], m["in_progress"]
}

// sendAtOnce sends body to the batch path once per url, all requests
// released together, and returns the answers in the order of urls.
func sendAtOnce(t testing.TB, urls []string, key, body string) []batchAnswer {
	t.Helper()
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: len(urls)}}
	answers := make([]batchAnswer, len(urls))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() {
			<-start
			answers[i] = postBatch(context.Background(), hc, u, key, body)
		})
	}
	close(start)
	wg.Wait()
	return answers
}

// waitUntil waits up to 30 s for cond, named what in the failure.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 30s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ---- checks against the database ----

// checkLedger checks the workspace's payouts in the database against want
// (payout_id → amount in cents, every payout that must exist, none
// failed): exactly those exist, each debited once with one
// payout.submitted event, and available is funded minus their sum.
func checkLedger(t testing.TB, dsn, ws string, funded int64, want map[string]int64) {
	t.Helper()
	db := openDB(t, dsn)
	rows, err := db.Query(`SELECT payout_id, status, amount FROM payouts WHERE workspace_id = $1`, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	stored := map[string]int64{}
	var spent int64
	for rows.Next() {
		var id, status string
		var amount int64
		if err := rows.Scan(&id, &status, &amount); err != nil {
			t.Fatal(err)
		}
		if _, dup := stored[id]; dup {
			t.Errorf("payout %s exists twice", id)
		}
		if status == "failed" {
			t.Errorf("payout %s failed", id)
		}
		stored[id] = amount
		spent += amount
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var missing, extra, wrong int
	for id, a := range want {
		switch got, ok := stored[id]; {
		case !ok:
			if missing++; missing <= 5 {
				t.Errorf("payout %s was accepted and does not exist", id)
			}
		case got != a:
			if wrong++; wrong <= 5 {
				t.Errorf("payout %s: amount %d cents, want %d", id, got, a)
			}
		}
	}
	for id := range stored {
		if _, ok := want[id]; !ok {
			if extra++; extra <= 5 {
				t.Errorf("payout %s exists but was not accepted", id)
			}
		}
	}
	if missing+extra+wrong > 0 {
		t.Errorf("%d payouts stored, %d accepted: %d missing, %d not accepted, %d with another amount", len(stored), len(want), missing, extra, wrong)
	}
	var debits, submitted int
	var avail int64
	if err := db.QueryRow(`SELECT count(*) FROM ledger_entries WHERE workspace_id = $1 AND kind = 'payout_debit'`, ws).Scan(&debits); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM events WHERE workspace_id = $1 AND type = 'payout.submitted'`, ws).Scan(&submitted); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT available FROM balances WHERE workspace_id = $1`, ws).Scan(&avail); err != nil {
		t.Fatal(err)
	}
	if debits != len(stored) || submitted != len(stored) {
		t.Errorf("%d payouts, %d debits, %d payout.submitted events", len(stored), debits, submitted)
	}
	if avail != funded-spent || avail < 0 {
		t.Errorf("available %d cents, want funded %d - payouts %d = %d", avail, funded, spent, funded-spent)
	}
}

// checkStoredBatch checks that batchID exists once in the database, whole:
// its record counts accepted items (replays included), and the payouts
// naming it are the created ones, summing to its accepted_amount.
func checkStoredBatch(t testing.TB, dsn, ws, batchID string, accepted, created int) {
	t.Helper()
	db := openDB(t, dsn)
	var batches, storedAccepted, payouts int
	var amount, sum int64
	if err := db.QueryRow(`SELECT count(*), coalesce(max(accepted), 0), coalesce(max(accepted_amount), 0)
		FROM payout_batches WHERE workspace_id = $1 AND batch_id = $2`, ws, batchID).Scan(&batches, &storedAccepted, &amount); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*), coalesce(sum(amount), 0) FROM payouts WHERE workspace_id = $1 AND batch_id = $2`,
		ws, batchID).Scan(&payouts, &sum); err != nil {
		t.Fatal(err)
	}
	if batches != 1 || storedAccepted != accepted || payouts != created || sum != amount {
		t.Errorf("batch %s: %d records accepting %d, %d payouts of %d cents (accepted_amount %d); want 1 record accepting %d, %d payouts",
			batchID, batches, storedAccepted, payouts, sum, amount, accepted, created)
	}
}

// ---- 1. a batch end to end ----

func TestBatchEndToEndSQLite(t *testing.T) {
	skipShortFault(t)
	batchEndToEnd(t, filepath.Join(t.TempDir(), "batch.db"))
}

func TestBatchEndToEndPostgres(t *testing.T) {
	skipShortFault(t)
	batchEndToEnd(t, pgtest.Postgres(t))
}

// batchEndToEnd: a funded workspace sends a batch with accepted items, a
// replay of a single payout and an item the balance no longer covers. The
// answer, batch/info, a replay of the batch and a refused all-or-nothing
// batch are as section 12 says; each
// payout the batch created sends one payout.submitted to a real receiver
// (signed), settles through the sandbox processor with its
// payout.completed, and no other event is sent; the audit passes.
func batchEndToEnd(t *testing.T, dsn string) {
	recv := newHookReceiver(t)
	ws := newFaultWorkspace(t, dsn, recv.URL+"/hooks")
	recv.secret.Store(&ws.secret)
	p := startProc(t, "-db", dsn, "-sandbox-settle-after", "1s")
	funded := fund(t, p.url, ws.key, "fund", "10.00")

	st, single := postJSON(p.url+"/v1/payouts", ws.key, payoutItem("po-single", "3.00"))
	if st != 200 || single.Code != 0 {
		t.Fatalf("single payout: %d %+v", st, single)
	}
	var singlePayout wirePayout
	if err := json.Unmarshal(single.Data, &singlePayout); err != nil {
		t.Fatal(err)
	}

	// 10.00 funded, 3.00 paid out alone: po-a takes 4.00, po-single is a
	// replay (not debited again), po-b (5.00) finds 3.00 and is refused,
	// po-c takes the last 3.00.
	body := batchBody("b-1", false,
		payoutItem("po-a", "4.00"), payoutItem("po-single", "3"), payoutItem("po-b", "5.00"), payoutItem("po-c", "3.00"))
	a := postBatch(context.Background(), plainClient, p.url, ws.key, body)
	if a.err != nil || a.status != 200 || a.env.Code != 0 || a.env.Message != "OK" || a.replayed {
		t.Fatalf("batch: %d %+v replayed=%v %v", a.status, a.env, a.replayed, a.err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(a.env.Data, &members); err != nil {
		t.Fatal(err)
	}
	if keys := slices.Sorted(func(yield func(string) bool) {
		for k := range members {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(keys, []string{"accepted", "accepted_amount", "all_or_nothing", "batch_id", "created_at", "refused", "results"}) {
		t.Fatalf("batch object members %v", keys)
	}
	b := decodeBatch(t, a.env.Data)
	if b.BatchID != "b-1" || b.AllOrNothing || b.Accepted != 3 || b.Refused != 1 || b.AcceptedAmount != "7.00" || len(b.Results) != 4 {
		t.Fatalf("batch %+v; want 3 accepted (the replay included), 1 refused, 7.00 created", b)
	}
	if _, err := time.Parse(time.RFC3339, b.CreatedAt); err != nil || !strings.HasSuffix(b.CreatedAt, "Z") {
		t.Fatalf("created_at %q: %v", b.CreatedAt, err)
	}
	for i, want := range []struct {
		id, amount string
		code       int
		message    string
	}{
		{"po-a", "4.00", 0, "OK"},
		{"po-single", "3.00", 0, "OK"},
		{"po-b", "", 40000, "Insufficient available balance"},
		{"po-c", "3.00", 0, "OK"},
	} {
		r := b.Results[i]
		if r.PayoutID != want.id || r.Code != want.code || r.Message != want.message {
			t.Errorf("results[%d] = %s %d %q; want %s %d %q", i, r.PayoutID, r.Code, r.Message, want.id, want.code, want.message)
		}
		switch {
		case want.code != 0:
			if r.Payout != nil {
				t.Errorf("results[%d]: a refused item with a payout %v", i, r.Payout)
			}
		case r.Payout == nil:
			t.Errorf("results[%d]: an accepted item without its payout", i)
		case r.Payout.PayoutID != want.id || r.Payout.Amount != want.amount || r.Payout.Status != "submitted" || r.Payout.Currency != "USD" ||
			r.Payout.Asset != "USDT" || r.Payout.Network != "TRON" || r.Payout.Address != batchAddress || r.Payout.PayerID != "cust-1" ||
			r.Payout.Approval != "none" || r.Payout.TxID != nil || r.Payout.FailureReason != nil:
			t.Errorf("results[%d].payout = %+v", i, *r.Payout)
		}
	}
	if p := b.Results[1].Payout; p == nil || *p != singlePayout {
		t.Errorf("the replayed item's payout %+v; want the stored one %+v", p, singlePayout)
	}
	if avail, _ := balanceOf(t, p.url, ws.key); avail != "0.00" {
		t.Fatalf("available %s after the batch; want 0.00", avail)
	}

	// batch/info: the same batch; a replay of the batch: the same again,
	// changing nothing; any other body: 40900; an unknown batch: 40400.
	info := mustBatchInfo(t, p.url, ws.key, "b-1")
	if !reflect.DeepEqual(stable(info), stable(b)) {
		t.Errorf("batch/info %+v\nwant the answer %+v", info, b)
	}
	again := postBatch(context.Background(), plainClient, p.url, ws.key, body)
	if again.err != nil || again.status != 200 || again.env.Code != 0 || !again.replayed {
		t.Fatalf("the batch again: %d %+v replayed=%v %v", again.status, again.env, again.replayed, again.err)
	}
	if replay := decodeBatch(t, again.env.Data); !reflect.DeepEqual(stable(replay), stable(b)) {
		t.Errorf("the batch replayed %+v\nwant %+v", replay, b)
	}
	for _, other := range []string{
		batchBody("b-1", false, payoutItem("po-a", "4.00"), payoutItem("po-single", "3.00"), payoutItem("po-b", "5.00"), payoutItem("po-c", "2.00")),
		batchBody("b-1", true, payoutItem("po-a", "4.00"), payoutItem("po-single", "3.00"), payoutItem("po-b", "5.00"), payoutItem("po-c", "3.00")),
		batchBody("b-1", false, payoutItem("po-a", "4.00"), payoutItem("po-single", "3.00"), payoutItem("po-b", "5.00")),
	} {
		if a := postBatch(context.Background(), plainClient, p.url, ws.key, other); a.err != nil || a.status != 409 || a.env.Code != 40900 {
			t.Errorf("b-1 with another body: %d %+v %v", a.status, a.env, a.err)
		}
	}
	if st, env := batchInfo(t, p.url, ws.key, "b-2"); st != 404 || env.Code != 40400 {
		t.Errorf("batch/info of an unknown batch: %d %+v", st, env)
	}
	if st, env := postJSON(p.url+"/v1/payouts/info", ws.key, `{"payout_id":"po-b"}`); st != 404 || env.Code != 40400 {
		t.Errorf("the refused item's payout: %d %+v", st, env)
	}
	// An all-or-nothing batch with a refused item: its first refusal,
	// named by path, and no record, no payout, no event.
	aon := batchBody("b-aon", true, payoutItem("po-a", "4.00"), payoutItem("po-e", "1.00"))
	for range 2 { // judged afresh each time
		a := postBatch(context.Background(), plainClient, p.url, ws.key, aon)
		if a.err != nil || a.status != 400 || a.env.Code != 40000 || a.env.Message != "payouts[1]: Insufficient available balance" ||
			string(a.env.Data) != "null" || a.replayed {
			t.Fatalf("a refused all-or-nothing batch: %d %+v replayed=%v %v", a.status, a.env, a.replayed, a.err)
		}
	}
	if st, env := batchInfo(t, p.url, ws.key, "b-aon"); st != 404 || env.Code != 40400 {
		t.Errorf("batch/info of a refused all-or-nothing batch: %d %+v", st, env)
	}
	if st, env := postJSON(p.url+"/v1/payouts/info", ws.key, `{"payout_id":"po-e"}`); st != 404 || env.Code != 40400 {
		t.Errorf("the all-or-nothing batch's refused item: %d %+v", st, env)
	}
	if avail, _ := balanceOf(t, p.url, ws.key); avail != "0.00" {
		t.Fatalf("available %s after the replays; want 0.00", avail)
	}

	// The processor settles the batch's payouts like single ones.
	waitUntil(t, "the payouts completed", func() bool {
		for _, id := range []string{"po-single", "po-a", "po-c"} {
			_, env := postJSON(p.url+"/v1/payouts/info", ws.key, fmt.Sprintf(`{"payout_id":%q}`, id))
			var po wirePayout
			if env.Code != 0 || json.Unmarshal(env.Data, &po) != nil || po.Status != "completed" || po.TxID == nil {
				return false
			}
		}
		return true
	})
	settled := mustBatchInfo(t, p.url, ws.key, "b-1")
	for _, i := range []int{0, 1, 3} {
		if po := settled.Results[i].Payout; po == nil || po.Status != "completed" || po.TxID == nil {
			t.Errorf("batch/info results[%d].payout after settling %+v; want it as it is now", i, po)
		}
	}
	if !reflect.DeepEqual(stable(settled), stable(b)) {
		t.Errorf("batch/info after settling %+v\nwant %+v", settled, b)
	}
	if avail, inProgress := balanceOf(t, p.url, ws.key); avail != "0.00" || inProgress != "0.00" {
		t.Errorf("balance after settling: available %s, in progress %s", avail, inProgress)
	}

	// Every event reaches the receiver; the batch sent one payout.submitted
	// per payout it created, and nothing else.
	db := openDB(t, dsn)
	waitUntil(t, "every event delivered", func() bool {
		var open int
		if err := db.QueryRow(`SELECT count(*) FROM events WHERE workspace_id = $1 AND state <> 'delivered'`, ws.id).Scan(&open); err != nil {
			t.Fatal(err)
		}
		return open == 0
	})
	recv.mu.Lock()
	for _, bad := range recv.bad {
		t.Error(bad)
	}
	got := map[string]int{}
	for id, raw := range recv.body {
		var ev struct {
			Type        string `json:"type"`
			WorkspaceID string `json:"workspace_id"`
			Data        struct {
				PayoutID string `json:"payout_id"`
				OrderID  string `json:"order_id"`
				Amount   string `json:"amount"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil || ev.WorkspaceID != ws.id {
			t.Errorf("event %s: %s (%v)", id, raw, err)
		}
		got[ev.Type+" "+ev.Data.PayoutID+ev.Data.OrderID+" "+ev.Data.Amount]++
	}
	order := recv.first
	recv.mu.Unlock()
	want := map[string]int{
		"order.paid fund 10.00":           1,
		"payout.submitted po-single 3.00": 1,
		"payout.submitted po-a 4.00":      1,
		"payout.submitted po-c 3.00":      1,
		"payout.completed po-single 3.00": 1,
		"payout.completed po-a 4.00":      1,
		"payout.completed po-c 3.00":      1,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events received (by distinct id) %v\nwant %v", got, want)
	}
	for _, id := range []string{"po-a", "po-c"} {
		if first := order[id]; first["payout.submitted"] == 0 || first["payout.completed"] < first["payout.submitted"] {
			t.Errorf("payout %s: events out of order %v", id, first)
		}
	}
	var outbox int
	if err := db.QueryRow(`SELECT count(*) FROM events WHERE workspace_id = $1`, ws.id).Scan(&outbox); err != nil {
		t.Fatal(err)
	}
	if outbox != len(want) {
		t.Errorf("%d events in the outbox; want %d", outbox, len(want))
	}

	checkStoredBatch(t, dsn, ws.id, "b-1", 3, 2) // po-single was not created by the batch
	checkLedger(t, dsn, ws.id, funded, map[string]int64{"po-single": 300, "po-a": 400, "po-c": 300})
	p.term(t, 40*time.Second)
	auditExitsZero(t, dsn)
}

// ---- 2. identical batches racing ----

func TestBatchRaceSQLite(t *testing.T) {
	skipShortFault(t)
	dsn := filepath.Join(t.TempDir(), "race.db")
	ws := newFaultWorkspace(t, dsn, "")
	p := startProc(t, "-db", dsn)
	batchRace(t, dsn, ws, []string{p.url})
	p.term(t, 40*time.Second)
	auditExitsZero(t, dsn)
}

func TestBatchRacePostgres(t *testing.T) {
	skipShortFault(t)
	dsn := pgtest.Postgres(t)
	ws := newFaultWorkspace(t, dsn, "")
	p := startProc(t, "-db", dsn)
	batchRace(t, dsn, ws, []string{p.url})
	p.term(t, 40*time.Second)
	auditExitsZero(t, dsn)
}

// batchRace sends 8 identical batches at once, spread over urls (servers
// on dsn): one batch is made, every answer carries the same data, 7 of
// them replays, and the balance is debited once.
func batchRace(t *testing.T, dsn string, ws faultWorkspace, urls []string) {
	t.Helper()
	funded := fund(t, urls[0], ws.key, "fund-race", "15.00")
	body := uniformBatch("race", "race-", "1.00", 20)
	targets := make([]string, 8)
	for i := range targets {
		targets[i] = urls[i%len(urls)]
	}
	answers := sendAtOnce(t, targets, ws.key, body)
	var replays int
	for i, a := range answers {
		if a.err != nil || a.status != 200 || a.env.Code != 0 {
			t.Fatalf("answer %d: %d %+v %v", i, a.status, a.env, a.err)
		}
		if a.replayed {
			replays++
		}
		if string(a.env.Data) != string(answers[0].env.Data) {
			t.Errorf("answer %d carries other data:\n%s\nthan answer 0:\n%s", i, a.env.Data, answers[0].env.Data)
		}
	}
	if replays != 7 {
		t.Errorf("%d of 8 answers replayed; want 7", replays)
	}
	b := decodeBatch(t, answers[0].env.Data)
	if b.Accepted != 15 || b.Refused != 5 || b.AcceptedAmount != "15.00" || len(b.Results) != 20 {
		t.Fatalf("batch: %d accepted, %d refused, %s, %d results; want 15, 5, 15.00, 20", b.Accepted, b.Refused, b.AcceptedAmount, len(b.Results))
	}
	want := map[string]int64{}
	for i, r := range b.Results {
		accepted := i < 15
		if r.PayoutID != fmt.Sprintf("race-%d", i) || accepted != (r.Code == 0) ||
			!accepted && (r.Code != 40000 || r.Message != "Insufficient available balance" || r.Payout != nil) {
			t.Errorf("results[%d] = %s %d %q", i, r.PayoutID, r.Code, r.Message)
		}
		if accepted {
			want[r.PayoutID] = 100
		}
	}
	checkStoredBatch(t, dsn, ws.id, "race", 15, 15)
	checkLedger(t, dsn, ws.id, funded, want)
}

// ---- 3. batches racing single payouts on one balance ----

func TestBatchVersusSinglesSQLite(t *testing.T) {
	skipShortFault(t)
	dsn := filepath.Join(t.TempDir(), "mixed.db")
	ws := newFaultWorkspace(t, dsn, "")
	p := startProc(t, "-db", dsn)
	batchVersusSingles(t, dsn, ws, []string{p.url})
	p.term(t, 40*time.Second)
	auditExitsZero(t, dsn)
}

func TestBatchVersusSinglesPostgres(t *testing.T) {
	skipShortFault(t)
	dsn := pgtest.Postgres(t)
	ws := newFaultWorkspace(t, dsn, "")
	p := startProc(t, "-db", dsn)
	batchVersusSingles(t, dsn, ws, []string{p.url})
	p.term(t, 40*time.Second)
	auditExitsZero(t, dsn)
}

// batchVersusSingles funds 60.00 and asks for more in payouts of 1.00:
// four batches of 25 sent at once while clients send single payouts, all
// spread over urls. The balance is never overdrawn and ends exact: the
// accepted payouts, batched and single, sum to the funding; each batch's
// accepted items are its payouts, none refused before one accepted.
func batchVersusSingles(t *testing.T, dsn string, ws faultWorkspace, urls []string) {
	t.Helper()
	funded := fund(t, urls[0], ws.key, "fund-mixed", "60.00")
	c := newPayoutClient(ws.key, "1.00")
	c.prefix = "single-"
	var turn atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := c.start(ctx, func() string { return urls[int(turn.Add(1))%len(urls)] }, 4)
	c.waitAcked(t, 3, 30*time.Second) // the singles are under way

	const batches, items = 4, 25
	answers := make([]batchAnswer, batches)
	var wg sync.WaitGroup
	for k := range batches {
		wg.Go(func() {
			body := uniformBatch(fmt.Sprintf("mixed-%d", k), fmt.Sprintf("mixed-%d-", k), "1.00", items)
			answers[k] = postBatch(context.Background(), plainClient, urls[k%len(urls)], ws.key, body)
		})
	}
	wg.Wait()
	// The singles go on until the balance runs out.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, r, _ := c.counts(); r >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the balance did not run out within 30s: %s", c)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wait()
	c.converge(t, urls[0])
	t.Logf("singles: %s", c)

	want := map[string]int64{}
	c.mu.Lock()
	for _, bad := range c.bad {
		t.Errorf("single payout: %s", bad)
	}
	for id := range c.acked {
		want[id] = 100
	}
	c.mu.Unlock()
	var batched int
	for k, a := range answers {
		if a.err != nil || a.status != 200 || a.env.Code != 0 || a.replayed {
			t.Fatalf("batch %d: %d %+v replayed=%v %v", k, a.status, a.env, a.replayed, a.err)
		}
		b := decodeBatch(t, a.env.Data)
		refusedYet := false
		for i, r := range b.Results {
			switch {
			case r.Code == 0 && !refusedYet && r.Payout != nil:
				want[r.PayoutID] = 100
			case r.Code == 40000 && r.Message == "Insufficient available balance" && r.Payout == nil:
				refusedYet = true
			default:
				t.Errorf("batch %d results[%d] = %s %d %q (an item refused before it: %v)", k, i, r.PayoutID, r.Code, r.Message, refusedYet)
			}
		}
		if b.Accepted+b.Refused != items || b.AcceptedAmount != payoutkit.Amount(100*b.Accepted).String() {
			t.Errorf("batch %d: %d accepted, %d refused, %s", k, b.Accepted, b.Refused, b.AcceptedAmount)
		}
		batched += b.Accepted
		checkStoredBatch(t, dsn, ws.id, b.BatchID, b.Accepted, b.Accepted)
	}
	t.Logf("%d payouts in batches, %d single", batched, len(want)-batched)
	if int64(len(want))*100 != funded {
		t.Errorf("%d payouts of 1.00 accepted; want the funding, %d cents, paid out exactly", len(want), funded)
	}
	if avail, _ := balanceOf(t, urls[0], ws.key); avail != "0.00" {
		t.Errorf("available %s; want 0.00", avail)
	}
	checkLedger(t, dsn, ws.id, funded, want)
}

// ---- batches and single payouts sharing payout_ids ----

func TestBatchOverlapSQLite(t *testing.T) {
	skipShortFault(t)
	dsn := filepath.Join(t.TempDir(), "overlap.db")
	ws := newFaultWorkspace(t, dsn, "")
	p := startProc(t, "-db", dsn)
	batchOverlap(t, dsn, ws, []string{p.url}, 3)
	p.term(t, 40*time.Second)
	auditExitsZero(t, dsn)
}

func TestBatchOverlapPostgres(t *testing.T) {
	skipShortFault(t)
	dsn := pgtest.Postgres(t)
	ws := newFaultWorkspace(t, dsn, "")
	p := startProc(t, "-db", dsn)
	batchOverlap(t, dsn, ws, []string{p.url}, 3)
	p.term(t, 40*time.Second)
	auditExitsZero(t, dsn)
}

// batchOverlap races, in each round, two batches whose payout_ids
// overlap (one in reverse order) and a single create of every one of their
// payout_ids, spread over urls, on a balance that covers them all. Every
// answer is code 0; each payout_id is made once, by one of them, and every
// other answer is its replay, carrying the same payout; the balance is
// debited once per payout.
func batchOverlap(t *testing.T, dsn string, ws faultWorkspace, urls []string, rounds int) {
	t.Helper()
	funded := fund(t, urls[0], ws.key, "fund-overlap", fmt.Sprintf("%d.00", 30*rounds))
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	want := map[string]int64{}
	for round := range rounds {
		id := func(i int) string { return fmt.Sprintf("ov%d-%d", round, i) }
		var first, second []string
		for i := range 20 {
			first = append(first, payoutItem(id(i), "1.00"))
			second = append(second, payoutItem(id(29-i), "1.00")) // 29 down to 10
		}
		bodies := []string{batchBody(fmt.Sprintf("ov%d-a", round), false, first...), batchBody(fmt.Sprintf("ov%d-b", round), false, second...)}

		var batchAnswers [2]batchAnswer
		type singleAnswer struct {
			status   int
			env      envelope
			replayed bool
			err      error
		}
		singles := make([]singleAnswer, 30)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for k := range bodies {
			wg.Go(func() {
				<-start
				batchAnswers[k] = postBatch(context.Background(), hc, urls[k%len(urls)], ws.key, bodies[k])
			})
		}
		for i := range singles {
			wg.Go(func() {
				<-start
				st, env, h, err := doJSON(context.Background(), hc, "POST", urls[(i+1)%len(urls)]+"/v1/payouts", ws.key, payoutItem(id(i), "1.00"))
				singles[i] = singleAnswer{st, env, h.Get("Idempotent-Replayed") == "true", err}
			})
		}
		close(start)
		wg.Wait()

		// Every answer's payout, by payout_id; each must be the one stored.
		seen := map[string]wirePayout{}
		same := func(who string, p *wirePayout) {
			if p == nil {
				t.Errorf("round %d: %s: no payout", round, who)
				return
			}
			if old, ok := seen[p.PayoutID]; ok && old.CreatedAt != p.CreatedAt {
				t.Errorf("round %d: %s: payout %s created at %s and at %s", round, who, p.PayoutID, old.CreatedAt, p.CreatedAt)
			}
			seen[p.PayoutID] = *p
		}
		madeBySingle := map[string]bool{}
		for i, a := range singles {
			if a.err != nil || a.status != 200 || a.env.Code != 0 {
				t.Fatalf("round %d: single %s: %d %+v %v", round, id(i), a.status, a.env, a.err)
			}
			var p wirePayout
			if err := json.Unmarshal(a.env.Data, &p); err != nil {
				t.Fatal(err)
			}
			same("single "+id(i), &p)
			if !a.replayed {
				madeBySingle[id(i)] = true
			}
		}
		madeByBatch := 0
		for k, a := range batchAnswers {
			if a.err != nil || a.status != 200 || a.env.Code != 0 || a.replayed {
				t.Fatalf("round %d: batch %d: %d %+v replayed=%v %v", round, k, a.status, a.env, a.replayed, a.err)
			}
			b := decodeBatch(t, a.env.Data)
			if b.Accepted != 20 || b.Refused != 0 {
				t.Errorf("round %d: batch %s: %d accepted, %d refused", round, b.BatchID, b.Accepted, b.Refused)
			}
			for _, r := range b.Results {
				if r.Code != 0 {
					t.Errorf("round %d: batch %s: %s answered %d %q", round, b.BatchID, r.PayoutID, r.Code, r.Message)
					continue
				}
				same("batch "+b.BatchID, r.Payout)
			}
			var created int
			if err := openDB(t, dsn).QueryRow(`SELECT count(*) FROM payouts WHERE workspace_id = $1 AND batch_id = $2`, ws.id, b.BatchID).Scan(&created); err != nil {
				t.Fatal(err)
			}
			if b.AcceptedAmount != payoutkit.Amount(100*created).String() {
				t.Errorf("round %d: batch %s: accepted_amount %s for %d payouts it made", round, b.BatchID, b.AcceptedAmount, created)
			}
			madeByBatch += created
			checkStoredBatch(t, dsn, ws.id, b.BatchID, 20, created)
		}
		if len(seen) != 30 || len(madeBySingle)+madeByBatch != 30 {
			t.Errorf("round %d: %d payout_ids answered; %d made by single creates (not replayed), %d by the batches; want 30 made once",
				round, len(seen), len(madeBySingle), madeByBatch)
		}
		for pid := range seen {
			want[pid] = 100
		}
		t.Logf("round %d: %d payouts made by single creates, %d by the batches", round, len(madeBySingle), madeByBatch)
	}
	checkLedger(t, dsn, ws.id, funded, want)
}

// ---- 4. two instances on one PostgreSQL ----

// TestBatchTwoInstancesPostgres: two server processes on one database. The
// same batch sent to both at once makes one batch; batches and single
// payouts spread over both on one balance stay exact.
func TestBatchTwoInstancesPostgres(t *testing.T) {
	skipShortFault(t)
	dsn := pgtest.Postgres(t)
	race, mixed := newFaultWorkspace(t, dsn, ""), newFaultWorkspace(t, dsn, "")
	a, b := startProc(t, "-db", dsn), startProc(t, "-db", dsn)
	batchRace(t, dsn, race, []string{a.url, b.url})
	batchVersusSingles(t, dsn, mixed, []string{a.url, b.url})
	a.term(t, 40*time.Second)
	b.term(t, 40*time.Second)
	auditExitsZero(t, dsn)
}

// TestBatchOverlapTwoInstancesPostgres: batches and single creates sharing
// payout_ids, spread over two server processes on one database, are
// answered as on one (batchOverlap).
func TestBatchOverlapTwoInstancesPostgres(t *testing.T) {
	skipShortFault(t)
	dsn := pgtest.Postgres(t)
	ws := newFaultWorkspace(t, dsn, "")
	a, b := startProc(t, "-db", dsn), startProc(t, "-db", dsn)
	t.Cleanup(func() {
		if t.Failed() { // the servers' errors, for the report
			for _, l := range strings.Split(a.stderr.String()+b.stderr.String(), "\n") {
				if strings.Contains(l, `"level":"ERROR"`) {
					t.Log(l)
				}
			}
		}
	})
	batchOverlap(t, dsn, ws, []string{a.url, b.url}, 10)
	a.term(t, 40*time.Second)
	b.term(t, 40*time.Second)
	auditExitsZero(t, dsn)
}

// TestSinglesOverlapTwoInstancesPostgres, the same without batches: single
// creates of the same payout_ids sent at once to two server processes on
// one database are each answered code 0, one payout per payout_id (section
// 4: concurrent identical creates make one payout). It fails as
// TestBatchOverlapTwoInstancesPostgres does (SQLSTATE 40P01, 50000), so
// that deadlock is not the batches' own.
func TestSinglesOverlapTwoInstancesPostgres(t *testing.T) {
	skipShortFault(t)
	dsn := pgtest.Postgres(t)
	ws := newFaultWorkspace(t, dsn, "")
	a, b := startProc(t, "-db", dsn), startProc(t, "-db", dsn)
	const rounds, ids = 10, 20
	funded := fund(t, a.url, ws.key, "fund", fmt.Sprintf("%d.00", rounds*ids))
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	want := map[string]int64{}
	var failed atomic.Int64
	for round := range rounds {
		var wg sync.WaitGroup
		for i := range 2 * ids { // each payout_id twice, to a and to b, in opposite orders
			id := fmt.Sprintf("s%d-%d", round, min(i, 2*ids-1-i))
			url := []string{a.url, b.url}[i%2]
			want[id] = 100
			wg.Go(func() {
				st, env, _, err := doJSON(context.Background(), hc, "POST", url+"/v1/payouts", ws.key, payoutItem(id, "1.00"))
				if err != nil || st != 200 || env.Code != 0 {
					failed.Add(1)
					t.Errorf("%s: %d %+v %v", id, st, env, err)
				}
			})
		}
		wg.Wait()
	}
	t.Logf("%d of %d creates not answered code 0", failed.Load(), 2*rounds*ids)
	checkLedger(t, dsn, ws.id, funded, want)
	a.term(t, 40*time.Second)
	b.term(t, 40*time.Second)
	auditExitsZero(t, dsn)
}

// ---- 5. SIGKILL during batches of 1,000 ----

func TestBatchSIGKILLSQLite(t *testing.T) {
	skipShortFault(t)
	batchSIGKILL(t, filepath.Join(t.TempDir(), "kill.db"))
}

func TestBatchSIGKILLPostgres(t *testing.T) {
	skipShortFault(t)
	batchSIGKILL(t, pgtest.Postgres(t))
}

// batchSIGKILL: four clients each send a batch of 1,000 payouts of 0.01
// (40.00 asked, 30.00 funded), and retry it with the same batch_id and body
// until it is answered. The server is SIGKILLed three times while batches
// are in flight and started again. Each batch then exists once and whole, the
// balance is exact, and the audit passes (after each kill too).
func batchSIGKILL(t *testing.T, dsn string) {
	const batches, items = 4, 1000
	ws := newFaultWorkspace(t, dsn, "")
	p := startProc(t, "-db", dsn)
	funded := fund(t, p.url, ws.key, "fund", "30.00")
	var url atomic.Pointer[string]
	url.Store(&p.url)

	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: batches}}
	bodies := make([]string, batches)
	answers := make([]batchAnswer, batches)
	var answered, sends atomic.Int64
	var wg sync.WaitGroup
	for k := range batches {
		bodies[k] = uniformBatch(fmt.Sprintf("kill-%d", k), fmt.Sprintf("kill-%d-", k), "0.01", items)
		wg.Go(func() {
			deadline := time.Now().Add(3 * time.Minute)
			for {
				sends.Add(1)
				a := postBatch(context.Background(), hc, *url.Load(), ws.key, bodies[k])
				// No answer, or an unknown outcome (50000, 50300): the
				// same request again, as a client must.
				if a.err == nil && a.status != 500 && a.status != 503 {
					answers[k] = a
					answered.Add(1)
					return
				}
				if time.Now().After(deadline) {
					answers[k] = a
					return
				}
				time.Sleep(time.Duration(10+rand.IntN(20)) * time.Millisecond)
			}
		})
	}

	// Three kills: a moment after a batch was answered, with others in
	// flight (rounds 0 and 2), and as soon as the database holds a batch
	// whose answer has not reached its client (round 1), whose retry must
	// find it whole.
	db := openDB(t, dsn)
	stored := func() int64 {
		var n int64
		if err := db.QueryRow(`SELECT count(*) FROM payout_batches WHERE workspace_id = $1`, ws.id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for round := range 3 {
		deadline := time.Now().Add(2 * time.Minute)
		before := answered.Load()
		for {
			if round == 1 {
				if n := stored(); n > answered.Load() {
					break
				}
			} else if answered.Load() > before {
				break
			}
			if answered.Load() == batches {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: nothing answered in 2 minutes; stderr:\n%s", round, tail(p.stderr.String(), 4000))
			}
			time.Sleep(time.Millisecond)
		}
		if answered.Load() == batches {
			t.Logf("round %d: every batch answered before the kill", round)
			break
		}
		if round != 1 {
			time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond) // anywhere in the next batch
		}
		p.kill(t)
		t.Logf("round %d: SIGKILL with %d of %d batches answered, %d stored", round, answered.Load(), batches, stored())
		// What a SIGKILL left behind passes the audit at once.
		var out bytes.Buffer
		if err := run(context.Background(), []string{"audit", "-db", dsn}, &out, io.Discard); err != nil {
			t.Fatalf("round %d: audit after SIGKILL: %v\n%s", round, err, out.String())
		}
		p = startProc(t, "-db", dsn)
		url.Store(&p.url)
	}
	wg.Wait()
	t.Logf("%d batch requests sent for %d batches", sends.Load(), batches)

	want := map[string]int64{}
	var accepted, replayed int
	for k, a := range answers {
		id := fmt.Sprintf("kill-%d", k)
		if a.err != nil || a.status != 200 || a.env.Code != 0 {
			t.Fatalf("batch %s: %d %+v %v", id, a.status, a.env, a.err)
		}
		if a.replayed {
			replayed++ // made before a kill, answered after it
		}
		b := decodeBatch(t, a.env.Data)
		info := mustBatchInfo(t, p.url, ws.key, id)
		if !reflect.DeepEqual(stable(info), stable(b)) {
			t.Errorf("batch %s: batch/info differs from the answer (replayed: %v)", id, a.replayed)
		}
		if b.BatchID != id || len(info.Results) != items || info.Accepted+info.Refused != items ||
			info.AcceptedAmount != payoutkit.Amount(info.Accepted).String() {
			t.Fatalf("batch %s: %d results, %d accepted, %d refused, %s", id, len(info.Results), info.Accepted, info.Refused, info.AcceptedAmount)
		}
		var n int
		for i, r := range info.Results {
			switch {
			case r.PayoutID != fmt.Sprintf("kill-%d-%d", k, i):
				t.Errorf("batch %s results[%d] is %s", id, i, r.PayoutID)
			case r.Code == 0 && r.Payout != nil && r.Payout.PayoutID == r.PayoutID && r.Payout.Amount == "0.01":
				want[r.PayoutID] = 1
				n++
			case r.Code == 40000 && r.Message == "Insufficient available balance" && r.Payout == nil:
			default:
				t.Errorf("batch %s results[%d] = %d %q %v", id, i, r.Code, r.Message, r.Payout)
			}
		}
		if n != info.Accepted {
			t.Errorf("batch %s: %d accepted items with their payout; accepted %d", id, n, info.Accepted)
		}
		accepted += info.Accepted
		checkStoredBatch(t, dsn, ws.id, id, info.Accepted, info.Accepted)
	}
	t.Logf("%d batches answered as replays (made before a kill)", replayed)
	if int64(accepted) != funded {
		t.Errorf("%d payouts of 0.01 accepted; want the funding, %d cents, paid out exactly", accepted, funded)
	}
	checkLedger(t, dsn, ws.id, funded, want)
	p.term(t, 40*time.Second)
	auditExitsZero(t, dsn)
}
