package bitcoin

import (
	"bytes"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
)

// scripts of each address type paid, and the wallet's (P2WPKH).
var (
	p2pkh  = mustScript("1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2")
	p2sh   = mustScript("3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy")
	p2wpkh = mustScript("bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq")
	p2tr   = mustScript("bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297")
	wallet = mustScript("bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4")
)

func mustScript(addr string) []byte {
	a, err := btcutil.DecodeAddress(addr, &chaincfg.MainNetParams)
	if err != nil {
		panic(err)
	}
	s, err := txscript.PayToAddrScript(a)
	if err != nil {
		panic(err)
	}
	return s
}

func utxo(i uint32, value, confs int64) Utxo {
	return Utxo{OutPoint: wire.OutPoint{Hash: chainhash.Hash{byte(i)}, Index: i}, Value: value, PkScript: wallet, Confirmations: confs}
}

func params(fee int64, payments ...int64) SelectParams {
	p := SelectParams{ChangeScript: wallet, FeeRate: fee, DustLimit: 546}
	scripts := [][]byte{p2pkh, p2sh, p2wpkh, p2tr}
	for i, v := range payments {
		p.Payments = append(p.Payments, wire.NewTxOut(v, scripts[i%len(scripts)]))
	}
	return p
}

func TestOutputSizes(t *testing.T) {
	for _, c := range []struct {
		script []byte
		size   int64
	}{{p2pkh, 34}, {p2sh, 32}, {p2wpkh, 31}, {p2tr, 43}} {
		if got := OutputSize(c.script); got != c.size {
			t.Errorf("OutputSize(%x) = %d, want %d", c.script, got, c.size)
		}
	}
	// One P2WPKH input, a P2WPKH payment and change: 141 vB, as wallets
	// count it (10.5 + 68 + 2×31, rounded up).
	if got := VSize(TxWeight(1, P2WPKHInputWeight, [][]byte{p2wpkh, wallet})); got != 141 {
		t.Fatalf("vsize %d", got)
	}
}

func sum(s Selection) (in int64) {
	for _, u := range s.Inputs {
		in += u.Value
	}
	return in
}

