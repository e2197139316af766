package httpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/httpserver"
)

// otherTronAddr is a valid TRON address other than tronAddr.
const otherTronAddr = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW"

// batchBody is a batch create body over items (payoutBody's).
func batchBody(id string, allOrNothing bool, items ...map[string]any) map[string]any {
	b := map[string]any{"batch_id": id, "payouts": items}
	if allOrNothing {
		b["all_or_nothing"] = true
	}
	return b
}

// batch reads a success's data as the batch object.
func (r response) batch(t *testing.T) payoutkit.PayoutBatch {
	t.Helper()
	var b payoutkit.PayoutBatch
	if err := json.Unmarshal(r.env.Data, &b); err != nil {
		t.Fatalf("data is not a batch: %v: %s", err, r.env.Data)
	}
	return b
}

// wantResults checks the batch's results, in order: each "code" or
// "code:payout_id", and that the counts agree with them.
func wantResults(t *testing.T, b payoutkit.PayoutBatch, want ...string) {
	t.Helper()
	var got []string
	accepted := 0
	for _, r := range b.Results {
		got = append(got, fmt.Sprintf("%d:%s", r.Code, r.PayoutID))
		if (r.Code == 0) != (r.Payout != nil) || (r.Code == 0) != (r.Message == "OK") {
			t.Fatalf("result %+v: code, message and payout disagree", r)
		}
		if r.Payout != nil && r.Payout.PayoutID != r.PayoutID {
			t.Fatalf("result %s holds payout %s", r.PayoutID, r.Payout.PayoutID)
		}
		if r.Code == 0 {
			accepted++
		}
	}
	if len(got) != len(want) {
		t.Fatalf("results %v, want %v", got, want)
	}
	for i, w := range want {
		if got[i] != w && !strings.HasPrefix(got[i], w+":") {
			t.Fatalf("results %v, want %v", got, want)
		}
	}
	if b.Accepted != accepted || b.Refused != len(got)-accepted {
		t.Fatalf("accepted %d, refused %d; results %v", b.Accepted, b.Refused, got)
	}
}

// events lists the workspace's events, oldest first, as "type subject".
func (e *env) events(ws string) []string {
	e.t.Helper()
	page, err := e.store.Events(context.Background(), ws, payoutkit.PageRequest{Limit: 500})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range page.Items {
		out = append(out, string(ev.Type)+" "+ev.Subject)
	}
	slices.Sort(out)
	return out
}

// wantEvents checks the workspace's events but order.paid (funding): each
// "type subject", in any order.
func (e *env) wantEvents(ws string, want ...string) {
	e.t.Helper()
	var got []string
	for _, ev := range e.events(ws) {
		if !strings.HasPrefix(ev, string(payoutkit.EventOrderPaid)+" ") {
			got = append(got, ev)
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		e.t.Fatalf("events %q, want %q", got, want)
	}
}

func submitted(ids ...string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "payout.submitted payout:" + id
	}
	return out
}

