package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/payoutkit/payoutkit/processor/evm/evmtest"
	"github.com/payoutkit/payoutkit/storage/postgres/pgtest"
)

// evmRig is a geth --dev node with a funded hot wallet holding the test
// token, and the -evm-config file that points the server at them.
type evmRig struct {
	node   *evmtest.Node
	token  common.Address
	hot    common.Address // the hot wallet
	config string
}

func newEVMRig(t *testing.T) *evmRig {
	t.Helper()
	node := evmtest.Start(t)
	hot, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "hot-wallet.key")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(crypto.FromECDSA(hot))), 0o600); err != nil {
		t.Fatal(err)
	}
	hotAddr := crypto.PubkeyToAddress(hot.PublicKey)
	node.Fund(t, hotAddr, evmtest.Ether(10))
	token := node.DeployToken(t, 6, big.NewInt(1_000_000_000_000))
	node.TransferToken(t, token, hotAddr, big.NewInt(100_000_000_000))
	config := filepath.Join(dir, "evm.json")
	body := fmt.Sprintf(`{"key_file": %q, "poll_interval": "200ms", "rates": {"ETH": "3000"},
		"networks": [{"network": "ETH", "rpc_url": %q, "chain_id": %d, "confirmations": 2,
		"explorer_tx_url": "https://explorer.invalid/tx/{txid}",
		"tokens": [{"ticker": "USDT", "contract": %q, "decimals": 6}]}]}`, keyFile, node.URL, evmtest.ChainID, token.Hex())
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return &evmRig{node: node, token: token, hot: hotAddr, config: config}
}

func newAddress(t *testing.T) common.Address {
	t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return crypto.PubkeyToAddress(k.PublicKey)
}

// hookLog records the webhook events a workspace receives.
type hookLog struct {
	mu     sync.Mutex
	events []string // "<type> <payout_id>"
}

func (h *hookLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ev struct {
		Type string `json:"type"`
		Data struct {
			PayoutID string `json:"payout_id"`
		} `json:"data"`
	}
	if json.NewDecoder(r.Body).Decode(&ev) == nil {
		h.mu.Lock()
		h.events = append(h.events, ev.Type+" "+ev.Data.PayoutID)
		h.mu.Unlock()
	}
	io.WriteString(w, "success")
}

func (h *hookLog) has(s string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.events, s)
}

// settledPayout polls the payout until it leaves submitted.
func settledPayout(t *testing.T, url, key, id string) map[string]any {
	t.Helper()
	var data map[string]any
	evmtest.Wait(t, 2*time.Minute, "payout "+id+" settled", func() bool {
		_, env := call(t, "POST", url+"/v1/payouts/info", key, `{"payout_id":"`+id+`"}`)
		data, _ = env["data"].(map[string]any)
		return data["status"] != "submitted"
	})
	return data
}

func TestEVMProcessorPaysThroughTheServer(t *testing.T) {
	dsns := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "payoutkit.db") },
		"postgres": func(t *testing.T) string { return pgtest.Postgres(t) },
	}
	for name, dsn := range dsns {
		t.Run(name, func(t *testing.T) {
			db := dsn(t) // before geth: a skip starts nothing
			rig := newEVMRig(t)
			hooks := &hookLog{}
			receiver := httptest.NewServer(hooks)
			t.Cleanup(receiver.Close)
			s := startServer(t, "-db", db, "-processor", "evm", "-evm-config", rig.config, "-delivery-lease", "2s", "-credentials-file", filepath.Join(t.TempDir(), "creds.json"))
			first := decodeObject(t, s.stdout.String())
			ws, key := first["workspace_id"].(string), first["api_key"].(string)
			mustCommand(t, "webhook", "set", "-db", db, "-workspace", ws, "-url", receiver.URL)
			call(t, "POST", s.url+"/v1/orders", key, `{"order_id":"o1","amount":"100.00"}`)
			call(t, "POST", s.url+"/v1/sandbox/orders/pay", key, `{"order_id":"o1"}`)

			alice, bob := newAddress(t), newAddress(t)
			for _, body := range []string{
				`{"payout_id":"eth-1","amount":"30.00","asset":"ETH","network":"ETH","address":"` + alice.Hex() + `","payer_id":"c"}`,
				`{"payout_id":"usdt-1","amount":"12.34","asset":"USDT","network":"ETH","address":"` + bob.Hex() + `","payer_id":"c"}`,
			} {
				if _, env := call(t, "POST", s.url+"/v1/payouts", key, body); code(env) != 0 {
					t.Fatalf("payout: %v", env)
				}
			}
			eth := settledPayout(t, s.url, key, "eth-1")
			usdt := settledPayout(t, s.url, key, "usdt-1")
			for _, p := range []map[string]any{eth, usdt} {
				if p["status"] != "completed" || !strings.HasPrefix(p["txid"].(string), "0x") || p["network_fee"] == nil {
					t.Fatalf("payout %v", p)
				}
			}
			if eth["asset_amount"] != "0.01" || usdt["asset_amount"] != "12.34" {
				t.Fatalf("asset amounts %v, %v", eth["asset_amount"], usdt["asset_amount"])
			}
			if got, _ := rig.node.Client.BalanceAt(context.Background(), alice, nil); got.Cmp(new(big.Int).Div(evmtest.Ether(1), big.NewInt(100))) != 0 {
				t.Fatalf("alice holds %s wei, want 0.01 ETH", got)
			}
			if got := rig.node.TokenBalance(t, rig.token, bob); got.Cmp(big.NewInt(12_340_000)) != 0 {
				t.Fatalf("bob holds %s, want 12340000", got)
			}
			for _, want := range []string{"payout.completed eth-1", "payout.completed usdt-1"} {
				evmtest.Wait(t, time.Minute, "webhook "+want, func() bool { return hooks.has(want) })
			}
		})
	}
}

