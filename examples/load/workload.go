package main

import (
	"context"
	"fmt"
	"time"
)

// payoutAddress is a valid TRON address (the contract's example).
const payoutAddress = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"

// runWorkload drives one workload against t and samples the server while it
// runs.
func runWorkload(ctx context.Context, o options, t *target, name string, settle func(*result)) (result, error) {
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
				if w.ID != "" {
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

	res := measure(t.pid(), t.databasePIDs(), func() result { return drive(ctx, o, t.url, next) }, settle)
	res.Name = name
	return res, nil
}