// Validation comes first, for the whole batch, and names each bad field by
// its path; nothing is created.
func TestBatchValidation(t *testing.T) {
	coins := payoutkit.DefaultCoins()
	for i := range coins {
		if coins[i].Ticker == "USDT" && coins[i].Network == "TRON" {
			coins[i].MinAmount, coins[i].MaxAmount = 1_00, 500_00
		}
	}
	e := newClockedEnv(t, nil, coins, httpserver.Options{Sandbox: true})
	ws, key := e.workspace()
	e.fund(ws, "1000.00")
	before := e.snapshot(ws)
	items := func(n int) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			out[i] = payoutBody(fmt.Sprintf("po-%d", i), "1.00")
		}
		return out
	}
	five := items(5)
	five[3]["address"] = "T-not-an-address"
	r := e.do("POST", "/v1/payouts/batch", key, batchBody("b-1", false, five...)).wantCode(t, 40000).wantField(t, "payouts[3].address")
	if len(r.env.Errors) != 1 || !strings.HasPrefix(r.env.Message, "payouts[3].address ") {
		t.Fatalf("errors %+v, message %q", r.env.Errors, r.env.Message)
	}

	dup := items(3)
	dup[2]["payout_id"] = "po-0"
	e.do("POST", "/v1/payouts/batch", key, batchBody("b-1", false, dup...)).wantCode(t, 40000).wantField(t, "payouts[2].payout_id")

	// The coin row's minimum and maximum (section 9), and each of the six fields.
	bad := items(7)
	bad[0]["amount"] = "0.50"
	bad[1]["amount"] = "500.01"
	bad[2]["asset"] = "NOPE"
	bad[3]["payer_id"] = ""
	bad[4]["payout_id"] = "bad id!"
	bad[5]["amount"] = "1.001"
	delete(bad[6], "network")
	r = e.do("POST", "/v1/payouts/batch", key, batchBody("b-1", false, bad...)).wantCode(t, 40000)
	for _, f := range []string{"payouts[0].amount", "payouts[1].amount", "payouts[2].asset", "payouts[3].payer_id",
		"payouts[4].payout_id", "payouts[5].amount", "payouts[6].network"} {
		r.wantField(t, f)
	}

	e.do("POST", "/v1/payouts/batch", key, batchBody("b-1", false)).wantCode(t, 40000).wantField(t, "payouts")
	e.do("POST", "/v1/payouts/batch", key, batchBody("b-1", false, items(1001)...)).wantCode(t, 40000).wantField(t, "payouts").
		wantMessage(t, "1000")
	for _, id := range []any{"", "bad id!", strings.Repeat("b", 129), "b\x00"} {
		e.do("POST", "/v1/payouts/batch", key, map[string]any{"batch_id": id, "payouts": items(1)}).wantCode(t, 40000).wantField(t, "batch_id")
	}
	e.do("POST", "/v1/payouts/batch", key, map[string]any{"payouts": items(1)}).wantCode(t, 40000).wantField(t, "batch_id")
	e.do("POST", "/v1/payouts/batch", key, map[string]any{"batch_id": "b-1"}).wantCode(t, 40000).wantField(t, "payouts")

	// JSON types, as strict as a single create's: 40000 naming the field.
	item := `{"payout_id":"po-1","amount":"1.00","asset":"USDT","network":"TRON","address":"` + tronAddr + `","payer_id":"p"}`
	for body, field := range map[string]string{
		`{"batch_id":"b-1","payouts":"po-1"}`:                                                            "payouts",
		`{"batch_id":"b-1","payouts":{}}`:                                                                "payouts",
		`{"batch_id":"b-1","payouts":null}`:                                                              "payouts",
		`{"batch_id":"b-1","payouts":[1]}`:                                                               "payouts[0]",
		`{"batch_id":"b-1","payouts":[` + item + `,null]}`:                                               "payouts[1]",
		`{"batch_id":"b-1","payouts":[` + item + `,[` + item + `]]}`:                                     "payouts[1]",
		`{"batch_id":"b-1","payouts":[` + item + `,"x"]}`:                                                "payouts[1]",
		`{"batch_id":7,"payouts":[` + item + `]}`:                                                        "batch_id",
		`{"batch_id":null,"payouts":[` + item + `]}`:                                                     "batch_id",
		`{"batch_id":"b-1","payouts":[` + item + `],"all_or_nothing":"true"}`:                            "all_or_nothing",
		`{"batch_id":"b-1","payouts":[` + item + `],"all_or_nothing":1}`:                                 "all_or_nothing",
		`{"batch_id":"b-1","payouts":[` + item + `],"all_or_nothing":{}}`:                                "all_or_nothing",
		`{"batch_id":"b-1","payouts":[` + item + `,` + strings.Replace(item, `"1.00"`, `1.00`, 1) + `]}`: "payouts[1].amount",
		`{"batch_id":"b-1","payouts":[` + strings.Replace(item, `"p"`, `null`, 1) + `]}`:                 "payouts[0].payer_id",
		`{"batch_id":"b-1","payouts":[` + strings.Replace(item, `"TRON"`, `["TRON"]`, 1) + `]}`:          "payouts[0].network",
		`{"batch_id":"b-1","payouts":[` + strings.Replace(item, `{`, `{"amount":"2",`, 1) + `]}`:         "payouts[0]",
	} {
		r := e.do("POST", "/v1/payouts/batch", key, body).wantCode(t, 40000).wantField(t, field).wantMessage(t, field)
		if field == "payouts[0]" && strings.Contains(body, `"amount":"2"`) {
			r.wantMessage(t, `repeats the member "amount"`)
		}
	}
	// With a wrong type anywhere, every problem is named at once, missing
	// members included.
	r = e.do("POST", "/v1/payouts/batch", key, `{"payouts":[{"amount":1},`+item+`]}`).wantCode(t, 40000)
	for _, f := range []string{"batch_id", "payouts[0].amount", "payouts[0].payout_id", "payouts[0].address"} {
		r.wantField(t, f)
	}
	if len(r.env.Errors) != 7 {
		t.Fatalf("errors %+v", r.env.Errors)
	}
	// Past 1,000 elements, only the count is judged: a megabyte of tiny
	// wrong elements costs no long answer.
	r = e.do("POST", "/v1/payouts/batch", key, `{"batch_id":"b-1","payouts":[`+strings.Repeat(`1,`, 300_000)+`1]}`).wantCode(t, 40000).wantField(t, "payouts")
	if len(r.env.Errors) != 1 || len(r.body) > 1000 {
		t.Fatalf("errors %+v (%d bytes)", r.env.Errors, len(r.body))
	}
	for _, body := range []string{`[]`, `null`, `{"batch_id":"b-1"`, `{"batch_id":"b-1","batch_id":"b-2","payouts":[` + item + `]}`, "{\"batch_id\":\"\xff\"}"} {
		e.do("POST", "/v1/payouts/batch", key, body).wantCode(t, 40000)
	}
	if after := e.snapshot(ws); after != before {
		t.Fatalf("a refused batch changed %q into %q", before, after)
	}
	e.do("POST", "/v1/payouts/batch/info", key, `{"batch_id":"b-1"}`).wantCode(t, 40400) // none recorded
	e.wantEvents(ws)

	// Unknown members are ignored, at the top and in items; null
	// all_or_nothing is absent.
	r = e.do("POST", "/v1/payouts/batch", key, `{"batch_id":"b-1","note":[1],"all_or_nothing":null,"payouts":[`+
		strings.Replace(item, `{`, `{"memo":{"x":1},`, 1)+`]}`).wantCode(t, 0)
	if b := r.batch(t); b.AllOrNothing || b.Accepted != 1 {
		t.Fatalf("batch %+v", b)
	}
	e.audit(ws)
}

