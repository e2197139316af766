package main

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/txscript"

	"github.com/payoutkit/payoutkit/processor/bitcoin/btcdtest"
)

// bitcoinRig is a btcd --regtest whose mined coins fund a hot wallet, a
// miner mining a block every 300 ms, and the -bitcoin-config file that
// points the server at them.
type bitcoinRig struct {
	node   *btcdtest.Node
	config string
}

func newBitcoinRig(t *testing.T) *bitcoinRig {
	t.Helper()
	priv, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	hot, err := btcutil.NewAddressWitnessPubKeyHash(btcutil.Hash160(priv.PubKey().SerializeCompressed()), &chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	node := btcdtest.Start(t, hot.EncodeAddress())
	node.Generate(t, btcdtest.ActivationHeight+1)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
				node.Client.Generate(1)
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hot-wallet.key"), []byte(hex.EncodeToString(priv.Serialize())), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "bitcoin.json")
	body := fmt.Sprintf(`{"network": "regtest", "rpc_host": %q, "rpc_user": %q, "rpc_pass": %q,
		"key_file": "hot-wallet.key", "start_height": 300, "batch_window": "1s", "confirmations": 1,
		"poll_interval": "100ms", "rates": {"BTC": "50000"}, "explorer_tx_url": "https://mempool.invalid/tx/{txid}"}`,
		node.Host, btcdtest.User, btcdtest.Pass)
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return &bitcoinRig{node: node, config: config}
}

// payees returns a regtest address of each type paid: P2PKH, P2SH
// (P2SH-P2WPKH), P2WPKH and P2TR.
func btcPayees(t *testing.T) []btcutil.Address {
	t.Helper()
	net := &chaincfg.RegressionNetParams
	key := func() *btcec.PublicKey {
		k, err := btcec.NewPrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		return k.PubKey()
	}
	p2pkh, _ := btcutil.NewAddressPubKeyHash(btcutil.Hash160(key().SerializeCompressed()), net)
	nested, _ := btcutil.NewAddressWitnessPubKeyHash(btcutil.Hash160(key().SerializeCompressed()), net)
	redeem, _ := txscript.PayToAddrScript(nested)
	p2sh, _ := btcutil.NewAddressScriptHash(redeem, net)
	p2wpkh, _ := btcutil.NewAddressWitnessPubKeyHash(btcutil.Hash160(key().SerializeCompressed()), net)
	p2tr, _ := btcutil.NewAddressTaproot(schnorr.SerializePubKey(txscript.ComputeTaprootKeyNoScript(key())), net)
	return []btcutil.Address{p2pkh, p2sh, p2wpkh, p2tr}
}

// received returns the outputs paying addr in the node's blocks after the
// rig's funding, in satoshis.
func (r *bitcoinRig) received(t *testing.T, addr btcutil.Address) []int64 {
	t.Helper()
	script, _ := txscript.PayToAddrScript(addr)
	tip, err := r.node.Client.GetBlockCount()
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for h := int64(btcdtest.ActivationHeight + 1); h <= tip; h++ {
		hash, err := r.node.Client.GetBlockHash(h)
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.node.Client.GetBlock(hash)
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range b.Transactions {
			for _, o := range tx.TxOut {
				if bytes.Equal(o.PkScript, script) {
					got = append(got, o.Value)
				}
			}
		}
	}
	return got
}

// TestBitcoinProcessorPaysThroughTheServer pays payouts to every address
// type through the server's API with -processor bitcoin, on SQLite and
// PostgreSQL: each completes with its txid, amount and fee share, its
// webhook arrives, and each address receives exactly its amount, once.
func TestBitcoinProcessorPaysThroughTheServer(t *testing.T) {
	eachServerDB(t, func(t *testing.T, db string) {
		rig := newBitcoinRig(t)
		s, key, hooks := serveFunded(t, db, "10000.00", "-processor", "bitcoin", "-bitcoin-config", rig.config)
		addrs := append(btcPayees(t), btcPayees(t)...)
		for i, a := range addrs {
			body := fmt.Sprintf(`{"payout_id":"btc-%d","amount":"%d.50","asset":"BTC","network":"BTC","address":%q,"payer_id":"c"}`, i, 100+i, a.EncodeAddress())
			if _, env := call(t, "POST", s.url+"/v1/payouts", key, body); code(env) != 0 {
				t.Fatalf("payout: %v", env)
			}
		}
		txids := map[string]bool{}
		for i, a := range addrs {
			id := fmt.Sprintf("btc-%d", i)
			p := settledPayout(t, s.url, key, id)
			// (100+i).50 USD at 50,000 USD/BTC, in satoshis.
			sats := int64((100+i)*100+50) * 1_000_000 / 50_000
			want := fmt.Sprintf("%d.%08d", sats/100_000_000, sats%100_000_000)
			want = strings.TrimRight(strings.TrimRight(want, "0"), ".")
			if p["status"] != "completed" || p["asset_amount"] != want || p["network_fee"] == nil || len(p["txid"].(string)) != 64 {
				t.Fatalf("payout %s: %v, want %s BTC", id, p, want)
			}
			txids[p["txid"].(string)] = true
			if got := rig.received(t, a); len(got) != 1 || got[0] != sats {
				t.Fatalf("%s received %v, want [%d]", a, got, sats)
			}
			btcWait(t, "webhook payout.completed "+id, func() bool { return hooks.delivered(id, "payout.completed") })
		}
		if len(txids) > 3 {
			t.Errorf("%d payouts in %d transactions", len(addrs), len(txids))
		}
		hooks.wantNoBad(t)
	})
}

// A server killed (SIGKILL) after a batch's transaction is stored and
// before it is broadcast, or just after, pays each payout exactly once
// after a restart.
func TestBitcoinPayoutSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the program in child processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, point := range []string{"signed", "sent"} {
		t.Run(point, func(t *testing.T) {
			rig := newBitcoinRig(t)
			dir := t.TempDir()
			db := filepath.Join(dir, "payoutkit.db")
			key := decodeObject(t, mustCommand(t, "workspace", "create", "-db", db, "-name", "crash"))["api_key"].(string)
			serve := func(crashAt string) (*exec.Cmd, *syncBuffer, string) {
				cmd := exec.Command(exe, "serve", "-addr", "127.0.0.1:0", "-db", db, "-processor", "bitcoin", "-bitcoin-config", rig.config, "-delivery-lease", "2s", "-log-format", "text")
				cmd.Env = append(os.Environ(), "PAYOUTKIT_TEST_MAIN=1", "PAYOUTKIT_TEST_BITCOIN_CRASH_AT="+crashAt)
				var stderr syncBuffer
				cmd.Stdout, cmd.Stderr = io.Discard, &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				var addr string
				btcWait(t, "the server listening", func() bool {
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
			call(t, "POST", url+"/v1/orders", key, `{"order_id":"o1","amount":"1000.00"}`)
			call(t, "POST", url+"/v1/sandbox/orders/pay", key, `{"order_id":"o1"}`)
			addrs := btcPayees(t)
			for i, a := range addrs {
				body := fmt.Sprintf(`{"payout_id":"p%d","amount":"50.00","asset":"BTC","network":"BTC","address":%q,"payer_id":"c"}`, i, a.EncodeAddress())
				if _, env := call(t, "POST", url+"/v1/payouts", key, body); code(env) != 0 {
					t.Fatalf("payout: %v", env)
				}
			}
			if err := cmd.Wait(); err == nil || !strings.Contains(stderr.String(), "killing the server on purpose") {
				t.Fatalf("the server did not die at %s: %v\n%s", point, err, stderr.String())
			}

			cmd, stderr, url = serve("")
			var once sync.Once
			stopServer := func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
			defer stopServer()
			for i, a := range addrs {
				p := settledPayout(t, url, key, fmt.Sprintf("p%d", i))
				if p["status"] != "completed" {
					t.Fatalf("payout %v\n%s", p, stderr.String())
				}
				if got := rig.received(t, a); len(got) != 1 || got[0] != 100_000 { // 50 USD at 50,000
					t.Fatalf("%s received %v, want exactly [100000]", a, got)
				}
			}
		})
	}
}

func btcWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	btcdtest.Wait(t, time.Minute, what, cond)
}
