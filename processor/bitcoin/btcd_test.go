package bitcoin

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
	"github.com/uptrace/bun"

	"github.com/payoutkit/payoutkit/processor/bitcoin/btcdtest"
)

// payees returns an address of each type the coin list accepts (P2PKH,
// P2SH, P2WPKH, P2TR) on net, of fresh keys.
func payees(t testing.TB, net *chaincfg.Params) []btcutil.Address {
	t.Helper()
	key := func() *btcec.PublicKey {
		k, err := btcec.NewPrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		return k.PubKey()
	}
	p2pkh, err := btcutil.NewAddressPubKeyHash(btcutil.Hash160(key().SerializeCompressed()), net)
	if err != nil {
		t.Fatal(err)
	}
	p2wpkh, err := btcutil.NewAddressWitnessPubKeyHash(btcutil.Hash160(key().SerializeCompressed()), net)
	if err != nil {
		t.Fatal(err)
	}
	nested, err := btcutil.NewAddressWitnessPubKeyHash(btcutil.Hash160(key().SerializeCompressed()), net)
	if err != nil {
		t.Fatal(err)
	}
	redeem, _ := txscript.PayToAddrScript(nested)
	p2sh, err := btcutil.NewAddressScriptHash(redeem, net) // P2SH-P2WPKH
	if err != nil {
		t.Fatal(err)
	}
	p2tr, err := btcutil.NewAddressTaproot(schnorr.SerializePubKey(txscript.ComputeTaprootKeyNoScript(key())), net)
	if err != nil {
		t.Fatal(err)
	}
	return []btcutil.Address{p2pkh, p2sh, p2wpkh, p2tr}
}

// TestBtcdPayEveryAddressType funds the wallet by mining to its address on
// a real btcd, records its outputs from the node's blocks, builds and signs
// a transaction paying an address of each type with change, broadcasts it,
// mines it, and finds each output on chain and the change in the wallet.
func TestBtcdPayEveryAddressType(t *testing.T) {
	t.Parallel() // each test runs a btcd of its own
	eachDB(t, func(t *testing.T, db *bun.DB) { testBtcdPay(t, db) })
}

func testBtcdPay(t *testing.T, db *bun.DB) {
	ctx := context.Background()
	net := &chaincfg.RegressionNetParams
	priv, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, err := NewLocalKey(hex.EncodeToString(priv.Serialize()), net)
	if err != nil {
		t.Fatal(err)
	}
	node := btcdtest.Start(t, key.Address().EncodeAddress())
	node.Generate(t, btcdtest.ActivationHeight+1) // segwit and taproot active; coinbases up to 334 mature
	w, err := NewWallet(ctx, db, node.Client, key, net, 0)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := w.Sync(ctx); err != nil || h != btcdtest.ActivationHeight+1 {
		t.Fatalf("sync: %d %v", h, err)
	}
	utxos, _, err := w.Spendable(ctx)
	if err != nil || len(utxos) != btcdtest.ActivationHeight+1-99 {
		t.Fatalf("%d spendable outputs, want %d: %v", len(utxos), btcdtest.ActivationHeight+1-99, err)
	}

	// 60.5 BTC and a little: two 50-BTC coinbases, with change.
	amounts := []int64{20_0000_0000, 15_0000_0000, 5000_0000, 25_0000_1234}
	var payments []*wire.TxOut
	for i, a := range payees(t, net) {
		s, _ := txscript.PayToAddrScript(a)
		payments = append(payments, wire.NewTxOut(amounts[i], s))
	}
	tx, sel, err := w.BuildTx(ctx, payments, SelectParams{FeeRate: 3, DustLimit: DefaultDustLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(sel.Inputs) != 2 || sel.Change <= 0 || len(tx.TxOut) != 5 {
		t.Fatalf("selection %+v", sel)
	}
	weight := int64(tx.SerializeSizeStripped()*3 + tx.SerializeSize())
	if weight > sel.Weight || sel.Fee < VSize(weight)*3 {
		t.Fatalf("weight %d, estimated %d; fee %d", weight, sel.Weight, sel.Fee)
	}
	txid, err := node.Client.SendRawTransaction(tx, false)
	if err != nil {
		t.Fatalf("broadcast: %v", err)
	}
	if *txid != tx.TxHash() {
		t.Fatalf("the node's txid %s, ours %s", txid, tx.TxHash())
	}
	mined := node.Generate(t, 1)
	block, err := node.Client.GetBlock(mined[0])
	if err != nil {
		t.Fatal(err)
	}
	var onChain *wire.MsgTx
	for _, btx := range block.Transactions {
		if btx.TxHash() == *txid {
			onChain = btx
		}
	}
	if onChain == nil {
		t.Fatal("the transaction is not in the next block")
	}
	for i, p := range payments {
		n := 0
		for _, o := range onChain.TxOut {
			if string(o.PkScript) == string(p.PkScript) {
				n++
				if o.Value != p.Value {
					t.Errorf("payee %d received %d, want %d", i, o.Value, p.Value)
				}
			}
		}
		if n != 1 {
			t.Errorf("payee %d has %d outputs", i, n)
		}
	}

	// The wallet sees its inputs spent and its change.
	if _, err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	after, tip, err := w.Spendable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var change *Utxo
	for i, u := range after {
		for _, in := range sel.Inputs {
			if u.OutPoint == in.OutPoint {
				t.Fatalf("input %v is still unspent", in.OutPoint)
			}
		}
		if u.OutPoint.Hash == *txid {
			change = &after[i]
		}
	}
	if change == nil || change.Value != sel.Change || change.OutPoint.Index != 4 || change.Confirmations != 1 {
		t.Fatalf("change %+v at %d, want %d", change, tip, sel.Change)
	}
	var in int64
	for _, u := range sel.Inputs {
		in += u.Value
	}
	var out int64
	for _, o := range onChain.TxOut {
		out += o.Value
	}
	if in-out != sel.Fee {
		t.Fatalf("fee on chain %d, selected %d", in-out, sel.Fee)
	}
}

// TestBtcdFromConfigFile reads a configuration file naming a real btcd
// (with a password, then with a cookie file) and a key file, and has New
// dial the node and scan it.
func TestBtcdFromConfigFile(t *testing.T) {
	t.Parallel() // each test runs a btcd of its own
	priv, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, _ := NewLocalKey(hex.EncodeToString(priv.Serialize()), &chaincfg.RegressionNetParams)
	node := btcdtest.Start(t, key.Address().EncodeAddress())
	node.Generate(t, 120)
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("hot.key", hex.EncodeToString(priv.Serialize())+"\n")
	write("cookie", btcdtest.User+":"+btcdtest.Pass)
	for _, auth := range []string{
		`"rpc_user": "` + btcdtest.User + `", "rpc_pass": "` + btcdtest.Pass + `"`,
		`"rpc_cookie_file": "cookie"`,
	} {
		write("bitcoin.json", `{"network": "regtest", "rpc_host": "`+node.Host+`", `+auth+`, "key_file": "hot.key", "rates": {"BTC": "60000"}}`)
		cfg, err := ReadConfigFile(filepath.Join(dir, "bitcoin.json"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Logger = quiet
		p, err := New(context.Background(), sqliteDB(t), nil, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if h, err := p.Wallet().Sync(context.Background()); err != nil || h != 120 {
			t.Fatalf("%s: sync %d %v", auth, h, err)
		}
		if u, _, _ := p.Wallet().Spendable(context.Background()); len(u) != 21 {
			t.Fatalf("%s: %d spendable outputs, want 21", auth, len(u))
		}
	}
}