// The batch path takes bodies up to 1 MiB; every other path keeps 64 KiB.
func TestBatchBodyLimit(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	ws, key := e.workspace()
	e.fund(ws, "1000.00")
	items := make([]map[string]any, payoutkit.MaxBatchItems)
	for i := range items {
		items[i] = payoutBody(fmt.Sprintf("po-%04d", i), "1.00")
		items[i]["note"] = strings.Repeat("n", 750) // ignored
	}
	body := mustJSON(t, batchBody("b-big", false, items...))
	if n := len(body); n < 850<<10 || n > 950<<10 {
		t.Fatalf("the big batch is %d bytes, want about 900 KiB", n)
	}
	r := e.do("POST", "/v1/payouts/batch", key, body).wantCode(t, 0)
	b := r.batch(t)
	if b.Accepted != payoutkit.MaxBatchItems || b.AcceptedAmount.String() != "1000.00" || b.Results[999].PayoutID != "po-0999" {
		t.Fatalf("accepted %d, %s, last %s", b.Accepted, b.AcceptedAmount, b.Results[999].PayoutID)
	}
	e.wantBalanceOf(ws, "0.00")

	// Exactly 1 MiB is read (and judged on its content); a byte more is 41300.
	one := `{"batch_id":"b-max","payouts":[` + string(mustJSON(t, payoutBody("po-max", "1.00"))) + `],"pad":""}`
	exact := strings.Replace(one, `"pad":""`, `"pad":"`+strings.Repeat("y", httpserver.MaxBatchBodyBytes-len(one))+`"`, 1)
	e.do("POST", "/v1/payouts/batch", key, exact).wantCode(t, 0)
	e.do("POST", "/v1/payouts/batch", key, exact[:len(exact)-2]+`y"}`).wantCode(t, 41300).wantMessage(t, "1 MiB")

	// A 100 KiB body elsewhere is still over 64 KiB, the batch's info included.
	pad := strings.Repeat("x", 100<<10)
	for _, p := range []string{"/v1/payouts", "/v1/payouts/info", "/v1/payouts/batch/info", "/v1/orders"} {
		e.do("POST", p, key, `{"payout_id":"po-1","batch_id":"b-big","pad":"`+pad+`"}`).wantCode(t, 41300).wantMessage(t, "64 KiB")
	}
	e.audit(ws)
}

