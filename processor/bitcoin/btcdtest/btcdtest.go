// Package btcdtest runs a real Bitcoin node for tests: btcd in regression
// test mode (btcd --regtest), built once from the btcd module and cached,
// started on free loopback ports with a data directory of the test's own,
// its RPC over plain HTTP on loopback, and blocks mined on demand.
package btcdtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/rpcclient"
)

// defaultBtcdVersion is btcd's version when the test binary does not record
// it.
const defaultBtcdVersion = "v0.24.2"

// ActivationHeight is the height from which segregated witness and taproot
// are active on btcd's regtest: both are BIP 9 deployments there (a window
// of 144 blocks, always started), so they are active from the fourth window.
const ActivationHeight = 3 * 144

// User and Pass are the node's RPC credentials.
const (
	User = "payoutkit"
	Pass = "payoutkit"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// BtcdBinary returns a btcd binary: $PAYOUTKIT_BTCD when set, otherwise
// <user cache dir>/payoutkit/btcd-<version>/btcd, built there with `go
// install` the first time (a minute). Where it cannot be built, the test is
// skipped with the reason, unless CI=true: then it fails.
func BtcdBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { buildPath, buildErr = btcdBinary() })
	if buildErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("btcd is needed and could not be built: %v", buildErr)
		}
		t.Skipf("skipping: btcd could not be built (set PAYOUTKIT_BTCD to a btcd binary, or let `go install` reach the module proxy): %v", buildErr)
	}
	return buildPath
}

func btcdBinary() (string, error) {
	if p := os.Getenv("PAYOUTKIT_BTCD"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("PAYOUTKIT_BTCD: %w", err)
		}
		return p, nil
	}
	version := defaultBtcdVersion
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/btcsuite/btcd" && d.Version != "" && d.Version != "(devel)" {
				version = d.Version
			}
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "payoutkit", "btcd-"+version)
	bin := filepath.Join(dir, "btcd")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "install", "github.com/btcsuite/btcd@"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOWORK=off", "GOFLAGS=")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install btcd@%s: %v\n%s", version, err, out)
	}
	return bin, nil
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
	rpcPort, p2pPort := freePort(t), freePort(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "btcd.conf")
	if err := os.WriteFile(conf, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	host := "127.0.0.1:" + strconv.Itoa(rpcPort)
	cmd := exec.Command(bin, "--regtest", "--configfile="+conf,
		"--datadir="+filepath.Join(dir, "data"), "--logdir="+filepath.Join(dir, "logs"),
		"--rpclisten="+host, "--listen=127.0.0.1:"+strconv.Itoa(p2pPort), "--notls",
		"--rpcuser="+User, "--rpcpass="+Pass, "--miningaddr="+miningAddr,
		"--txindex", "--nodnsseed", "--rejectnonstd", "--nocfilters", "--debuglevel=warn")
	logf, err := os.Create(filepath.Join(dir, "btcd.out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	n := &Node{Host: host, DataDir: dir}
	t.Cleanup(func() {
		if n.Client != nil {
			n.Client.Shutdown()
		}
		cmd.Process.Kill()
		<-exited
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logf.Name()); err == nil {
				t.Logf("btcd's output:\n%s", tail(string(b), 4000))
			}
		}
	})
	c, err := rpcclient.New(&rpcclient.ConnConfig{Host: host, User: User, Pass: Pass, HTTPPostMode: true, DisableTLS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.Client = c
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := c.GetBlockCount()
		if err == nil {
			return n
		}
		select {
		case <-exited:
			t.Fatalf("btcd exited: %v", cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("btcd did not answer on %s: %v", host, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
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
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", wait, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
