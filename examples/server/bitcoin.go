package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/processor/bitcoin"
)

// processorBitcoin is -processor bitcoin.
const processorBitcoin = "bitcoin"

// loadBitcoinConfig reads -bitcoin-config and the hot wallet's key it
// names (relative files are beside the configuration file), before serve
// creates anything.
func loadBitcoinConfig(path string) (bitcoin.Config, error) {
	c, err := bitcoin.ReadConfigFile(path)
	if err != nil {
		return bitcoin.Config{}, fmt.Errorf("-bitcoin-config: %w", err)
	}
	if c.Rates == nil {
		return bitcoin.Config{}, fmt.Errorf("-bitcoin-config: rates must give BTC's USD price (a live price feed is plugged in through bitcoin.Config.Rates)")
	}
	return c, nil
}

// bitcoinCrashAt, when set (tests), ends the process abruptly at the named
// point of the processor's batching ("signed": stored but not broadcast;
// "sent": broadcast), as a power cut would.
var bitcoinCrashAt = os.Getenv("PAYOUTKIT_TEST_BITCOIN_CRASH_AT")

// openBitcoin opens the Bitcoin processor over the server's database (its
// own tables beside the store's, migrated here), dialling the node of c,
// and registers its counters with m. close releases its database handle.
func openBitcoin(ctx context.Context, dsn string, c bitcoin.Config, log *slog.Logger, m *metrics) (p *bitcoin.Processor, close func(), err error) {
	db, err := bitcoin.OpenDSN(dsn)
	if err != nil {
		return nil, nil, err
	}
	c.Logger = log
	if bitcoinCrashAt != "" {
		c.Checkpoint = func(point string) {
			if point == bitcoinCrashAt {
				log.Warn("killing the server on purpose (PAYOUTKIT_TEST_BITCOIN_CRASH_AT)", "point", point)
				if self, err := os.FindProcess(os.Getpid()); err == nil {
					self.Signal(os.Kill) // SIGKILL: no deferred function runs
				}
				select {}
			}
		}
	}
	p, err = bitcoin.New(ctx, db, nil, c)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	if m != nil {
		m.reg.MustRegister(bitcoinCollector{p})
	}
	return p, func() { db.Close() }, nil
}

// bitcoinAddresses is the engine's address validator for the BTC network
// when the rail pays on another network than mainnet (whose addresses the
// engine's own validator alone accepts); nil on mainnet.
func bitcoinAddresses(c bitcoin.Config) map[string]func(string) error {
	if c.Net == nil || c.Net == &chaincfg.MainNetParams {
		return nil
	}
	return map[string]func(string) error{"BTC": bitcoin.AddressValidator(c.Net)}
}

// bitcoinCollector exports the processor's counters.
type bitcoinCollector struct{ p *bitcoin.Processor }

var bitcoinDescs = map[string]*prometheus.Desc{
	"queued":     prometheus.NewDesc("payoutkit_bitcoin_queued_total", "Bitcoin payouts taken and queued for a batch.", nil, nil),
	"batches":    prometheus.NewDesc("payoutkit_bitcoin_batches_total", "Bitcoin batches signed and stored.", nil, nil),
	"bumps":      prometheus.NewDesc("payoutkit_bitcoin_bumps_total", "Bitcoin transactions replaced with a higher fee.", nil, nil),
	"completed":  prometheus.NewDesc("payoutkit_bitcoin_completed_total", "Bitcoin payouts completed.", nil, nil),
	"failed":     prometheus.NewDesc("payoutkit_bitcoin_failed_total", "Bitcoin payouts refused (another network, dust).", nil, nil),
	"waiting":    prometheus.NewDesc("payoutkit_bitcoin_waiting_for_funds_total", "Bitcoin batches cut short or put off because the hot wallet could not pay them.", nil, nil),
	"conflicted": prometheus.NewDesc("payoutkit_bitcoin_conflicted_total", "Bitcoin batches whose inputs were spent elsewhere, their payouts queued again.", nil, nil),
	"broadcasts": prometheus.NewDesc("payoutkit_bitcoin_broadcasts_total", "Bitcoin transactions broadcast, first or again.", nil, nil),
	"leases":     prometheus.NewDesc("payoutkit_bitcoin_leases_total", "Times this instance took the hot wallet's lease.", nil, nil),
	"leader":     prometheus.NewDesc("payoutkit_bitcoin_lease_holder", "1 when this instance holds the hot wallet's lease and runs its loop, else 0.", nil, nil),
}

func (c bitcoinCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range bitcoinDescs {
		ch <- d
	}
}

func (c bitcoinCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.Stats()
	for k, v := range map[string]int64{"queued": s.Queued, "batches": s.Batches, "bumps": s.Bumps, "completed": s.Completed,
		"failed": s.Failed, "waiting": s.WaitingForFunds, "conflicted": s.Conflicted, "broadcasts": s.Broadcasts, "leases": s.Leases} {
		ch <- prometheus.MustNewConstMetric(bitcoinDescs[k], prometheus.CounterValue, float64(v))
	}
	leader := 0.0
	if s.Leader {
		leader = 1
	}
	ch <- prometheus.MustNewConstMetric(bitcoinDescs["leader"], prometheus.GaugeValue, leader)
}

// explorerLinker is a rail that links a txid on a network to a block
// explorer (the portal's Options.ExplorerURL).
type explorerLinker interface {
	ExplorerURL(network, txid string) string
}

// rails routes each payout to the rail of its network when several run
// (-processor evm,bitcoin): BTC payouts to the Bitcoin rail, every other
// to the EVM rail (which refuses a network it does not pay).
type rails struct {
	evm     payoutkit.Processor // nil: none
	bitcoin *bitcoin.Processor  // nil: none
	evmURL  func(network, txid string) string
}

// Submit implements payoutkit.Processor.
func (r rails) Submit(ctx context.Context, s payoutkit.Submission, settler payoutkit.Settler) error {
	if r.bitcoin != nil && (strings.EqualFold(s.Network, "BTC") || r.evm == nil) {
		return r.bitcoin.Submit(ctx, s, settler)
	}
	return r.evm.Submit(ctx, s, settler)
}

// ExplorerURL links a txid to the explorer of its network's rail.
func (r rails) ExplorerURL(network, txid string) string {
	if r.bitcoin != nil && strings.EqualFold(network, "BTC") {
		return r.bitcoin.ExplorerURL(txid)
	}
	if r.evmURL != nil {
		return r.evmURL(network, txid)
	}
	return ""
}

// parseProcessors splits -processor into its rails: sandbox alone, or evm
// and bitcoin, each at most once.
func parseProcessors(s string) (evmOn, bitcoinOn bool, err error) {
	if s == processorSandbox {
		return false, false, nil
	}
	for _, name := range strings.Split(s, ",") {
		switch {
		case name == processorEVM && !evmOn:
			evmOn = true
		case name == processorBitcoin && !bitcoinOn:
			bitcoinOn = true
		default:
			return false, false, usagef("-processor must be sandbox, evm, bitcoin, or evm,bitcoin")
		}
	}
	return evmOn, bitcoinOn, nil
}
