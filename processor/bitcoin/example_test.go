package bitcoin_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/wire"
	"github.com/shopspring/decimal"

	"github.com/payoutkit/payoutkit"
	"github.com/payoutkit/payoutkit/processor/bitcoin"
)

// A transaction's fee is shared by its payouts by the size of each one's
// output: the P2TR payout (43 bytes) pays more than the P2WPKH one (31).
func ExampleSplitFee() {
	shares, err := bitcoin.SplitFee(1_000, []int64{31, 43})
	if err != nil {
		panic(err)
	}
	fmt.Println(shares)
	// Output: [419 581]
}

// A payout's USD amount becomes satoshis at a quote, rounded down; a quote
// older than the maximum age is refused.
func ExampleSatoshis() {
	now := time.Now()
	q := bitcoin.Quote{Price: decimal.RequireFromString("65000.00"), At: now.Add(-time.Minute), Source: "example feed"}
	amount, _ := payoutkit.ParseAmount("100.00")
	sats, err := bitcoin.Satoshis(amount, q, now, 5*time.Minute)
	if err != nil {
		panic(err)
	}
	fmt.Println(sats)
	_, err = bitcoin.Satoshis(amount, q, now, 30*time.Second)
	fmt.Println(errors.Is(err, bitcoin.ErrStaleQuote))
	// Output:
	// 153846
	// true
}

// Coin selection takes the largest confirmed outputs first and makes
// change only when it is worth an output.
func ExampleSelectCoins() {
	wallet := make([]byte, 22) // the wallet's P2WPKH script
	wallet[1] = 20
	payee := append([]byte(nil), wallet...)
	payee[2] = 1
	utxos := []bitcoin.Utxo{
		{OutPoint: wire.OutPoint{Index: 0}, Value: 40_000, PkScript: wallet, Confirmations: 3},
		{OutPoint: wire.OutPoint{Index: 1}, Value: 90_000, PkScript: wallet, Confirmations: 1},
		{OutPoint: wire.OutPoint{Index: 2}, Value: 500_000, PkScript: wallet, Confirmations: 0},
	}
	sel, err := bitcoin.SelectCoins(utxos, bitcoin.SelectParams{
		Payments:     []*wire.TxOut{wire.NewTxOut(100_000, payee)},
		ChangeScript: wallet, FeeRate: 2, DustLimit: 546,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(sel.Inputs), sel.Inputs[0].Value, sel.Inputs[1].Value, sel.Change, sel.Fee)
	// Output: 2 90000 40000 29582 418
}
