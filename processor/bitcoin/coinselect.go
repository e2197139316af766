package bitcoin

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/btcsuite/btcd/wire"
)

// Transaction sizes, in weight units (a byte outside the witness weighs 4,
// one inside it 1; a virtual byte, vB, is 4 weight units rounded up).
const (
	// MaxStandardWeight is the heaviest transaction nodes relay (Bitcoin
	// Core's and btcd's MAX_STANDARD_TX_WEIGHT).
	MaxStandardWeight = 400_000
	// P2WPKHInputWeight is an input spending a P2WPKH output: outpoint
	// (36), empty script (1) and sequence (4) outside the witness, and a
	// witness of two items: a signature of at most 72 bytes and a
	// compressed public key (1 + 1+72 + 1+33).
	P2WPKHInputWeight = 4*(36+1+4) + (1 + 1 + 72 + 1 + 33)
	// txOverheadWeight is version and lock time (8 bytes), and the segwit
	// marker and flag (2 witness bytes); the input and output counts come
	// on top.
	txOverheadWeight = 4*8 + 2
)

// OutputSize is the serialized size of an output paying pkScript, in
// bytes: its value (8), the script's length and the script.
func OutputSize(pkScript []byte) int64 {
	return 8 + int64(wire.VarIntSerializeSize(uint64(len(pkScript)))) + int64(len(pkScript))
}

// TxWeight is the weight of a segwit transaction with inputs inputs of
// inputWeight each and outputs of the given scripts.
func TxWeight(inputs int, inputWeight int64, outputScripts [][]byte) int64 {
	w := int64(txOverheadWeight) + 4*int64(wire.VarIntSerializeSize(uint64(inputs))+wire.VarIntSerializeSize(uint64(len(outputScripts))))
	w += int64(inputs) * inputWeight
	for _, s := range outputScripts {
		w += 4 * OutputSize(s)
	}
	return w
}

// VSize is weight in virtual bytes, rounded up.
func VSize(weight int64) int64 { return (weight + 3) / 4 }

// Utxo is an unspent output of the wallet.
type Utxo struct {
	OutPoint wire.OutPoint
	// Value is in satoshis.
	Value    int64
	PkScript []byte
	// Confirmations is how deep its transaction is: 0 unconfirmed, 1 in
	// the tip block.
	Confirmations int64
}

// SelectParams is what SelectCoins builds a transaction for.
type SelectParams struct {
	// Payments are the transaction's outputs to payees, each at least
	// DustLimit.
	Payments []*wire.TxOut
	// ChangeScript is the wallet's own script, for change.
	ChangeScript []byte
	// FeeRate is in sat/vB, at least 1.
	FeeRate int64
	// DustLimit is the smallest output, payment or change, in satoshis.
	DustLimit int64
	// MaxWeight is the heaviest transaction allowed: at most
	// MaxStandardWeight.
	MaxWeight int64
	// InputWeight is the weight of one input spending a wallet output.
	// Default P2WPKHInputWeight.
	InputWeight int64
	// AllowUnconfirmed lets unconfirmed outputs be spent once every
	// confirmed one is taken.
	AllowUnconfirmed bool
}

// Selection is SelectCoins' answer: the inputs, the change (0: no change
// output) and the fee, which is the inputs' value less the payments' and
// the change.
type Selection struct {
	Inputs []Utxo
	Change int64
	Fee    int64
	// Weight is the signed transaction's weight at most (signatures are 71
	// or 72 bytes).
	Weight int64
}

// Errors of SelectCoins.
var (
	// ErrInsufficientFunds is a wallet whose spendable outputs cannot pay
	// the payments and the fee.
	ErrInsufficientFunds = errors.New("bitcoin: the wallet's spendable outputs cannot pay the payments and the fee")
	// ErrTooLarge is a transaction that would need more inputs than the
	// weight limit allows.
	ErrTooLarge = errors.New("bitcoin: the transaction would exceed the weight limit")
	// ErrDust is a payment below the dust limit.
	ErrDust = errors.New("bitcoin: the payment is below the dust limit")
)

// DustError is a payment below the dust limit, by its index in Payments.
type DustError struct {
	Index     int
	Value     int64
	DustLimit int64
}

