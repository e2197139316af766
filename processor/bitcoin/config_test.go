package bitcoin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
)

const sampleConfig = `{
  "network": "regtest",
  "rpc_host": "127.0.0.1:18334", "rpc_user": "payoutkit", "rpc_pass": "hunter2",
  "key_env": "PAYOUTKIT_BTC_KEY",
  "start_height": 432,
  "fee_rate_floor": 2, "fee_rate_ceiling": 200,
  "batch_window": "10s", "max_batch_size": 50,
  "confirmations": 2, "dust_limit": 1000,
  "max_quote_age": "90s", "poll_interval": "2s", "lease": "20s", "rates": {"btc": "65000.50"},
  "explorer_tx_url": "https://mempool.space/tx/{txid}"
}`

func TestParseConfig(t *testing.T) {
	fc, err := ParseConfig([]byte(sampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	c, err := fc.settings()
	if err != nil {
		t.Fatal(err)
	}
	if c.Net != &chaincfg.RegressionNetParams || c.RPC.Host != "127.0.0.1:18334" || c.RPC.Pass != "hunter2" || c.StartHeight != 432 {
		t.Fatalf("config %+v", c)
	}
	if c.FeeRateFloor != 2 || c.FeeRateCeiling != 200 || c.BatchWindow != 10*time.Second || c.MaxBatchSize != 50 ||
		c.Confirmations != 2 || c.DustLimit != 1000 || c.MaxQuoteAge != 90*time.Second || c.MaxWeight != MaxStandardWeight ||
		c.ReplaceAfter != DefaultReplaceAfter || c.PollInterval != 2*time.Second || c.Lease != 20*time.Second || c.Rates.(FixedRates)["BTC"].String() != "65000.5" {
		t.Fatalf("config %+v", c)
	}
	if got := c.ExplorerURL("ab12"); got != "https://mempool.space/tx/ab12" {
		t.Fatalf("explorer %q", got)
	}
	if s := c.RPC.String() + c.RPC.GoString(); strings.Contains(s, "hunter2") {
		t.Fatalf("the RPC password shows: %s", s)
	}

	// The defaults.
	fc, err = ParseConfig([]byte(`{"network": "mainnet", "rpc_host": "h:8332", "rpc_cookie_file": "/c", "key_file": "k"}`))
	if err != nil {
		t.Fatal(err)
	}
	c, _ = fc.settings()
	if c.Net != &chaincfg.MainNetParams || c.FeeRateFloor != DefaultFeeRateFloor || c.FeeRateCeiling != DefaultFeeRateCeiling ||
		c.BatchWindow != DefaultBatchWindow || c.MaxBatchSize != DefaultMaxBatchSize || c.Confirmations != DefaultConfirmations ||
		c.DustLimit != DefaultDustLimit || c.MaxQuoteAge != DefaultMaxQuoteAge || c.Lease != DefaultLease || c.Rates != nil || c.ExplorerURL("x") != "" {
		t.Fatalf("defaults %+v", c)
	}

	const base = `"network": "regtest", "rpc_host": "h:1", "rpc_user": "u", "rpc_pass": "p", "key_env": "K"`
	for _, bad := range []struct{ body, want string }{
		{`{"rpc_host": "h:1", "rpc_user": "u", "rpc_pass": "p", "key_env": "K"}`, "network"},
		{`{"network": "testnet4", "rpc_host": "h:1", "rpc_user": "u", "rpc_pass": "p", "key_env": "K"}`, "network"},
		{`{"network": "regtest", "rpc_host": "h:1", "rpc_user": "u", "rpc_pass": "p"}`, "key_file"},
		{`{"network": "regtest", "rpc_host": "h:1", "rpc_user": "u", "rpc_pass": "p", "key_env": "K", "key_file": "f"}`, "key_file"},
		{`{"network": "regtest", "rpc_user": "u", "rpc_pass": "p", "key_env": "K"}`, "rpc_host"},
		{`{"network": "regtest", "rpc_host": "h:1", "rpc_user": "u", "key_env": "K"}`, "rpc_pass"},
		{`{"network": "regtest", "rpc_host": "h:1", "rpc_pass": "p", "key_env": "K"}`, "rpc_user"},
		{`{` + base + `, "rpc_cookie_file": "c"}`, "rpc_cookie_file"},
		{`{` + base + `, "rpc_cert_file": "c"}`, "rpc_tls"},
		{`{` + base + `, "batch_window": "soon"}`, "batch_window"},
		{`{` + base + `, "max_quote_age": "-1s"}`, "max_quote_age"},
		{`{` + base + `, "poll_interval": "0s"}`, "poll_interval"},
		{`{` + base + `, "poll_interval": "20s", "lease": "30s"}`, "lease"},
		{`{` + base + `, "fee_rate_floor": -1}`, "fee_rate_floor"},
		{`{` + base + `, "fee_rate_floor": 20, "fee_rate_ceiling": 10}`, "fee_rate_ceiling"},
		{`{` + base + `, "fee_rate_ceiling": 100000}`, "fee_rate_ceiling"},
		{`{` + base + `, "max_batch_size": 100000}`, "max_batch_size"},
		{`{` + base + `, "confirmations": -2}`, "confirmations"},
		{`{` + base + `, "dust_limit": -5}`, "dust_limit"},
		{`{` + base + `, "max_weight": 500000}`, "max_weight"},
		{`{` + base + `, "start_height": -1}`, "start_height"},
		{`{` + base + `, "rates": {"BTC": "0"}}`, "rates"},
		{`{` + base + `, "rates": {"ETH": "3000"}}`, "rates"},
		{`{` + base + `, "explorer_tx_url": "https://x/"}`, "{txid}"},
		{`{` + base + `, "surprise": 1}`, "surprise"},
		{`{` + base + `} {}`, "more than one"},
	} {
		if _, err := ParseConfig([]byte(bad.body)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err %v, want one naming %s", bad.body, err, bad.want)
		}
	}
}

func TestReadConfigFile(t *testing.T) {
	dir := t.TempDir()
	key := strings.Repeat("11", 32)
	if err := os.WriteFile(filepath.Join(dir, "hot.key"), []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "bitcoin.json")
	if err := os.WriteFile(path, []byte(`{"network": "regtest", "rpc_host": "h:1", "rpc_user": "u", "rpc_pass": "p", "key_file": "hot.key"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ReadConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := NewLocalKey(key, &chaincfg.RegressionNetParams)
	if c.Signer.Address().EncodeAddress() != want.Address().EncodeAddress() || !strings.HasPrefix(want.Address().EncodeAddress(), "bcrt1q") {
		t.Fatalf("signer %v, want %v", c.Signer, want)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(sampleConfig))
	f.Add([]byte(`{"network": "mainnet", "rpc_host": "h:8332", "rpc_cookie_file": "/c", "key_file": "k"}`))
	f.Add([]byte(`{"network": "simnet", "rpc_host": "h", "rpc_user": "u", "rpc_pass": "p", "key_env": "K", "fee_rate_floor": 10000, "max_weight": 800}`))
	f.Add([]byte(`{"network": "regtest", "rates": {"BTC": "1e-30"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fc, err := ParseConfig(data)
		if err != nil {
			return
		}
		// What parses is complete and within bounds.
		c, err := fc.settings()
		if err != nil {
			t.Fatalf("parsed, then: %v", err)
		}
		if c.Net == nil || c.RPC.Host == "" || c.FeeRateFloor < 1 || c.FeeRateCeiling < c.FeeRateFloor || c.FeeRateCeiling > MaxFeeRate ||
			c.MaxBatchSize < 1 || c.Confirmations < 1 || c.DustLimit < 1 || c.MaxWeight > MaxStandardWeight || c.MaxWeight < minWeight ||
			c.BatchWindow <= 0 || c.MaxQuoteAge <= 0 || c.ReplaceAfter <= 0 || c.PollInterval <= 0 || c.StartHeight < 0 {
			t.Fatalf("out of bounds: %+v", c)
		}
		if c.Rates != nil {
			for tk, v := range c.Rates.(FixedRates) {
				if tk != "BTC" || v.Sign() <= 0 {
					t.Fatalf("rate %s %s", tk, v)
				}
			}
		}
	})
}