func TestSelectCoins(t *testing.T) {
	t.Run("largest confirmed first, with change", func(t *testing.T) {
		utxos := []Utxo{utxo(1, 10_000, 3), utxo(2, 500_000, 0), utxo(3, 300_000, 1), utxo(4, 200_000, 6)}
		p := params(10, 100_000, 150_000)
		s, err := SelectCoins(utxos, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Inputs) != 1 || s.Inputs[0].Value != 300_000 {
			t.Fatalf("inputs %+v", s.Inputs)
		}
		want := VSize(TxWeight(1, P2WPKHInputWeight, [][]byte{p2pkh, p2sh, wallet})) * 10
		if s.Fee != want || s.Change != 300_000-250_000-want || sum(s)-250_000-s.Change != s.Fee {
			t.Fatalf("%+v, want fee %d", s, want)
		}
	})
	t.Run("unconfirmed only when allowed and needed", func(t *testing.T) {
		utxos := []Utxo{utxo(1, 100_000, 1), utxo(2, 900_000, 0)}
		p := params(5, 150_000)
		if _, err := SelectCoins(utxos, p); !errors.Is(err, ErrInsufficientFunds) {
			t.Fatalf("err %v", err)
		}
		p.AllowUnconfirmed = true
		s, err := SelectCoins(utxos, p)
		if err != nil || len(s.Inputs) != 2 || s.Inputs[0].Confirmations != 1 {
			t.Fatalf("%+v %v", s, err)
		}
		s, err = SelectCoins(utxos, params(5, 50_000))
		if err != nil || len(s.Inputs) != 1 || s.Inputs[0].Value != 100_000 {
			t.Fatalf("%+v %v", s, err)
		}
	})
	t.Run("dust change goes to the fee", func(t *testing.T) {
		p := params(2, 100_000)
		noChange := VSize(TxWeight(1, P2WPKHInputWeight, [][]byte{p2pkh})) * 2
		s, err := SelectCoins([]Utxo{utxo(1, 100_000+noChange+500, 1)}, p)
		if err != nil || s.Change != 0 || s.Fee != noChange+500 {
			t.Fatalf("%+v %v", s, err)
		}
		// Enough for change at the dust limit: change is made.
		withChange := VSize(TxWeight(1, P2WPKHInputWeight, [][]byte{p2pkh, wallet})) * 2
		s, err = SelectCoins([]Utxo{utxo(1, 100_000+withChange+546, 1)}, p)
		if err != nil || s.Change != 546 || s.Fee != withChange {
			t.Fatalf("%+v %v", s, err)
		}
	})
	t.Run("a payment below the dust limit", func(t *testing.T) {
		_, err := SelectCoins([]Utxo{utxo(1, 1_000_000, 1)}, params(1, 10_000, 545))
		var de *DustError
		if !errors.As(err, &de) || de.Index != 1 || !errors.Is(err, ErrDust) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("uneconomical outputs are left", func(t *testing.T) {
		// At 50 sat/vB an input costs 68×50 = 3,400 satoshis.
		utxos := []Utxo{utxo(1, 3_400, 10), utxo(2, 3_401, 10), utxo(3, 20_000, 10)}
		_, err := SelectCoins(utxos, params(50, 17_000))
		if !errors.Is(err, ErrInsufficientFunds) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("the weight limit", func(t *testing.T) {
		var utxos []Utxo
		for i := range 100 {
			utxos = append(utxos, utxo(uint32(i), 10_000, 1))
		}
		p := params(1, 500_000)
		p.MaxWeight = TxWeight(40, P2WPKHInputWeight, [][]byte{p2pkh, wallet})
		if _, err := SelectCoins(utxos, p); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("err %v", err)
		}
		p.MaxWeight = MaxStandardWeight
		s, err := SelectCoins(utxos, p)
		if err != nil || len(s.Inputs) != 51 || s.Weight > MaxStandardWeight {
			t.Fatalf("%d inputs, %v", len(s.Inputs), err)
		}
	})
	t.Run("deterministic", func(t *testing.T) {
		utxos := []Utxo{utxo(3, 50_000, 1), utxo(1, 50_000, 1), utxo(2, 50_000, 1)}
		s, err := SelectCoins(utxos, params(1, 60_000))
		if err != nil || len(s.Inputs) != 2 || !bytes.Equal(s.Inputs[0].OutPoint.Hash[:1], []byte{1}) || !bytes.Equal(s.Inputs[1].OutPoint.Hash[:1], []byte{2}) {
			t.Fatalf("%+v %v", s.Inputs, err)
		}
	})
}

// TestSelectCoinsInvariants checks the fee covers the weight at the rate,
// the books balance and no output is dust, over many random wallets.
func TestSelectCoinsInvariants(t *testing.T) {
	for seed := range int64(500) {
		var utxos []Utxo
		for i := range 1 + seed%40 {
			utxos = append(utxos, utxo(uint32(i), 1_000+(seed*7919+i*104729)%2_000_000, (seed+i)%3))
		}
		var pays []int64
		for i := range 1 + seed%25 {
			pays = append(pays, 546+(seed*31+i*977)%300_000)
		}
		p := params(1+seed%60, pays...)
		p.AllowUnconfirmed = seed%2 == 0
		s, err := SelectCoins(utxos, p)
		if err != nil {
			if !errors.Is(err, ErrInsufficientFunds) {
				t.Fatalf("seed %d: %v", seed, err)
			}
			continue
		}
		var pay int64
		for _, v := range pays {
			pay += v
		}
		if sum(s) != pay+s.Change+s.Fee || s.Fee < VSize(s.Weight)*p.FeeRate || (s.Change != 0 && s.Change < p.DustLimit) {
			t.Fatalf("seed %d: %+v", seed, s)
		}
		for _, u := range s.Inputs {
			if u.Confirmations == 0 && !p.AllowUnconfirmed {
				t.Fatalf("seed %d: spent an unconfirmed output", seed)
			}
		}
	}
}