// Items are applied in order, each accepted or refused on its own.
func TestBatchResults(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	ws, key := e.workspace()
	e.fund(ws, "105.00")
	e.do("POST", "/v1/payouts", key, payoutBody("po-old", "10.00")).wantCode(t, 0)
	e.do("POST", "/v1/payouts", key, payoutBody("po-x", "5.00")).wantCode(t, 0)

	replay := payoutBody("po-old", "10") // numerically the same, in another case
	replay["asset"], replay["network"] = "usdt", "tron"
	body := batchBody("b-1", false,
		replay,                       // a replay: accepted, not debited
		payoutBody("po-c", "60.00"),  // 90 → 30
		payoutBody("po-d", "50.00"),  // more than is left
		payoutBody("po-e", "20.00"),  // smaller, later: accepted, 30 → 10
		payoutBody("po-x", "6.00"),   // po-x with another amount
		payoutBody("po-f", "10.01"),  // 0.01 short
		payoutBody("batch", "10.00"), // a payout may be named batch
		payoutBody("po-g", "0.01"),   // nothing left after it
	)
	r := e.do("POST", "/v1/payouts/batch", key, body).wantCode(t, 0)
	if r.header.Get("Idempotent-Replayed") != "" {
		t.Fatal("a new batch marked as replayed")
	}
	b := r.batch(t)
	wantResults(t, b, "0:po-old", "0:po-c", "40000:po-d", "0:po-e", "40900:po-x", "40000:po-f", "0:batch", "40000:po-g")
	if b.BatchID != "b-1" || b.AllOrNothing || b.AcceptedAmount.String() != "90.00" || b.CreatedAt.IsZero() {
		t.Fatalf("batch %+v", b)
	}
	if m := b.Results[2].Message; m != "Insufficient available balance" {
		t.Fatalf("overdraft message %q", m)
	}
	if m := b.Results[4].Message; !strings.Contains(m, "po-x") {
		t.Fatalf("conflict message %q", m)
	}
	if p := b.Results[0].Payout; p.Amount.String() != "10.00" || p.Asset != "USDT" || !p.CreatedAt.Before(b.CreatedAt.Add(time.Second)) {
		t.Fatalf("replayed payout %+v", p)
	}
	e.wantBalanceOf(ws, "0.00")
	// Each accepted new item has its payout.submitted event, and nothing else does.
	e.wantEvents(ws, submitted("po-old", "po-x", "po-c", "po-e", "batch")...)
	e.do("POST", "/v1/payouts/info", key, map[string]any{"payout_id": "batch"}).wantCode(t, 0)
	e.do("POST", "/v1/payouts/info", key, map[string]any{"payout_id": "po-d"}).wantCode(t, 40400)

	// Info: the same data; later, each accepted payout as it is now, and
	// each refusal as first answered.
	info := e.do("POST", "/v1/payouts/batch/info", key, map[string]any{"batch_id": "b-1"}).wantCode(t, 0)
	if !bytes.Equal(info.env.Data, r.env.Data) {
		t.Fatalf("info %s\nwant %s", info.env.Data, r.env.Data)
	}
	e.do("POST", "/v1/sandbox/payouts/complete", key, map[string]any{"payout_id": "po-c", "txid": "tx-c"}).wantCode(t, 0)
	e.fund(ws, "50.00")
	e.do("POST", "/v1/payouts", key, payoutBody("po-d", "50.00")).wantCode(t, 0)
	later := e.do("POST", "/v1/payouts/batch/info", key, map[string]any{"batch_id": "b-1"}).wantCode(t, 0).batch(t)
	wantResults(t, later, "0:po-old", "0:po-c", "40000:po-d", "0:po-e", "40900:po-x", "40000:po-f", "0:batch", "40000:po-g")
	if p := later.Results[1].Payout; p.Status != payoutkit.PayoutCompleted || p.TxID != "tx-c" {
		t.Fatalf("po-c now %+v", p)
	}
	if later.Results[2].Message != "Insufficient available balance" || later.AcceptedAmount != b.AcceptedAmount || !later.CreatedAt.Equal(b.CreatedAt) {
		t.Fatalf("info later %+v", later)
	}
	// The replay of the whole batch shows it as info does, and changes nothing.
	rep := e.do("POST", "/v1/payouts/batch", key, body).wantCode(t, 0)
	info = e.do("POST", "/v1/payouts/batch/info", key, map[string]any{"batch_id": "b-1"}).wantCode(t, 0)
	if rep.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(rep.env.Data, info.env.Data) {
		t.Fatalf("replay %s %s\nwant %s", rep.header.Get("Idempotent-Replayed"), rep.env.Data, info.env.Data)
	}
	e.wantBalanceOf(ws, "0.00")
}

