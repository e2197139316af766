package evm

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// Signer is the hot wallet: it signs the processor's transactions. A
// hardware or remote signer implements it; LocalKey is a key in memory.
type Signer interface {
	// Address is the account that sends every payout.
	Address() common.Address
	// SignTx returns tx signed for chainID.
	SignTx(ctx context.Context, tx *types.Transaction, chainID *big.Int) (*types.Transaction, error)
}

// LocalKey is a Signer holding a private key in memory. Its String and
// LogValue show the address only: the key is never logged, nor put in an
// error.
type LocalKey struct {
	key  *ecdsa.PrivateKey
	addr common.Address
}

// errBadKey says a key is malformed without repeating any of it.
var errBadKey = errors.New("evm: the private key is not 64 hex digits of a valid secp256k1 key")

// NewLocalKey parses a private key in hex (64 digits, "0x" optional).
func NewLocalKey(hexKey string) (*LocalKey, error) {
	hexKey = strings.TrimPrefix(strings.TrimSpace(hexKey), "0x")
	k, err := crypto.HexToECDSA(hexKey)
	if err != nil {
		return nil, errBadKey
	}
	return &LocalKey{key: k, addr: crypto.PubkeyToAddress(k.PublicKey)}, nil
}

// LoadKeyFile reads a private key in hex from a file.
func LoadKeyFile(path string) (*LocalKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("evm: key file: %w", err)
	}
	k, err := NewLocalKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("evm: key file %s: %w", path, err)
	}
	return k, nil
}

// KeyFromEnv reads a private key in hex from the environment variable name.
func KeyFromEnv(name string) (*LocalKey, error) {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return nil, fmt.Errorf("evm: environment variable %s holds no key", name)
	}
	k, err := NewLocalKey(v)
	if err != nil {
		return nil, fmt.Errorf("evm: environment variable %s: %w", name, err)
	}
	return k, nil
}

// Address implements Signer.
func (k *LocalKey) Address() common.Address { return k.addr }

// SignTx implements Signer.
func (k *LocalKey) SignTx(_ context.Context, tx *types.Transaction, chainID *big.Int) (*types.Transaction, error) {
	return types.SignTx(tx, types.LatestSignerForChainID(chainID), k.key)
}

// String shows the address, never the key.
func (k *LocalKey) String() string { return "evm.LocalKey(" + k.addr.Hex() + ")" }

// GoString shows the address, never the key.
func (k *LocalKey) GoString() string { return k.String() }

// LogValue shows the address, never the key.
func (k *LocalKey) LogValue() slog.Value { return slog.StringValue(k.String()) }
