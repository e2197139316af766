package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary serve the baseline, as the tool's own
// binary does when it starts the baseline process.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == baselineCommand {
		if err := serveBaseline(context.Background(), os.Stdout); err != nil {
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// TestShortRun runs every workload briefly against a server the tool builds
// and starts, and holds the tool to its own checks: the money adds up and
// every event arrived signed.
func TestShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the server")
	}
	o, err := parseOptions([]string{
		"-workload", "payouts,payouts-spread,payouts-controlled,balance,mixed", "-workspaces", "3",
		"-clients", "4", "-duration", "2s", "-requests", "150", "-idle", "200ms", "-drain-wait", "30s",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := execute(t.Context(), o, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	rep.print(&out)
	t.Log("\n" + out.String())

	if !rep.MoneyOK || !rep.EventsOK {
		t.Fatal("the money or event check failed")
	}
	if rep.Baseline == nil || rep.Baseline.OK == 0 {
		t.Fatal("the baseline answered nothing")
	}
	if len(rep.Workloads) != 5 {
		t.Fatalf("ran %d workloads, want 5", len(rep.Workloads))
	}
	for _, w := range rep.Workloads {
		if w.OK == 0 || w.Errors > 0 || w.Requests > 150 {
			t.Errorf("%s: %d requests, %d ok, %d errors (first: %s); want 1-150 requests, all ok", w.Name, w.Requests, w.OK, w.Errors, w.FirstError)
		}
		if w.ServerRSSMiB <= 0 {
			t.Errorf("%s: no server memory measured", w.Name)
		}
	}
	payouts := 0
	for _, m := range rep.Money {
		payouts += m.Payouts
	}
	if rep.Events.Expected != payouts+len(rep.Money) { // one order.paid per workspace
		t.Errorf("expected %d events, want %d payouts + %d orders", rep.Events.Expected, payouts, len(rep.Money))
	}
	if rep.Server == nil || rep.Server.PeakRSSMiB <= 0 || rep.Server.DatabaseBytes <= 0 {
		t.Errorf("server usage not measured: %+v", rep.Server)
	}
}

// TestBatchRun sends a few batches to the workspace with webhooks and to
// the one without, and holds the tool to its checks and its figures per
// payout: every accepted item debited and found, every item's webhook
// arrived (and none from the workspace without a URL), each batch's
// delivery measured.
func TestBatchRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the server")
	}
	o, err := parseOptions([]string{
		"-workload", "payouts-batch,payouts-batch-nowebhook", "-batch-size", "50", "-batch-clients", "2",
		"-clients", "4", "-duration", "2s", "-requests", "6", "-idle", "0", "-drain-wait", "30s",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := execute(t.Context(), o, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	rep.print(&out)
	t.Log("\n" + out.String())

	if !rep.MoneyOK || !rep.EventsOK {
		t.Fatal("the money or event check failed")
	}
	if len(rep.Workloads) != 2 || len(rep.Money) != 2 {
		t.Fatalf("%d workloads and %d workspaces, want 2 of each", len(rep.Workloads), len(rep.Money))
	}
	for i, w := range rep.Workloads {
		b := w.Batch
		switch {
		case b == nil:
			t.Fatalf("%s: no batch figures", w.Name)
		case w.Requests != 6 || w.OK != 6 || w.Errors > 0:
			t.Errorf("%s: %d batches, %d ok, %d errors (first: %s); want 6, all ok (none cut off)", w.Name, w.Requests, w.OK, w.Errors, w.FirstError)
		case b.Size != 50 || b.Clients != 2 || b.Payouts != 300 || b.Accepted != 300:
			t.Errorf("%s: %+v, want 300 payouts accepted in batches of 50 from 2 clients", w.Name, b)
		case b.PayoutRate <= 0 || b.ServerCPUPerOp <= 0:
			t.Errorf("%s: figures per payout missing: %+v", w.Name, b)
		case rep.Baseline.ServerCPUPerOp > 0 && b.CPUPerOpXBaseline <= 0: // six bare requests may take no clock tick
			t.Errorf("%s: no multiple of the bare handler's CPU: %+v", w.Name, b)
		}
		if m := rep.Money[i]; m.Payouts != 300 {
			t.Errorf("workspace %d: %d payouts accepted, want 300", i, m.Payouts)
		}
	}
	if d := rep.Workloads[0].Delivery; d == nil || d.Delivered != 300 || d.Batches != 6 || d.BatchesDelivered != 6 || d.BatchMax <= 0 {
		t.Errorf("payouts-batch: delivery %+v, want 300 webhooks in 6 batches, each batch's measured", d)
	}
	if d := rep.Workloads[1].Delivery; d != nil && d.Expected != 0 {
		t.Errorf("payouts-batch-nowebhook: %d webhooks expected, want none", d.Expected)
	}
	// The batches' 300 payouts and one order's, from the workspace with a
	// URL only.
	if e := rep.Events; e.Expected != 301 || e.Deliveries != 301 {
		t.Errorf("%d events expected, %d delivered; want 301 each (none from the workspace without a URL)", e.Expected, e.Deliveries)
	}
}

// TestPrefill stores payouts before the server starts; their events are
// kept unsent (the workspace had no URL yet), so the run's checks see only
// its own payouts and events.
func TestPrefill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the server")
	}
	o, err := parseOptions([]string{"-prefill", "300", "-workload", "payouts", "-clients", "4", "-duration", "1s",
		"-requests", "50", "-idle", "0", "-baseline=false", "-drain-wait", "30s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := execute(t.Context(), o, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.MoneyOK || !rep.EventsOK {
		t.Fatalf("checks failed: %+v %+v", rep.Money, rep.Events)
	}
	// The run's payouts: those answered, and those whose answer the load's
	// end cut off, which the money check sent again; plus the funding
	// order's event.
	if e, payouts := rep.Events, rep.Money[0].Payouts; e.Deliveries != e.Expected || e.Expected != payouts+1 {
		t.Errorf("%d deliveries, %d expected, %d payouts: the prefilled payouts' events must stay unsent", e.Deliveries, e.Expected, payouts)
	}
	if rep.Server.Payouts != 300+rep.Workloads[0].OK {
		t.Errorf("the report counts %d payouts in the database; want 300 prefilled and the run's %d", rep.Server.Payouts, rep.Workloads[0].OK)
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the error; "" for none
	}{
		{nil, ""},
		{[]string{"-url", "http://127.0.0.1:8080", "-key", "sk_x"}, ""},
		{[]string{"-url", "http://localhost:8080", "-key", "sk_x"}, ""},
		{[]string{"-url", "http://10.0.0.5:8080", "-key", "sk_x"}, "only loopback"},
		{[]string{"-url", "http://example.com", "-key", "sk_x"}, "only loopback"},
		{[]string{"-url", "http://127.0.0.1:8080"}, "needs -key"},
		{[]string{"-url", "http://127.0.0.1:8080", "-key", "sk_x", "-workload", "payouts-spread"}, "needs a server"},
		{[]string{"-workload", "nope"}, "unknown workload"},
		{[]string{"-clients", "0"}, "-clients"},
		{[]string{"-duration", "2h"}, "-duration"},
		{[]string{"-amount", "1.001"}, "-amount"},
		{[]string{"-pid", "12"}, "-pid goes with -url"},
		{[]string{"-prefill", "-1"}, "-prefill"},
		{[]string{"-url", "http://127.0.0.1:8080", "-key", "sk_x", "-prefill", "10"}, "-prefill needs"},
		{[]string{"-workload", "payouts-batch", "-batch-size", "1000", "-batch-clients", "1"}, ""},
		{[]string{"-batch-size", "1001"}, "-batch-size"},
		{[]string{"-batch-size", "0"}, "-batch-size"},
		{[]string{"-batch-clients", "0"}, "-batch-clients"},
		{[]string{"-url", "http://127.0.0.1:8080", "-key", "sk_x", "-workload", "payouts-batch"}, ""},
		{[]string{"-url", "http://127.0.0.1:8080", "-key", "sk_x", "-workload", "payouts-batch-nowebhook"}, "needs a server"},
	} {
		_, err := parseOptions(tc.args, io.Discard)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want one with %q", tc.args, err, tc.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	if p := percentile(d, 0.5); p != 50 {
		t.Errorf("p50 = %d, want 50", p)
	}
	if p := percentile(d, 0.99); p != 99 {
		t.Errorf("p99 = %d, want 99", p)
	}
	if p := percentile(d[:1], 0.99); p != 1 {
		t.Errorf("p99 of one = %d, want 1", p)
	}
}
