// Package btcdtest runs a real Bitcoin node for tests: btcd in regression
// test mode (btcd --regtest), built once from the btcd module and cached,
// started on free loopback ports with a data directory of the test's own,
// its RPC over plain HTTP on loopback, and blocks mined on demand.
package btcdtest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/rpcclient"

	"github.com/payoutkit/payoutkit/internal/noderig"
)

// ActivationHeight is the height from which segregated witness and taproot
// are active on btcd's regtest: both are BIP 9 deployments there (a window
// of 144 blocks, always started), so they are active from the fourth window.
const ActivationHeight = 3 * 144

// User and Pass are the node's RPC credentials.
const (
	User = "payoutkit"
	Pass = "payoutkit"
)

// btcd is btcd's program, built from the version of the btcd module this
// package depends on.
var btcd = &noderig.Binary{
	Name: "btcd", Env: "PAYOUTKIT_BTCD",
	Module: "github.com/btcsuite/btcd", Package: "github.com/btcsuite/btcd", DefaultVersion: "v0.24.2",
}

// BtcdBinary returns a btcd binary: $PAYOUTKIT_BTCD when set, otherwise
// <user cache dir>/payoutkit/btcd-<version>/btcd, built there with `go
// install` the first time (a minute). Where it cannot be built, the test is
// skipped with the reason, unless CI=true: then it fails.
func BtcdBinary(t testing.TB) string {
	t.Helper()
	return btcd.Path(t)
}

// Node is a running btcd --regtest.
type Node struct {
	// Host is its RPC endpoint on loopback ("127.0.0.1:port"), plain HTTP
	// with User and Pass.
	Host string
	// Client is connected to Host in HTTP POST mode.
	Client *rpcclient.Client
	// DataDir is the node's own directory (data, logs, configuration).
	DataDir string
}

// Start starts btcd --regtest for the test, stopped (killed) at its end.
// Every block it mines pays miningAddr (a regtest address). It mines
// nothing by itself: Generate does. The node rejects non-standard
// transactions, as mainnet's nodes do.
func Start(t testing.TB, miningAddr string) *Node {
	t.Helper()
	bin := BtcdBinary(t)
	rpcPort, p2pPort := noderig.FreePort(t), noderig.FreePort(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "btcd.conf")
	if err := os.WriteFile(conf, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	host := "127.0.0.1:" + strconv.Itoa(rpcPort)
	proc := noderig.Start(t, "btcd", bin, []string{"--regtest", "--configfile=" + conf,
		"--datadir=" + filepath.Join(dir, "data"), "--logdir=" + filepath.Join(dir, "logs"),
		"--rpclisten=" + host, "--listen=127.0.0.1:" + strconv.Itoa(p2pPort), "--notls",
		"--rpcuser=" + User, "--rpcpass=" + Pass, "--miningaddr=" + miningAddr,
		"--txindex", "--nodnsseed", "--rejectnonstd", "--nocfilters", "--debuglevel=warn"},
		filepath.Join(dir, "btcd.out"))
	c, err := rpcclient.New(&rpcclient.ConnConfig{Host: host, User: User, Pass: Pass, HTTPPostMode: true, DisableTLS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown) // before the node is killed
	proc.WaitReady(t, host, func() error {
		_, err := c.GetBlockCount()
		return err
	})
	return &Node{Host: host, Client: c, DataDir: dir}
}

// Generate mines n blocks (each paying the mining address) and returns
// their hashes.
func (n *Node) Generate(t testing.TB, blocks uint32) []*chainhash.Hash {
	t.Helper()
	var hashes []*chainhash.Hash
	for blocks > 0 { // in steps, so that no single call outlasts the client's timeout
		step := min(blocks, 200)
		h, err := n.Client.Generate(step)
		if err != nil {
			t.Fatalf("generate %d: %v", step, err)
		}
		hashes = append(hashes, h...)
		blocks -= step
	}
	return hashes
}

// Wait polls cond every 50ms until it holds or wait has passed, then fails
// the test with what.
func Wait(t testing.TB, wait time.Duration, what string, cond func() bool) {
	t.Helper()
	noderig.Wait(t, wait, what, cond)
}