// A server killed (SIGKILL) after a payout's transaction is stored and
// before it is sent, or after it is sent and before the hand-off is
// recorded, pays it exactly once after a restart.
func TestEVMPayoutSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the program in child processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, point := range []string{"signed", "sent"} {
		t.Run(point, func(t *testing.T) {
			rig := newEVMRig(t)
			dir := t.TempDir()
			db := filepath.Join(dir, "payoutkit.db")
			key := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "crash"))["api_key"].(string)
			serve := func(crashAt string) (*exec.Cmd, *syncBuffer, string) {
				cmd := exec.Command(exe, "serve", "-addr", "127.0.0.1:0", "-db", db, "-processor", "evm", "-evm-config", rig.config, "-delivery-lease", "2s", "-log-format", "text")
				cmd.Env = append(os.Environ(), "PAYOUTKIT_TEST_MAIN=1", "PAYOUTKIT_TEST_EVM_CRASH_AT="+crashAt)
				var stderr syncBuffer
				cmd.Stdout, cmd.Stderr = io.Discard, &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				var addr string
				evmtest.Wait(t, time.Minute, "the server listening", func() bool {
					for _, line := range strings.Split(stderr.String(), "\n") {
						if strings.Contains(line, "msg=serving") {
							f := strings.Fields(line[strings.Index(line, "addr="):])
							addr = strings.TrimPrefix(f[0], "addr=")
							return true
						}
					}
					return false
				})
				return cmd, &stderr, "http://" + addr
			}

			cmd, stderr, url := serve(point)
			call(t, "POST", url+"/v1/orders", key, `{"order_id":"o1","amount":"100.00"}`)
			call(t, "POST", url+"/v1/sandbox/orders/pay", key, `{"order_id":"o1"}`)
			bob := newAddress(t)
			if _, env := call(t, "POST", url+"/v1/payouts", key, `{"payout_id":"p1","amount":"12.34","asset":"USDT","network":"ETH","address":"`+bob.Hex()+`","payer_id":"c"}`); code(env) != 0 {
				t.Fatalf("payout: %v", env)
			}
			if err := cmd.Wait(); err == nil || !strings.Contains(stderr.String(), "killing the server on purpose") {
				t.Fatalf("the server did not die at %s: %v\n%s", point, err, stderr.String())
			}

			cmd, stderr, url = serve("")
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			p := settledPayout(t, url, key, "p1")
			if p["status"] != "completed" {
				t.Fatalf("payout %v\n%s", p, stderr.String())
			}
			if n := rig.node.Transfers(t, rig.token, bob); n != 1 {
				t.Fatalf("%d transfers to the recipient, want exactly 1", n)
			}
			if got := rig.node.TokenBalance(t, rig.token, bob); got.Cmp(big.NewInt(12_340_000)) != 0 {
				t.Fatalf("bob holds %s, want 12340000", got)
			}
		})
	}
}

// -processor, -evm-config and -bitcoin-config are checked before anything
// is made.
func TestProcessorFlags(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "payoutkit.db")
	bad := filepath.Join(dir, "evm.json")
	if err := os.WriteFile(bad, []byte(`{"key_env": "PAYOUTKIT_TEST_NO_SUCH_KEY", "networks": [{"network": "ETH", "rpc_url": "http://127.0.0.1:1", "chain_id": 1}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-processor", "paypal"}, "-processor must be sandbox, evm, bitcoin, or evm,bitcoin"},
		{[]string{"-processor", "evm,evm"}, "-processor must be"},
		{[]string{"-processor", "bitcoin"}, "-processor bitcoin needs -bitcoin-config"},
		{[]string{"-bitcoin-config", bad}, "-bitcoin-config needs -processor bitcoin"},
		{[]string{"-processor", "evm,bitcoin", "-evm-config", bad}, "-processor bitcoin needs -bitcoin-config"},
		{[]string{"-processor", "bitcoin", "-bitcoin-config", bad}, "-bitcoin-config"},
		{[]string{"-processor", "evm"}, "-processor evm needs -evm-config"},
		{[]string{"-evm-config", bad}, "-evm-config needs -processor evm"},
		{[]string{"-processor", "evm", "-evm-config", filepath.Join(dir, "missing.json")}, "-evm-config"},
		{[]string{"-processor", "evm", "-evm-config", bad}, "PAYOUTKIT_TEST_NO_SUCH_KEY holds no key"},
	} {
		_, err := command(t, append([]string{"serve", "-addr", "127.0.0.1:0", "-db", db}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %q", c.args, err, c.want)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("a refused start made the database: %v", err)
	}
}