// The workspace's policy judges each item as a single create of that
// moment would.
func TestBatchPolicy(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	e := newControlsEnv(t, clock, nil)

	// The payout limit.
	ws, key := e.workspace()
	e.fund(ws, "5000.00")
	e.setPolicy(ws, payoutkit.PolicyPatch{MaxPayout: usd("500")})
	b := e.do("POST", "/v1/payouts/batch", key, batchBody("b-max", false,
		payoutBody("po-big", "500.01"), payoutBody("po-ok", "500.00"))).wantCode(t, 0).batch(t)
	wantResults(t, b, "40000:po-big", "0:po-ok")
	if m := b.Results[0].Message; m != "amount exceeds the payout limit of 500.00" {
		t.Fatalf("message %q", m)
	}

	// The 24-hour limit counts the batch's earlier items, and a replayed
	// item not again.
	ws, key = e.workspace()
	e.fund(ws, "5000.00")
	e.do("POST", "/v1/payouts", key, payoutBody("po-pre", "300.00")).wantCode(t, 0)
	e.setPolicy(ws, payoutkit.PolicyPatch{DailyLimit: usd("1000")})
	b = e.do("POST", "/v1/payouts/batch", key, batchBody("b-day", false,
		payoutBody("po-pre", "300.00"), payoutBody("po-1", "400.00"), payoutBody("po-2", "400.00"),
		payoutBody("po-3", "300.00"), payoutBody("po-4", "0.01"))).wantCode(t, 0).batch(t)
	wantResults(t, b, "0:po-pre", "0:po-1", "40000:po-2", "0:po-3", "40000:po-4")
	if m := b.Results[2].Message; m != "amount exceeds the 24-hour payout limit of 1000.00 (300.00 left)" {
		t.Fatalf("message %q", m)
	}
	if b.AcceptedAmount.String() != "700.00" {
		t.Fatalf("accepted_amount %s", b.AcceptedAmount)
	}
	e.wantBalanceOf(ws, "4000.00")

	// The address allowlist: 40300 results, with the allowed address accepted.
	ws, key = e.workspace()
	e.fund(ws, "100.00")
	on := true
	e.setPolicy(ws, payoutkit.PolicyPatch{AddressAllowlist: &on})
	other := payoutBody("po-other", "10.00")
	other["address"] = otherTronAddr
	b = e.do("POST", "/v1/payouts/batch", key, batchBody("b-allow-1", false, payoutBody("po-1", "10.00"), other)).wantCode(t, 0).batch(t)
	wantResults(t, b, "40300:po-1", "40300:po-other")
	if m := b.Results[0].Message; m != "address is not in the allowlist" {
		t.Fatalf("message %q", m)
	}
	if _, err := e.engine.AddAddress(context.Background(), ws, "TRON", tronAddr, "treasury", payoutkit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	b = e.do("POST", "/v1/payouts/batch", key, batchBody("b-allow-2", false, payoutBody("po-1", "10.00"))).wantCode(t, 0).batch(t)
	if m := b.Results[0].Message; b.Results[0].Code != 40300 || !strings.Contains(m, "usable only from") {
		t.Fatalf("result %+v", b.Results[0])
	}
	clock.set(clock.now().Add(24 * time.Hour))
	b = e.do("POST", "/v1/payouts/batch", key, batchBody("b-allow-3", false, payoutBody("po-1", "10.00"), other)).wantCode(t, 0).batch(t)
	wantResults(t, b, "0:po-1", "40300:po-other")
	e.wantBalanceOf(ws, "90.00")
	e.wantEvents(ws, append(submitted("po-1"), "address.added address:TRON:"+payoutkit.AddressKey("TRON", tronAddr))...)

	// An approval hold: accepted, debited, held.
	ws, key = e.workspace()
	e.fund(ws, "1000.00")
	e.setPolicy(ws, payoutkit.PolicyPatch{ApprovalOver: usd("250")})
	b = e.do("POST", "/v1/payouts/batch", key, batchBody("b-hold", false,
		payoutBody("po-held", "300.00"), payoutBody("po-small", "100.00"))).wantCode(t, 0).batch(t)
	wantResults(t, b, "0:po-held", "0:po-small")
	if b.Results[0].Payout.Approval != payoutkit.ApprovalPending || b.Results[1].Payout.Approval != payoutkit.ApprovalNone {
		t.Fatalf("approvals %s, %s", b.Results[0].Payout.Approval, b.Results[1].Payout.Approval)
	}
	r := e.do("POST", "/v1/payouts/info", key, map[string]any{"payout_id": "po-held"}).wantCode(t, 0)
	if !jsonHas(r.env.Data, "approval", "pending") {
		t.Fatalf("held payout %s", r.env.Data)
	}
	e.wantBalanceOf(ws, "600.00")
	e.wantEvents(ws, submitted("po-held", "po-small")...)
	evs, err := e.store.SubjectEvents(context.Background(), ws, "payout:po-held")
	if err != nil || len(evs) != 1 || !strings.Contains(string(evs[0].Body), `"approval":"pending"`) {
		t.Fatalf("events of po-held %+v, %v", evs, err)
	}
}

// With all_or_nothing every item must be accepted, or nothing is created.
func TestBatchAllOrNothing(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	ws, key := e.workspace()
	e.fund(ws, "100.00")
	body := batchBody("b-aon", true, payoutBody("po-1", "50.00"), payoutBody("po-2", "60.00"), payoutBody("po-3", "10.00"))
	before := e.snapshot(ws)
	r := e.do("POST", "/v1/payouts/batch", key, body).wantCode(t, 40000)
	if r.env.Message != "payouts[1]: Insufficient available balance" {
		t.Fatalf("message %q", r.env.Message)
	}
	if after := e.snapshot(ws); after != before {
		t.Fatalf("a refused batch changed %q into %q", before, after)
	}
	e.do("POST", "/v1/payouts/info", key, map[string]any{"payout_id": "po-1"}).wantCode(t, 40400)
	e.do("POST", "/v1/payouts/batch/info", key, map[string]any{"batch_id": "b-aon"}).wantCode(t, 40400)
	e.wantEvents(ws)

	// A refused batch left no record: the same one is judged afresh.
	e.fund(ws, "20.00")
	r = e.do("POST", "/v1/payouts/batch", key, body).wantCode(t, 0)
	if r.header.Get("Idempotent-Replayed") != "" {
		t.Fatal("marked as replayed")
	}
	b := r.batch(t)
	wantResults(t, b, "0:po-1", "0:po-2", "0:po-3")
	if !b.AllOrNothing || b.AcceptedAmount.String() != "120.00" {
		t.Fatalf("batch %+v", b)
	}
	e.wantBalanceOf(ws, "0.00")
	e.wantEvents(ws, submitted("po-1", "po-2", "po-3")...)

	// Any refusal counts, with its own code: a conflict is 40900, naming
	// the item.
	e.fund(ws, "100.00")
	r = e.do("POST", "/v1/payouts/batch", key, batchBody("b-aon-2", true, payoutBody("po-4", "1.00"), payoutBody("po-1", "49.00"))).wantCode(t, 40900)
	if !strings.HasPrefix(r.env.Message, "payouts[1]: ") || !strings.Contains(r.env.Message, "po-1") {
		t.Fatalf("message %q", r.env.Message)
	}
	// A replayed item is accepted.
	b = e.do("POST", "/v1/payouts/batch", key, batchBody("b-aon-2", true, payoutBody("po-4", "1.00"), payoutBody("po-1", "50.00"))).wantCode(t, 0).batch(t)
	wantResults(t, b, "0:po-4", "0:po-1")
	if b.AcceptedAmount.String() != "1.00" {
		t.Fatalf("accepted_amount %s", b.AcceptedAmount)
	}
	e.wantBalanceOf(ws, "99.00")
}

// The same batch_id again: the stored batch for the same body, 40900 for
// any other.
func TestBatchReplay(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	ws, key := e.workspace()
	e.fund(ws, "100.00")
	e.do("POST", "/v1/payouts", key, payoutBody("b-1", "1.00")).wantCode(t, 0) // a payout named as the batch: another namespace
	items := []map[string]any{payoutBody("po-1", "10.00"), payoutBody("po-2", "20.00")}
	first := e.do("POST", "/v1/payouts/batch", key, batchBody("b-1", false, items...)).wantCode(t, 0)
	e.do("POST", "/v1/payouts", key, payoutBody("po-drain", "69.00")).wantCode(t, 0)
	events := e.events(ws)

	same := []map[string]any{payoutBody("po-1", "10"), payoutBody("po-2", "20.0")}
	same[1]["asset"], same[1]["network"] = "usdt", "Tron"
	r := e.do("POST", "/v1/payouts/batch", key, batchBody("b-1", false, same...)).wantCode(t, 0) // no balance needed
	if r.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.env.Data, first.env.Data) {
		t.Fatalf("replay %q %s\nwant %s", r.header.Get("Idempotent-Replayed"), r.env.Data, first.env.Data)
	}
	changed := payoutBody("po-2", "20.00")
	changed["payer_id"] = "someone-else"
	for name, body := range map[string]map[string]any{
		"another amount":         batchBody("b-1", false, items[0], payoutBody("po-2", "21.00")),
		"another payer":          batchBody("b-1", false, items[0], changed),
		"another order":          batchBody("b-1", false, items[1], items[0]),
		"fewer items":            batchBody("b-1", false, items[0]),
		"one more item":          batchBody("b-1", false, items[0], items[1], payoutBody("po-3", "1.00")),
		"another all_or_nothing": batchBody("b-1", true, items...),
	} {
		r := e.do("POST", "/v1/payouts/batch", key, body)
		if r.status != 409 || r.env.Code != 40900 || !strings.Contains(r.env.Message, "b-1") {
			t.Fatalf("%s: %d %s", name, r.status, r.body)
		}
	}
	// Fields are judged before uniqueness.
	e.do("POST", "/v1/payouts/batch", key, batchBody("b-1", false, items[0], payoutBody("po-2", "0"))).wantCode(t, 40000).wantField(t, "payouts[1].amount")
	if got := e.events(ws); !slices.Equal(got, events) {
		t.Fatalf("events %q, want %q", got, events)
	}
	e.wantBalanceOf(ws, "0.00")
}