func (e *DustError) Error() string {
	return fmt.Sprintf("bitcoin: payment %d of %d satoshis is below the dust limit of %d", e.Index, e.Value, e.DustLimit)
}

// Unwrap makes a DustError match ErrDust.
func (e *DustError) Unwrap() error { return ErrDust }

// SelectCoins chooses the wallet outputs that pay p.Payments at p.FeeRate.
//
// Confirmed outputs come first, largest first, so that a transaction has
// as few inputs (and as little weight) as it can; unconfirmed ones only
// when p.AllowUnconfirmed and the confirmed ones fall short. An output
// worth no more than the fee of spending it is never taken. Change below
// the dust limit is not made: it goes to the fee. The transaction stays
// within p.MaxWeight, or SelectCoins fails with ErrTooLarge; a wallet that
// cannot pay fails with ErrInsufficientFunds; a payment below the dust
// limit fails with a *DustError.
func SelectCoins(utxos []Utxo, p SelectParams) (Selection, error) {
	if p.InputWeight == 0 {
		p.InputWeight = P2WPKHInputWeight
	}
	if p.MaxWeight == 0 || p.MaxWeight > MaxStandardWeight {
		p.MaxWeight = MaxStandardWeight
	}
	if p.FeeRate < 1 || p.DustLimit < 1 || len(p.Payments) == 0 || len(p.ChangeScript) == 0 {
		return Selection{}, errors.New("bitcoin: SelectCoins needs payments, a change script, a fee rate and a dust limit")
	}
	var pay int64
	scripts := make([][]byte, 0, len(p.Payments)+1)
	for i, o := range p.Payments {
		if o.Value < p.DustLimit {
			return Selection{}, &DustError{Index: i, Value: o.Value, DustLimit: p.DustLimit}
		}
		pay += o.Value
		if pay > MaxSatoshis {
			return Selection{}, errors.New("bitcoin: the payments add up to more bitcoin than there is")
		}
		scripts = append(scripts, o.PkScript)
	}
	withChange := append(slices.Clone(scripts), p.ChangeScript)

	inputFee := VSize(p.InputWeight) * p.FeeRate
	var cands []Utxo
	for _, u := range utxos {
		if u.Value > inputFee && (u.Confirmations > 0 || p.AllowUnconfirmed) {
			cands = append(cands, u)
		}
	}
	slices.SortFunc(cands, func(a, b Utxo) int {
		if ca, cb := a.Confirmations > 0, b.Confirmations > 0; ca != cb {
			if ca {
				return -1
			}
			return 1
		}
		if a.Value != b.Value {
			if a.Value > b.Value {
				return -1
			}
			return 1
		}
		if c := bytes.Compare(a.OutPoint.Hash[:], b.OutPoint.Hash[:]); c != 0 {
			return c
		}
		return int(int64(a.OutPoint.Index) - int64(b.OutPoint.Index))
	})

	var total int64
	for n, u := range cands {
		inputs := n + 1
		noChangeWeight := TxWeight(inputs, p.InputWeight, scripts)
		if noChangeWeight > p.MaxWeight {
			return Selection{}, fmt.Errorf("%w: %d inputs weigh %d, more than %d", ErrTooLarge, inputs, noChangeWeight, p.MaxWeight)
		}
		total += u.Value
		changeWeight := TxWeight(inputs, p.InputWeight, withChange)
		if fee := VSize(changeWeight) * p.FeeRate; changeWeight <= p.MaxWeight && total-pay-fee >= p.DustLimit {
			return Selection{Inputs: cands[:inputs:inputs], Change: total - pay - fee, Fee: fee, Weight: changeWeight}, nil
		}
		if fee := VSize(noChangeWeight) * p.FeeRate; total-pay >= fee {
			// What is left is less than change worth making: the fee
			// takes it.
			return Selection{Inputs: cands[:inputs:inputs], Fee: total - pay, Weight: noChangeWeight}, nil
		}
	}
	return Selection{}, fmt.Errorf("%w: %d satoshis in %d spendable outputs, %d to pay before fees", ErrInsufficientFunds, total, len(cands), pay)
}
