package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// payoutAddress is a valid TRON address (the contract's example).
const payoutAddress = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"

// runWorkload drives one workload against t and samples the server while it
// runs.
func runWorkload(ctx context.Context, o options, t *target, name string, settle func(*result)) (result, error) {
	if isBatch(name) {
		return runBatchWorkload(ctx, o, t, name, settle), nil
	}
	amount := formatCents(t.payoutCent)
	seq := make([]int, o.clients) // per client, so no shared counter
	payout := func(c int, w *workspace) request {
		seq[c]++
		id := fmt.Sprintf("ld-%s-%s-%d-%d", t.run, name, c, seq[c])
		body := fmt.Appendf(nil, `{"payout_id":%q,"amount":%q,"asset":"USDT","network":"TRON","address":%q,"payer_id":"payer-%d"}`,
			id, amount, payoutAddress, seq[c]%1000)
		return request{
			method: "POST", path: "/v1/payouts", key: w.Key, body: body,
			answered: func(code int, at time.Time) {
				if code == 50000 { // the outcome is unknown: send it again at the end
					w.unanswered(id, body)
				}
				if code != 0 {
					return
				}
				w.accept(id, t.payoutCent)
				if w.expectsEvents() {
					t.expectEvent(eventKey("payout.submitted", w.ID, id), at)
				}
			},
			unanswered: func() { w.unanswered(id, body) },
		}
	}
	balance := request{method: "GET", path: "/v1/balance", key: t.hot.Key}
	lastPayout := make([]string, o.clients)

	var next func(c int) request
	switch name {
	case "payouts":
		next = func(c int) request { return payout(c, t.hot) }
	case "payouts-spread":
		next = func(c int) request { return payout(c, t.spread[(c+seq[c])%len(t.spread)]) }
	case "payouts-controlled":
		next = func(c int) request { return payout(c, t.controlled) }
	case "balance":
		next = func(int) request { return balance }
	case "mixed":
		// Per ten requests: two payouts, one look-up of this client's last
		// payout, seven balance reads: a CRM that mostly reads.
		turn := make([]int, o.clients)
		next = func(c int) request {
			turn[c]++
			switch n := turn[c] % 10; {
			case n < 2:
				r := payout(c, t.hot)
				lastPayout[c] = fmt.Sprintf("ld-%s-%s-%d-%d", t.run, name, c, seq[c])
				return r
			case n == 2 && lastPayout[c] != "":
				return request{method: "POST", path: "/v1/payouts/info", key: t.hot.Key,
					body: fmt.Appendf(nil, `{"payout_id":%q}`, lastPayout[c])}
			default:
				return balance
			}
		}
	default:
		return result{}, fmt.Errorf("unknown workload %q", name)
	}

	res := measure(t.pid(), t.databasePIDs(), func() result { return drive(ctx, o.loop(), t.url, next) }, settle)
	res.Name = name
	return res, nil
}

// batchAnswer is what the load reads of a batch's answer: each item's code.
type batchAnswer struct {
	Results []struct {
		PayoutID string `json:"payout_id"`
		Code     int    `json:"code"`
	} `json:"results"`
}

// runBatchWorkload sends batches of o.batchSize payouts, each a fresh
// batch_id with fresh payout_ids, from o.batchClients clients to one hot
// workspace: t.hot, whose webhooks go to the receiver (payouts-batch), or
// t.quiet, which has no webhook URL (payouts-batch-nowebhook). Batches in
// flight when the time is up are answered, not cut off, and the server
// (and database) are left to settle before the CPU is read, so the figures
// per payout hold every payout's whole work.
func runBatchWorkload(ctx context.Context, o options, t *target, name string, settle func(*result)) result {
	w := t.hot
	if name == "payouts-batch-nowebhook" {
		w = t.quiet
	}
	amount := formatCents(t.payoutCent)
	var accepted, refused atomic.Int64
	seq := make([]int, o.batchClients) // per client, so no shared counter
	next := func(c int) request {
		seq[c]++
		batchID := fmt.Sprintf("ld-%s-%s-%d-%d", t.run, name, c, seq[c])
		ids := make([]string, o.batchSize)
		body := fmt.Appendf(make([]byte, 0, 160*o.batchSize), `{"batch_id":%q,"payouts":[`, batchID)
		for i := range ids {
			ids[i] = fmt.Sprintf("%s-%d", batchID, i)
			if i > 0 {
				body = append(body, ',')
			}
			body = fmt.Appendf(body, `{"payout_id":%q,"amount":%q,"asset":"USDT","network":"TRON","address":%q,"payer_id":"payer-%d"}`,
				ids[i], amount, payoutAddress, i)
		}
		body = append(body, `],"all_or_nothing":false}`...)
		ans := new(batchAnswer)
		return request{
			method: "POST", path: "/v1/payouts/batch", key: w.Key, body: body, data: ans,
			answered: func(code int, at time.Time) {
				if code == 50000 { // the outcome is unknown: send it again at the end
					w.unansweredBatch(batchID, body, ids)
				}
				if code != 0 {
					return
				}
				var keys []string
				for _, r := range ans.Results {
					if r.Code != 0 {
						refused.Add(1)
						continue
					}
					accepted.Add(1)
					w.accept(r.PayoutID, t.payoutCent)
					if w.expectsEvents() {
						k := eventKey("payout.submitted", w.ID, r.PayoutID)
						t.expectEvent(k, at)
						keys = append(keys, k)
					}
				}
				if len(keys) > 0 && t.recv != nil {
					t.recv.expectBatch(keys, at)
				}
			},
			unanswered: func() { w.unansweredBatch(batchID, body, ids) },
		}
	}

	l := loop{clients: o.batchClients, duration: o.duration, requests: o.requests, finish: true}
	dbPIDs := t.databasePIDs()
	res := measure(t.pid(), dbPIDs, func() result { return drive(ctx, l, t.url, next) }, func(r *result) {
		if settle != nil {
			settle(r)
		}
		if t.pid() != 0 {
			waitQuiet(ctx, append([]int{t.pid()}, dbPIDs...), o.drainWait)
		}
	})
	res.Name = name
	bf := &batchFigures{Size: o.batchSize, Clients: o.batchClients, Accepted: int(accepted.Load()), Refused: int(refused.Load())}
	bf.Payouts = bf.Accepted + bf.Refused
	if res.elapsed > 0 {
		bf.PayoutRate = float64(bf.Accepted) / res.elapsed.Seconds()
	}
	if bf.Payouts > 0 {
		bf.ServerCPUPerOp = perOp(res.serverUsed, bf.Payouts)
		if len(dbPIDs) > 0 {
			bf.DatabaseCPUPerOp = perOp(res.databaseUsed, bf.Payouts)
		}
	}
	res.Batch = bf
	return res
}
