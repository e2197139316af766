// Package evmtest runs a real EVM node for tests: geth in developer mode
// (geth --dev), built once from the go-ethereum module and cached, started
// on a free loopback port with a data directory of the test's own, and the
// ERC-20 token of testdata/TestToken.sol.
package evmtest

import (
	"context"
	"crypto/ecdsa"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/payoutkit/payoutkit/internal/noderig"
)

//go:generate ./testdata/compile.sh

// TokenBin is TestToken's creation code in hex (testdata/TestToken.bin,
// made by testdata/compile.sh). Its constructor takes (uint8 decimals,
// uint256 supply) and gives the supply to the deployer; refuse(address),
// the deployer's alone, makes every later transfer to that address revert.
//
//go:embed testdata/TestToken.bin
var TokenBin string

// DevKey is geth --dev's prefunded developer account's key (a constant of
// go-ethereum's cmd/utils).
const DevKey = "b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291"

// ChainID is geth --dev's chain id.
const ChainID = 1337

// geth is geth's program, built from the version of the go-ethereum
// module this package depends on.
var geth = &noderig.Binary{
	Name: "geth", Env: "PAYOUTKIT_GETH",
	Module: "github.com/ethereum/go-ethereum", Package: "github.com/ethereum/go-ethereum/cmd/geth", DefaultVersion: "v1.17.10",
}

// GethBinary returns a geth binary: $PAYOUTKIT_GETH when set, otherwise
// <user cache dir>/payoutkit/geth-<version>/geth, built there with `go
// install` the first time (minutes). Where it cannot be built, the test
// is skipped with the reason, unless CI=true: then it fails.
func GethBinary(t testing.TB) string {
	t.Helper()
	return geth.Path(t)
}

// Node is a running geth --dev.
type Node struct {
	// URL is its HTTP JSON-RPC endpoint on loopback.
	URL string
	// Client is connected to URL.
	Client *ethclient.Client
	// Dev is the prefunded developer account's key.
	Dev *ecdsa.PrivateKey
}

// Start starts geth --dev for the test, stopped (killed) at its end.
// A block is mined every second.
func Start(t testing.TB) *Node {
	t.Helper()
	bin := GethBinary(t)
	httpPort, authPort := noderig.FreePort(t), noderig.FreePort(t)
	dir := t.TempDir()
	proc := noderig.Start(t, "geth", bin, []string{"--dev", "--datadir", dir,
		"--http", "--http.addr", "127.0.0.1", "--http.port", strconv.Itoa(httpPort), "--http.api", "eth,net,web3,txpool",
		"--authrpc.addr", "127.0.0.1", "--authrpc.port", strconv.Itoa(authPort),
		"--port", "0", "--nodiscover", "--maxpeers", "0", "--ipcdisable", "--verbosity", "2",
		"--txpool.pricelimit", "1", "--dev.period", "1"},
		filepath.Join(dir, "geth.log"))
	n := &Node{URL: fmt.Sprintf("http://127.0.0.1:%d", httpPort)}
	n.Dev, _ = crypto.HexToECDSA(DevKey)
	proc.WaitReady(t, n.URL, func() error {
		c, err := ethclient.Dial(n.URL)
		if err != nil {
			return err
		}
		if _, err := c.BlockNumber(context.Background()); err != nil {
			c.Close()
			return err
		}
		n.Client = c
		return nil
	})
	t.Cleanup(n.Client.Close)
	return n
}

