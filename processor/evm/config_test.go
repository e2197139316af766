package evm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const sampleConfig = `{
  "key_env": "PAYOUTKIT_EVM_KEY",
  "replace_after": "90s",
  "rates": {"ETH": "3000.00", "bnb": "600"},
  "networks": [{
    "network": "ETH", "rpc_url": "http://127.0.0.1:8545", "chain_id": 1337,
    "confirmations": 2, "explorer_tx_url": "https://etherscan.io/tx/{txid}", "max_fee_gwei": "150.5",
    "tokens": [{"ticker": "USDT", "contract": "0xdAC17F958D2ee523a2206206994597C13D831ec7", "decimals": 6}]
  }]
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
	n := c.Networks[0]
	if n.MaxFeePerGas.String() != "150500000000" || n.Tokens[0].Contract.Hex() != "0xdAC17F958D2ee523a2206206994597C13D831ec7" || n.native() != "ETH" {
		t.Fatalf("network %+v", n)
	}
	if got := c.ExplorerURL("eth", "0xabc"); got != "https://etherscan.io/tx/0xabc" {
		t.Fatalf("explorer %q", got)
	}
	if c.ExplorerURL("BSC", "0xabc") != "" {
		t.Fatal("an explorer for an unconfigured network")
	}
	if c.ReplaceAfter.String() != "1m30s" || c.Rates.(FixedRates)["BNB"].String() != "600" {
		t.Fatalf("config %+v", c)
	}

	for _, bad := range []struct{ body, want string }{
		{`{"networks": []}`, "key_file"},
		{`{"key_env": "K", "key_file": "f", "networks": []}`, "key_file"},
		{`{"key_env": "K", "networks": []}`, "networks"},
		{`{"key_env": "K", "networks": [{"network": "ETH", "rpc_url": "x", "chain_id": 0}]}`, "chain_id"},
		{`{"key_env": "K", "networks": [{"network": "ETH", "rpc_url": "x", "chain_id": 1, "tokens": [{"ticker": "USDT", "contract": "nope", "decimals": 6}]}]}`, "contract"},
		{`{"key_env": "K", "networks": [{"network": "ETH", "rpc_url": "x", "chain_id": 1, "explorer_tx_url": "https://x/"}]}`, "{txid}"},
		{`{"key_env": "K", "replace_after": "soon", "networks": [{"network": "ETH", "rpc_url": "x", "chain_id": 1}]}`, "replace_after"},
		{`{"key_env": "K", "rates": {"ETH": "-1"}, "networks": [{"network": "ETH", "rpc_url": "x", "chain_id": 1}]}`, "rates"},
		{`{"key_env": "K", "surprise": 1, "networks": [{"network": "ETH", "rpc_url": "x", "chain_id": 1}]}`, "surprise"},
	} {
		if _, err := ParseConfig([]byte(bad.body)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err %v, want one naming %s", bad.body, err, bad.want)
		}
	}
}

func TestKeyNeverInErrorsOrLogs(t *testing.T) {
	const secret = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	k, err := NewLocalKey("0x" + secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{k.String(), k.GoString(), k.LogValue().String()} {
		if strings.Contains(s, secret[:16]) || !strings.Contains(s, k.Address().Hex()) {
			t.Fatalf("%q", s)
		}
	}
	almost := secret[:63] + "g" // one bad digit
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte(almost), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("EVM_TEST_KEY", almost)
	for _, err := range []error{
		func() error { _, err := NewLocalKey(almost); return err }(),
		func() error { _, err := LoadKeyFile(path); return err }(),
		func() error { _, err := KeyFromEnv("EVM_TEST_KEY"); return err }(),
	} {
		if err == nil || strings.Contains(err.Error(), secret[:16]) || strings.Contains(err.Error(), "'g'") {
			t.Fatalf("err %v", err)
		}
	}
	t.Setenv("EVM_TEST_KEY", secret)
	fc, err := ParseConfig([]byte(strings.Replace(sampleConfig, "PAYOUTKIT_EVM_KEY", "EVM_TEST_KEY", 1)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := fc.Config()
	if err != nil || c.Signer.Address() != k.Address() {
		t.Fatalf("signer %v, %v", c.Signer, err)
	}
}

// FuzzParseConfig: the parser never panics, and a configuration it accepts
// is accepted again, unchanged, once written back as JSON.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(sampleConfig))
	f.Add([]byte(`{"key_file": "k", "networks": [{"network": "BSC", "rpc_url": "u", "chain_id": 56}]}`))
	f.Add([]byte(`{"key_env": "K", "networks": [{"network": "POLYGON", "rpc_url": "u", "chain_id": 137, "max_fee_gwei": "1e3", "tokens": [{"ticker": "USDT", "contract": "0xc2132D05D31c914a87C6611C10748AEb04B58e8F", "decimals": 6, "gas_limit": 90000}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fc, err := ParseConfig(data)
		if err != nil {
			return
		}
		again, err := json.Marshal(fc)
		if err != nil {
			t.Fatal(err)
		}
		fc2, err := ParseConfig(again)
		if err != nil {
			t.Fatalf("written back, refused: %v\n%s", err, again)
		}
		if diff := cmp.Diff(fc, fc2); diff != "" {
			t.Fatalf("changed when written back:\n%s", diff)
		}
	})
}

func TestReadConfigFileFindsTheKeyBesideIt(t *testing.T) {
	dir := t.TempDir()
	key := "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	if err := os.WriteFile(filepath.Join(dir, "hot.key"), []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(sampleConfig, `"key_env": "PAYOUTKIT_EVM_KEY"`, `"key_file": "hot.key"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "evm.json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // elsewhere: the key is found beside the file all the same
	c, err := ReadConfigFile(filepath.Join(dir, "evm.json"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := NewLocalKey(key)
	if c.Signer.Address() != want.Address() {
		t.Fatalf("signer %v", c.Signer)
	}
}