// POST /v1/payouts/batch/info: any key of the workspace, its batches only.
func TestBatchInfoAndScopes(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	ws, key := e.workspace()
	ws2, key2 := e.workspace()
	e.fund(ws, "100.00")
	e.fund(ws2, "100.00")
	readOnly := e.key(ws, payoutkit.CreateAPIKeyRequest{Scopes: []payoutkit.Scope{}})
	ordersOnly := e.key(ws, payoutkit.CreateAPIKeyRequest{Scopes: []payoutkit.Scope{payoutkit.ScopeOrdersWrite}})
	body := batchBody("b-1", false, payoutBody("po-1", "10.00"))

	// Key, then scope, then body: a bad body says nothing before them.
	for _, bad := range []any{body, `{"batch_id":`, `{"batch_id":"b-1","payouts":[1]}`} {
		e.do("POST", "/v1/payouts/batch", "", bad).wantCode(t, 40100)
		e.do("POST", "/v1/payouts/batch", "sk_AAAAAAAA_"+strings.Repeat("A", 32), bad).wantCode(t, 40100)
		e.do("POST", "/v1/payouts/batch", readOnly, bad).wantCode(t, 40300).wantMessage(t, "payouts:write")
		e.do("POST", "/v1/payouts/batch", ordersOnly, bad).wantCode(t, 40300)
	}
	e.wantBalanceOf(ws, "100.00")

	created := e.do("POST", "/v1/payouts/batch", key, body).wantCode(t, 0)
	for _, k := range []string{key, readOnly, ordersOnly} {
		r := e.do("POST", "/v1/payouts/batch/info", k, map[string]any{"batch_id": "b-1"}).wantCode(t, 0)
		if !bytes.Equal(r.env.Data, created.env.Data) {
			t.Fatalf("info %s\nwant %s", r.env.Data, created.env.Data)
		}
	}
	e.do("POST", "/v1/payouts/batch/info", "", map[string]any{"batch_id": "b-1"}).wantCode(t, 40100)
	// Another workspace's batch is unknown, and its batch_id is its own.
	e.do("POST", "/v1/payouts/batch/info", key2, map[string]any{"batch_id": "b-1"}).wantCode(t, 40400)
	e.do("POST", "/v1/payouts/batch/info", key, map[string]any{"batch_id": "b-none"}).wantCode(t, 40400)
	e.do("POST", "/v1/payouts/batch", key2, body).wantCode(t, 0)
	e.wantBalanceOf(ws2, "90.00")
	for b, field := range map[string]string{`{}`: "batch_id", `{"batch_id":1}`: "batch_id", `{"batch_id":"bad id!"}`: "batch_id", `[]`: ""} {
		r := e.do("POST", "/v1/payouts/batch/info", key, b).wantCode(t, 40000)
		if field != "" {
			r.wantMessage(t, field)
		}
	}
	e.wantBalanceOf(ws, "90.00")
}