// Send signs a transaction from key (a deployment when to is nil), sends
// it and waits for its receipt, which it returns.
func (n *Node) Send(t testing.TB, key *ecdsa.PrivateKey, to *common.Address, value *big.Int, data []byte, gas uint64) *types.Receipt {
	t.Helper()
	ctx := context.Background()
	from := crypto.PubkeyToAddress(key.PublicKey)
	nonce, err := n.Client.PendingNonceAt(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	h, err := n.Client.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tip := big.NewInt(1_000_000_000)
	feeCap := new(big.Int).Add(new(big.Int).Mul(h.BaseFee, big.NewInt(2)), tip)
	id := big.NewInt(ChainID)
	tx, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{ChainID: id, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: gas, To: to, Value: value, Data: data}), types.LatestSignerForChainID(id), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Client.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	r, err := n.Receipt(tx.Hash(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Receipt waits up to wait for tx's receipt.
func (n *Node) Receipt(tx common.Hash, wait time.Duration) (*types.Receipt, error) {
	deadline := time.Now().Add(wait)
	for {
		r, err := n.Client.TransactionReceipt(context.Background(), tx)
		if err == nil {
			return r, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no receipt for %s: %w", tx.Hex(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Fund sends wei from the developer account to who.
func (n *Node) Fund(t testing.TB, who common.Address, wei *big.Int) {
	t.Helper()
	if r := n.Send(t, n.Dev, &who, wei, nil, 21_000); r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("funding %s failed", who.Hex())
	}
}

// DeployToken deploys TestToken from the developer account (its owner, who
// may refuse recipients) with supply base units, and returns its address.
func (n *Node) DeployToken(t testing.TB, decimals uint8, supply *big.Int) common.Address {
	t.Helper()
	r := n.Send(t, n.Dev, nil, new(big.Int), DeployData(decimals, supply), 3_000_000)
	if r.Status != types.ReceiptStatusSuccessful {
		t.Fatal("deploying the test token failed")
	}
	return r.ContractAddress
}

// TransferToken sends amount base units of token from the developer
// account to who.
func (n *Node) TransferToken(t testing.TB, token, who common.Address, amount *big.Int) {
	t.Helper()
	data := append(selector("transfer(address,uint256)"), common.LeftPadBytes(who.Bytes(), 32)...)
	data = append(data, common.LeftPadBytes(amount.Bytes(), 32)...)
	if r := n.Send(t, n.Dev, &token, new(big.Int), data, 500_000); r.Status != types.ReceiptStatusSuccessful {
		t.Fatal("token transfer failed")
	}
}

// Refuse makes every later transfer of token to who revert.
func (n *Node) Refuse(t testing.TB, token, who common.Address) {
	t.Helper()
	if r := n.Send(t, n.Dev, &token, new(big.Int), RefuseData(who), 500_000); r.Status != types.ReceiptStatusSuccessful {
		t.Fatal("refuse failed")
	}
}

// TokenBalance is token's balanceOf(who).
func (n *Node) TokenBalance(t testing.TB, token, who common.Address) *big.Int {
	t.Helper()
	out, err := n.Client.CallContract(context.Background(), callMsg(token, append(selector("balanceOf(address)"), common.LeftPadBytes(who.Bytes(), 32)...)), nil)
	if err != nil || len(out) != 32 {
		t.Fatalf("balanceOf: %v", err)
	}
	return new(big.Int).SetBytes(out)
}

// Transfers counts token's Transfer events to who.
func (n *Node) Transfers(t testing.TB, token, who common.Address) int {
	t.Helper()
	logs, err := n.Client.FilterLogs(context.Background(), filter(token, who))
	if err != nil {
		t.Fatal(err)
	}
	return len(logs)
}

// DeployData is TestToken's creation code with its constructor arguments.
func DeployData(decimals uint8, supply *big.Int) []byte {
	code, err := hex.DecodeString(strings.TrimSpace(TokenBin))
	if err != nil {
		panic(errors.New("evmtest: TokenBin is not hex"))
	}
	code = append(code, common.LeftPadBytes([]byte{decimals}, 32)...)
	return append(code, common.LeftPadBytes(supply.Bytes(), 32)...)
}

// RefuseData is the calldata of TestToken.refuse(who).
func RefuseData(who common.Address) []byte {
	return append(selector("refuse(address)"), common.LeftPadBytes(who.Bytes(), 32)...)
}

func selector(sig string) []byte { return crypto.Keccak256([]byte(sig))[:4] }

// Ether is n ether in wei.
func Ether(n int64) *big.Int {
	return new(big.Int).Mul(big.NewInt(n), big.NewInt(1_000_000_000_000_000_000))
}

// Wait polls cond every 50ms until it holds or wait has passed, then fails
// the test with what.
func Wait(t testing.TB, wait time.Duration, what string, cond func() bool) {
	t.Helper()
	noderig.Wait(t, wait, what, cond)
}

func callMsg(to common.Address, data []byte) ethereum.CallMsg {
	return ethereum.CallMsg{To: &to, Data: data}
}

// transferTopic is keccak256("Transfer(address,address,uint256)").
var transferTopic = crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))

func filter(token, to common.Address) ethereum.FilterQuery {
	return ethereum.FilterQuery{
		FromBlock: big.NewInt(0), Addresses: []common.Address{token},
		Topics: [][]common.Hash{{transferTopic}, nil, {common.BytesToHash(to.Bytes())}},
	}
}
