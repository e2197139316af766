package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payoutkit/payoutkit/processor/evm"
)

// The -processor values.
const (
	processorSandbox = "sandbox"
	processorEVM     = "evm"
)

// loadEVMConfig reads -evm-config and the hot wallet's key it names
// (a relative key_file is beside the configuration file), before serve
// creates anything.
func loadEVMConfig(path string) (evm.Config, error) {
	c, err := evm.ReadConfigFile(path)
	if err != nil {
		return evm.Config{}, fmt.Errorf("-evm-config: %w", err)
	}
	return c, nil
}

// evmCrashAt, when set (tests), ends the process abruptly at the named
// point of the processor's Submit ("signed": stored but not sent; "sent":
// sent but the hand-off not recorded), as a power cut would.
var evmCrashAt = os.Getenv("PAYOUTKIT_TEST_EVM_CRASH_AT")

// openEVM opens the EVM processor over the server's database (its own
// tables beside the store's, migrated here) and registers its counters
// with m. close releases its database handle.
func openEVM(ctx context.Context, dsn string, c evm.Config, log *slog.Logger, m *metrics) (p *evm.Processor, close func(), err error) {
	db, err := evm.OpenDSN(dsn)
	if err != nil {
		return nil, nil, err
	}
	c.Logger = log
	if evmCrashAt != "" {
		c.Checkpoint = func(point string) {
			if point == evmCrashAt {
				log.Warn("killing the server on purpose (PAYOUTKIT_TEST_EVM_CRASH_AT)", "point", point)
				if self, err := os.FindProcess(os.Getpid()); err == nil {
					self.Signal(os.Kill) // SIGKILL: no deferred function runs
				}
				select {}
			}
		}
	}
	p, err = evm.New(ctx, db, c)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	if m != nil {
		m.reg.MustRegister(evmCollector{p})
	}
	return p, func() { db.Close() }, nil
}

// evmCollector exports the processor's counters.
type evmCollector struct{ p *evm.Processor }

var evmDescs = map[string]*prometheus.Desc{
	"signed":    prometheus.NewDesc("payoutkit_evm_signed_total", "EVM payouts signed and stored (first transactions).", nil, nil),
	"replaced":  prometheus.NewDesc("payoutkit_evm_replaced_total", "EVM transactions replaced with a higher fee.", nil, nil),
	"completed": prometheus.NewDesc("payoutkit_evm_completed_total", "EVM payouts completed from their receipts.", nil, nil),
	"failed":    prometheus.NewDesc("payoutkit_evm_failed_total", "EVM payouts failed from reverted receipts.", nil, nil),
	"waiting":   prometheus.NewDesc("payoutkit_evm_waiting_for_funds_total", "EVM hand-offs put off because the hot wallet could not cover them.", nil, nil),
}

func (c evmCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range evmDescs {
		ch <- d
	}
}

func (c evmCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.Stats()
	for k, v := range map[string]int64{"signed": s.Signed, "replaced": s.Replaced, "completed": s.Completed, "failed": s.Failed, "waiting": s.WaitingForFunds} {
		ch <- prometheus.MustNewConstMetric(evmDescs[k], prometheus.CounterValue, float64(v))
	}
}
