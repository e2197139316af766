package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// report is everything one run measured.
type report struct {
	Target    string       `json:"target"`
	Clients   int          `json:"clients"`
	Duration  string       `json:"duration_per_workload"`
	Baseline  *result      `json:"baseline,omitempty"`
	Workloads []result     `json:"workloads"`
	Server    *serverUsage `json:"server,omitempty"`
	MoneyOK   bool         `json:"money_ok"`
	Money     []moneyCheck `json:"money"`
	EventsOK  bool         `json:"events_ok"`
	Events    *eventCheck  `json:"events,omitempty"`
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "%s, %d clients, %s per workload\n\n", r.Target, r.Clients, r.Duration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\trequests\tok\trefused\terrors\trate/s\tx baseline\tp50\tp99\tmax\tserver cores\tserver RSS MiB\tload cores\tserver CPU/req\tdb CPU/req\tCPU x bare\t")
	rows := r.Workloads
	if r.Baseline != nil {
		rows = append([]result{*r.Baseline}, rows...)
	}
	for _, res := range rows {
		ratio := "-"
		if res.RatioToBaseline > 0 {
			ratio = fmt.Sprintf("%.2f", res.RatioToBaseline)
		}
		cores, rss := "-", "-"
		if res.ServerRSSMiB > 0 {
			cores, rss = fmt.Sprintf("%.2f", res.ServerCPU), fmt.Sprintf("%.0f", res.ServerRSSMiB)
		}
		perReq := func(us float64) string {
			if us <= 0 {
				return "-"
			}
			return fmt.Sprintf("%.1fµs", us)
		}
		times := "-"
		if res.CPUPerOpXBaseline > 0 {
			times = fmt.Sprintf("%.1f", res.CPUPerOpXBaseline)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t\n",
			res.Name, res.Requests, res.OK, res.Refused, res.Errors, res.Rate, ratio, res.P50, res.P99, res.Max, cores, rss, res.LoadCPU,
			perReq(res.ServerCPUPerOp), perReq(res.DatabaseCPUPerOp), times)
	}
	tw.Flush()
	for _, res := range rows {
		if res.FirstError != "" {
			fmt.Fprintf(w, "%s: first error: %s\n", res.Name, res.FirstError)
		}
	}

	printBatches(w, r.Workloads)

	var shown bool
	for _, res := range r.Workloads {
		d := res.Delivery
		if d == nil || d.Expected == 0 {
			continue
		}
		if !shown {
			fmt.Fprintln(w, "\nwebhooks (from the API's answer to the receiver's first delivery):")
			shown = true
		}
		fmt.Fprintf(w, "  %s: %d/%d delivered, lag p50 %s p99 %s max %s, last one %s after the load stopped\n",
			res.Name, d.Delivered, d.Expected, d.LagP50, d.LagP99, d.LagMax, d.DrainAfterLoad)
		if d.Batches > 0 {
			fmt.Fprintf(w, "    every webhook of a batch: %d/%d batches, p50 %s p99 %s max %s after the batch's answer\n",
				d.BatchesDelivered, d.Batches, d.BatchP50, d.BatchP99, d.BatchMax)
		}
	}
	if s := r.Server; s != nil {
		fmt.Fprintf(w, "\nserver: peak RSS %.0f MiB, %.0f MiB at the end; idle CPU %.2f%% of a core over %.0fs; %d log lines (%d bytes)\n",
			s.PeakRSSMiB, s.RSSMiB, s.IdleCPU, s.IdleSeconds, s.LogLines, s.LogBytes)
		if s.DatabaseBytes > 0 {
			fmt.Fprintf(w, "sqlite: %d bytes with its WAL, %d payouts stored, %d bytes per payout\n", s.DatabaseBytes, s.Payouts, s.BytesPerPay)
		}
	}
	fmt.Fprintln(w)
	okCount := 0
	for _, m := range r.Money {
		if m.Problem == "" {
			okCount++
			if len(r.Money) > 3 {
				continue // summarised below
			}
		}
		status := "ok"
		if m.Problem != "" {
			status = "FAILED: " + m.Problem
		}
		fmt.Fprintf(w, "money %s: funded %s, %d payouts accepted for %s, available %s (want %s), %d of %d sampled payouts found: %s\n",
			m.Workspace, m.Funded, m.Payouts, m.Accepted, m.Available, m.WantAvailable, m.SampledFound, m.SampledFound+m.SampledMissing, status)
	}
	if len(r.Money) > 3 {
		fmt.Fprintf(w, "money: %d of %d workspaces ok (available = funded - accepted payouts; sampled payouts found)\n", okCount, len(r.Money))
	}
	if e := r.Events; e != nil {
		status := "ok"
		if !r.EventsOK {
			status = "FAILED"
		}
		fmt.Fprintf(w, "events: %d expected, %d missing, %d deliveries of %d ids (%d duplicates), %d bad signatures: %s\n",
			e.Expected, e.Missing, e.Deliveries, e.UniqueIDs, e.Duplicates, e.BadSignatures, status)
	}
}

// printBatches reports the batch workloads per payout: a request there is a
// batch, so the table's figures per request are per batch.
func printBatches(w io.Writer, results []result) {
	var shown bool
	for _, res := range results {
		b := res.Batch
		if b == nil {
			continue
		}
		if !shown {
			fmt.Fprintln(w, "\nbatches (the table's requests are batches; here per payout):")
			shown = true
		}
		cpu := fmt.Sprintf("server %.1fµs", b.ServerCPUPerOp)
		if b.DatabaseCPUPerOp > 0 {
			cpu += fmt.Sprintf(" + db %.1fµs", b.DatabaseCPUPerOp)
		}
		if b.CPUPerOpXBaseline > 0 {
			cpu += fmt.Sprintf(" = %.2fx bare", b.CPUPerOpXBaseline)
		}
		fmt.Fprintf(w, "  %s: %d a batch, %d clients: %d batches, %d payouts (%d refused), %.0f payouts/s; CPU a payout: %s; a batch p50 %s p99 %s max %s\n",
			res.Name, b.Size, b.Clients, res.Requests, b.Payouts, b.Refused, b.PayoutRate, cpu, res.P50, res.P99, res.Max)
	}
}
