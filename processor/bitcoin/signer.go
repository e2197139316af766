package bitcoin

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
)

// Signer is the hot wallet: it owns the address the wallet's coins are
// paid to and signs the processor's transactions spending them. A hardware
// or remote signer implements it; LocalKey is a key in memory.
type Signer interface {
	// Address is the wallet's address: every output it can spend, and
	// every change output, pays it.
	Address() btcutil.Address
	// SignTx signs every input of tx, each spending prevOuts[i] (an output
	// paying Address), in place.
	SignTx(ctx context.Context, tx *wire.MsgTx, prevOuts []*wire.TxOut) error
}

// LocalKey is a Signer holding a private key in memory, with a P2WPKH
// address on one network. Its String and LogValue show the address only:
// the key is never logged, nor put in an error.
type LocalKey struct {
	key    *btcec.PrivateKey
	addr   *btcutil.AddressWitnessPubKeyHash
	script []byte
}

// errBadKey says a key is malformed without repeating any of it.
var errBadKey = errors.New("bitcoin: the private key is neither 64 hex digits of a valid secp256k1 key nor a WIF key of the network")

// NewLocalKey parses a private key, 64 hex digits or WIF (Wallet Import
// Format, which must be of net), for a P2WPKH address on net.
func NewLocalKey(key string, net *chaincfg.Params) (*LocalKey, error) {
	key = strings.TrimSpace(key)
	var priv *btcec.PrivateKey
	if b, err := hex.DecodeString(strings.TrimPrefix(key, "0x")); err == nil {
		if len(b) != 32 {
			return nil, errBadKey
		}
		var s btcec.ModNScalar
		if overflow := s.SetByteSlice(b); overflow || s.IsZero() {
			return nil, errBadKey
		}
		priv = btcec.PrivKeyFromScalar(&s)
	} else {
		w, err := btcutil.DecodeWIF(key)
		if err != nil || !w.IsForNet(net) {
			return nil, errBadKey
		}
		priv = w.PrivKey
	}
	addr, err := btcutil.NewAddressWitnessPubKeyHash(btcutil.Hash160(priv.PubKey().SerializeCompressed()), net)
	if err != nil {
		return nil, fmt.Errorf("bitcoin: address of the key: %w", err)
	}
	script, err := txscript.PayToAddrScript(addr)
	if err != nil {
		return nil, fmt.Errorf("bitcoin: script of the key's address: %w", err)
	}
	return &LocalKey{key: priv, addr: addr, script: script}, nil
}

// LoadKeyFile reads a private key (hex or WIF) from a file.
func LoadKeyFile(path string, net *chaincfg.Params) (*LocalKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bitcoin: key file: %w", err)
	}
	k, err := NewLocalKey(string(b), net)
	if err != nil {
		return nil, fmt.Errorf("bitcoin: key file %s: %w", path, err)
	}
	return k, nil
}

// KeyFromEnv reads a private key (hex or WIF) from the environment variable
// name.
func KeyFromEnv(name string, net *chaincfg.Params) (*LocalKey, error) {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return nil, fmt.Errorf("bitcoin: environment variable %s holds no key", name)
	}
	k, err := NewLocalKey(v, net)
	if err != nil {
		return nil, fmt.Errorf("bitcoin: environment variable %s: %w", name, err)
	}
	return k, nil
}

// Address implements Signer.
func (k *LocalKey) Address() btcutil.Address { return k.addr }

// SignTx implements Signer: a P2WPKH witness (SIGHASH_ALL) on every input.
// It refuses an input whose previous output does not pay the key.
func (k *LocalKey) SignTx(_ context.Context, tx *wire.MsgTx, prevOuts []*wire.TxOut) error {
	if len(prevOuts) != len(tx.TxIn) {
		return fmt.Errorf("bitcoin: sign: %d inputs, %d previous outputs", len(tx.TxIn), len(prevOuts))
	}
	fetcher := txscript.NewMultiPrevOutFetcher(nil)
	for i, in := range tx.TxIn {
		fetcher.AddPrevOut(in.PreviousOutPoint, prevOuts[i])
	}
	hashes := txscript.NewTxSigHashes(tx, fetcher)
	for i, po := range prevOuts {
		if string(po.PkScript) != string(k.script) {
			return fmt.Errorf("bitcoin: sign: input %d does not spend the wallet's address", i)
		}
		w, err := txscript.WitnessSignature(tx, hashes, i, po.Value, po.PkScript, txscript.SigHashAll, k.key, true)
		if err != nil {
			return fmt.Errorf("bitcoin: sign input %d: %w", i, err)
		}
		tx.TxIn[i].Witness = w
	}
	return nil
}

// String shows the address, never the key.
func (k *LocalKey) String() string { return "bitcoin.LocalKey(" + k.addr.EncodeAddress() + ")" }

// GoString shows the address, never the key.
func (k *LocalKey) GoString() string { return k.String() }

// LogValue shows the address, never the key.
func (k *LocalKey) LogValue() slog.Value { return slog.StringValue(k.String()) }