// The batch paths are paths of their own, never a payout named batch.
func TestBatchRoutes(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	ws, key := e.workspace()
	e.fund(ws, "10.00")
	for _, m := range []string{"GET", "PUT", "DELETE", "PATCH", "HEAD"} {
		for _, p := range []string{"/v1/payouts/batch", "/v1/payouts/batch/info"} {
			r := e.do(m, p, key, nil)
			if r.status != 405 || r.header.Get("Allow") != "POST" {
				t.Fatalf("%s %s: %d Allow %q", m, p, r.status, r.header.Get("Allow"))
			}
		}
	}
	for _, p := range []string{"/v1/payouts/batch/", "/v1/payouts/batch/b-1", "/v1/payouts/batch/info/", "/v1/payouts/Batch", "/v1/payouts/%62atch"} {
		e.do("POST", p, key, batchBody("b-1", false, payoutBody("po-1", "1.00"))).wantCode(t, 40400)
	}
	// A payout named batch lives beside the batch endpoints.
	e.do("POST", "/v1/payouts/info", key, map[string]any{"payout_id": "batch"}).wantCode(t, 40400)
	e.do("POST", "/v1/payouts", key, payoutBody("batch", "1.00")).wantCode(t, 0)
	e.do("POST", "/v1/payouts/info", key, map[string]any{"payout_id": "batch"}).wantCode(t, 0)
	e.do("POST", "/v1/payouts/batch/info", key, map[string]any{"batch_id": "batch"}).wantCode(t, 40400)
	e.wantBalanceOf(ws, "9.00")
}

