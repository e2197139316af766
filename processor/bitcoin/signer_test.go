package bitcoin

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
)

func TestKeyNeverInErrorsOrLogs(t *testing.T) {
	const secret = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	k, err := NewLocalKey("0x"+secret, &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("wallet", "key", k)
	for _, s := range []string{k.String(), k.GoString(), k.LogValue().String(), buf.String()} {
		if strings.Contains(s, secret[:16]) || !strings.Contains(s, k.Address().EncodeAddress()) {
			t.Fatalf("%q", s)
		}
	}
	if !strings.HasPrefix(k.Address().EncodeAddress(), "bc1q") {
		t.Fatalf("address %s", k.Address())
	}
	almost := secret[:63] + "g" // one bad digit
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte(almost), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BTC_TEST_KEY", almost)
	_, err1 := LoadKeyFile(path, &chaincfg.MainNetParams)
	_, err2 := KeyFromEnv("BTC_TEST_KEY", &chaincfg.MainNetParams)
	_, err3 := NewLocalKey(strings.Repeat("ff", 32), &chaincfg.MainNetParams) // above the group order
	for _, err := range []error{err1, err2, err3} {
		if err == nil || strings.Contains(err.Error(), almost[:16]) {
			t.Fatalf("error %v", err)
		}
	}
}

func TestLocalKeyWIF(t *testing.T) {
	hexKey, _ := NewLocalKey(strings.Repeat("22", 32), &chaincfg.RegressionNetParams)
	w, err := btcutil.NewWIF(hexKey.key, &chaincfg.RegressionNetParams, true)
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewLocalKey(w.String(), &chaincfg.RegressionNetParams)
	if err != nil || k.Address().EncodeAddress() != hexKey.Address().EncodeAddress() {
		t.Fatalf("%v %v", k, err)
	}
	if _, err := NewLocalKey(w.String(), &chaincfg.MainNetParams); err == nil {
		t.Fatal("a regtest WIF was taken for mainnet")
	}
}

// TestSignTxVerifies signs a transaction of two inputs and runs each
// input's script, as a node would.
func TestSignTxVerifies(t *testing.T) {
	k, _ := NewLocalKey(strings.Repeat("33", 32), &chaincfg.RegressionNetParams)
	tx := wire.NewMsgTx(2)
	prev := []*wire.TxOut{wire.NewTxOut(50_000, k.script), wire.NewTxOut(70_000, k.script)}
	tx.AddTxIn(wire.NewTxIn(&wire.OutPoint{Index: 0}, nil, nil))
	tx.AddTxIn(wire.NewTxIn(&wire.OutPoint{Index: 1}, nil, nil))
	tx.AddTxOut(wire.NewTxOut(100_000, k.script))
	if err := k.SignTx(context.Background(), tx, prev); err != nil {
		t.Fatal(err)
	}
	fetcher := txscript.NewMultiPrevOutFetcher(nil)
	for i, in := range tx.TxIn {
		fetcher.AddPrevOut(in.PreviousOutPoint, prev[i])
	}
	hashes := txscript.NewTxSigHashes(tx, fetcher)
	for i := range tx.TxIn {
		vm, err := txscript.NewEngine(prev[i].PkScript, tx, i, txscript.StandardVerifyFlags, nil, hashes, prev[i].Value, fetcher)
		if err != nil {
			t.Fatal(err)
		}
		if err := vm.Execute(); err != nil {
			t.Fatalf("input %d: %v", i, err)
		}
	}
	// The weight estimate is an upper bound of the signed transaction's.
	if w, est := int64(tx.SerializeSizeStripped()*3+tx.SerializeSize()), TxWeight(2, P2WPKHInputWeight, [][]byte{k.script}); w > est || est-w > 4 {
		t.Fatalf("weight %d, estimated %d", w, est)
	}
	other := []*wire.TxOut{prev[0], wire.NewTxOut(70_000, []byte{txscript.OP_TRUE})}
	if err := k.SignTx(context.Background(), tx, other); err == nil {
		t.Fatal("signed an input that is not the wallet's")
	}
}
