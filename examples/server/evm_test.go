package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
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

// eachServerDB runs f on a new SQLite database, then on a new PostgreSQL
// one (pgtest: skipped without PAYOUTKIT_TEST_POSTGRES, before f starts
// anything).
func eachServerDB(t *testing.T, f func(t *testing.T, db string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, filepath.Join(t.TempDir(), "payoutkit.db")) })
	t.Run("postgres", func(t *testing.T) { f(t, pgtest.Postgres(t)) })
}

// serveFunded starts serve on db with args (the rails' flags), points the
// workspace its first start makes at a webhook receiver that checks each
// delivery's signature, and funds it with usd through a sandbox order. It
// returns the server, the workspace's API key and the receiver.
func serveFunded(t *testing.T, db, usd string, args ...string) (*server, string, *hookReceiver) {
	t.Helper()
	hooks := newHookReceiver(t)
	s := startServer(t, append([]string{"-db", db, "-delivery-lease", "2s", "-credentials-file", filepath.Join(t.TempDir(), "creds.json")}, args...)...)
	first := decodeObject(t, s.stdout.String())
	secret, key := first["webhook_secret"].(string), first["api_key"].(string)
	hooks.secret.Store(&secret)
	mustCommand(t, "webhook", "set", "-db", db, "-workspace", first["workspace_id"].(string), "-url", hooks.URL)
	fund(t, s.url, key, "o1", usd)
	return s, key, hooks
}

// wantETHPaid checks that the completed ETH payout p's txid is a
// successful transaction on the node sending wei to `to`, and that `to`
// holds wei.
func (r *evmRig) wantETHPaid(t *testing.T, p map[string]any, to common.Address, wei *big.Int) {
	t.Helper()
	ctx := context.Background()
	txid, _ := p["txid"].(string)
	if p["status"] != "completed" || !strings.HasPrefix(txid, "0x") || p["network_fee"] == nil {
		t.Fatalf("payout %v", p)
	}
	hash := common.HexToHash(txid)
	receipt, err := r.node.Receipt(hash, time.Minute)
	if err != nil || receipt.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("payout %v: receipt %+v, %v", p, receipt, err)
	}
	tx, _, err := r.node.Client.TransactionByHash(ctx, hash)
	if err != nil || tx.To() == nil || *tx.To() != to || tx.Value().Cmp(wei) != 0 {
		t.Fatalf("payout %v: transaction %+v, %v; want %s wei to %s", p, tx, err, wei, to)
	}
	if got, err := r.node.Client.BalanceAt(ctx, to, nil); err != nil || got.Cmp(wei) != 0 {
		t.Fatalf("%s holds %s wei (%v), want %s", to, got, err, wei)
	}
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
	eachServerDB(t, func(t *testing.T, db string) {
		rig := newEVMRig(t)
		s, key, hooks := serveFunded(t, db, "100.00", "-processor", "evm", "-evm-config", rig.config)
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
		rig.wantETHPaid(t, eth, alice, new(big.Int).Div(evmtest.Ether(1), big.NewInt(100)))
		if got := rig.node.TokenBalance(t, rig.token, bob); got.Cmp(big.NewInt(12_340_000)) != 0 {
			t.Fatalf("bob holds %s, want 12340000", got)
		}
		for _, id := range []string{"eth-1", "usdt-1"} {
			evmtest.Wait(t, time.Minute, "webhook payout.completed "+id, func() bool { return hooks.delivered(id, "payout.completed") })
		}
		hooks.wantNoBad(t)
	})
}

// A server killed (SIGKILL) after a payout's transaction is stored and
// before it is sent, or after it is sent and before the hand-off is
// recorded, pays it exactly once after a restart.
func TestEVMPayoutSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the program in child processes")
	}
	for _, point := range []string{"signed", "sent"} {
		t.Run(point, func(t *testing.T) {
			rig := newEVMRig(t)
			db := filepath.Join(t.TempDir(), "payoutkit.db")
			key := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "crash"))["api_key"].(string)
			args := []string{"-db", db, "-processor", "evm", "-evm-config", rig.config, "-delivery-lease", "2s"}
			srv := startProcEnv(t, []string{"PAYOUTKIT_TEST_EVM_CRASH_AT=" + point}, args...)
			fund(t, srv.url, key, "o1", "100.00")
			bob := newAddress(t)
			if _, env := call(t, "POST", srv.url+"/v1/payouts", key, `{"payout_id":"p1","amount":"12.34","asset":"USDT","network":"ETH","address":"`+bob.Hex()+`","payer_id":"c"}`); code(env) != 0 {
				t.Fatalf("payout: %v", env)
			}
			srv.crashed(t)

			srv = startProc(t, args...)
			p := settledPayout(t, srv.url, key, "p1")
			if p["status"] != "completed" {
				t.Fatalf("payout %v\n%s", p, srv.stderr.String())
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