// Concurrent identical batches make one batch; every answer shows it.
func TestBatchConcurrentIdentical(t *testing.T) {
	e := newEnv(t, httpserver.Options{})
	ws, key := e.workspace()
	e.fund(ws, "100.00")
	body := mustJSON(t, batchBody("b-race", false, payoutBody("po-1", "10.00"), payoutBody("po-2", "20.00"), payoutBody("po-3", "80.00")))
	type answer struct {
		status   int
		replayed string
		data     string
	}
	answers := make([]answer, 8)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range answers {
		wg.Go(func() {
			<-start
			req, _ := http.NewRequest("POST", e.srv.URL+"/v1/payouts/batch", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := e.http.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			var env struct {
				Code int             `json:"code"`
				Data json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(raw, &env); err != nil || env.Code != 0 {
				t.Errorf("answer %d %s (%v)", resp.StatusCode, raw, err)
			}
			answers[i] = answer{resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), string(env.Data)}
		})
	}
	close(start)
	wg.Wait()
	fresh := 0
	for _, a := range answers {
		if a.replayed == "" {
			fresh++
		}
		if a.status != 200 || a.data != answers[0].data {
			t.Fatalf("answers differ: %+v\n%+v", a, answers[0])
		}
	}
	if fresh != 1 {
		t.Fatalf("%d answers created the batch, want 1", fresh)
	}
	var b payoutkit.PayoutBatch
	if err := json.Unmarshal([]byte(answers[0].data), &b); err != nil {
		t.Fatal(err)
	}
	wantResults(t, b, "0:po-1", "0:po-2", "40000:po-3")
	e.wantBalanceOf(ws, "70.00")
	e.wantEvents(ws, submitted("po-1", "po-2")...)
}

// The typed client over the real server.
func TestClientBatch(t *testing.T) {
	e := newEnv(t, httpserver.Options{Sandbox: true})
	ws, key := e.workspace()
	e.fund(ws, "30.00")
	c := e.client(key)
	ctx := context.Background()
	req := payoutkit.CreatePayoutBatchRequest{BatchID: "b-c", Payouts: []payoutkit.CreatePayoutRequest{
		{PayoutID: "po-1", Amount: "25", Asset: "USDT", Network: "TRON", Address: tronAddr, PayerID: "p"},
		{PayoutID: "po-2", Amount: "10", Asset: "USDT", Network: "TRON", Address: tronAddr, PayerID: "p"},
		{PayoutID: "po-3", Amount: "5", Asset: "USDT", Network: "TRON", Address: tronAddr, PayerID: "p"},
	}}
	b, replayed, err := c.CreatePayoutBatch(ctx, req)
	if err != nil || replayed {
		t.Fatalf("create: %v %v", replayed, err)
	}
	wantResults(t, b, "0:po-1", "40000:po-2", "0:po-3")
	if b.BatchID != "b-c" || b.AcceptedAmount != 30_00 || b.Results[1].Message != "Insufficient available balance" ||
		b.Results[0].Payout.Amount != 25_00 || b.Results[0].Payout.Status != payoutkit.PayoutSubmitted {
		t.Fatalf("batch %+v", b)
	}
	again, replayed, err := c.CreatePayoutBatch(ctx, req)
	if err != nil || !replayed || again.Accepted != 2 {
		t.Fatalf("replay: %+v %v %v", again, replayed, err)
	}
	info, err := c.PayoutBatch(ctx, "b-c")
	if err != nil || info.Accepted != 2 || *info.Results[2].Payout != *b.Results[2].Payout {
		t.Fatalf("info: %+v %v", info, err)
	}
	if _, err := c.PayoutBatch(ctx, "b-none"); !errors.Is(err, payoutkit.ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	req.BatchID, req.AllOrNothing = "b-aon", true
	req.Payouts = req.Payouts[1:2]
	_, _, err = c.CreatePayoutBatch(ctx, req)
	var perr *payoutkit.Error
	if !errors.As(err, &perr) || perr.Code != payoutkit.CodeInvalidInput || perr.Message != "payouts[0]: Insufficient available balance" {
		t.Fatalf("all or nothing: %v", err)
	}
	req.Payouts = append(req.Payouts, payoutkit.CreatePayoutRequest{PayoutID: "bad id!", Amount: "x"})
	_, _, err = c.CreatePayoutBatch(ctx, req)
	if !errors.As(err, &perr) || !errors.Is(err, payoutkit.ErrInvalidInput) || !slices.ContainsFunc(perr.Fields, func(f payoutkit.FieldError) bool {
		return f.Field == "payouts[1].payout_id"
	}) || !slices.ContainsFunc(perr.Fields, func(f payoutkit.FieldError) bool { return f.Field == "payouts[1].amount" }) {
		t.Fatalf("fields: %v", err)
	}
	e.audit(ws)
}
