// Package noderig is what processor/bitcoin/btcdtest and
// processor/evm/evmtest share to run a real blockchain node in a test: the
// node's binary (named by an environment variable, or built once with `go
// install` into the user cache directory), free loopback ports, the node's
// process with its log, killed at the test's end, and a poller.
package noderig

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sync"
	"testing"
	"time"
)

// Binary is a node's program, located or built once per test binary.
type Binary struct {
	// Name is the program's file name ("btcd"), also naming its cache
	// directory and it in messages.
	Name string
	// Env names the environment variable that may point at a binary to use
	// instead of building one ("PAYOUTKIT_BTCD").
	Env string
	// Module is the Go module the binary is built from; its version is the
	// one the test binary depends on, or DefaultVersion when it records
	// none. Package is the main package installed from it.
	Module, Package, DefaultVersion string

	once sync.Once
	path string
	err  error
}

// Path returns the binary: $Env when set, otherwise <user cache
// dir>/payoutkit/<Name>-<version>/<Name>, built there with `go install`
// the first time. Where it cannot be had, the test is skipped with the
// reason, unless CI=true: then it fails, so that CI never passes by
// skipping.
func (b *Binary) Path(t testing.TB) string {
	t.Helper()
	b.once.Do(func() { b.path, b.err = b.locate() })
	if b.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is needed and could not be built: %v", b.Name, b.err)
		}
		t.Skipf("skipping: %s could not be built (set %s to a %s binary, or let `go install` reach the module proxy): %v", b.Name, b.Env, b.Name, b.err)
	}
	return b.path
}

func (b *Binary) locate() (string, error) {
	if p := os.Getenv(b.Env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", b.Env, err)
		}
		return p, nil
	}
	version := b.DefaultVersion
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == b.Module && d.Version != "" && d.Version != "(devel)" {
				version = d.Version
			}
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "payoutkit", b.Name+"-"+version)
	bin := filepath.Join(dir, b.Name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Outside the workspace and without the caller's flags: the node is
	// built as its own module's go.mod says, whatever the test runs under.
	cmd := exec.Command("go", "install", b.Package+"@"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOWORK=off", "GOFLAGS=")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s@%s: %v\n%s", b.Name, version, err, out)
	}
	return bin, nil
}

// FreePort returns a TCP port free on 127.0.0.1 a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Process is a node's process running for a test.
type Process struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{} // closed once the process has exited
}

// Start runs bin with args for the test, its output (stdout and stderr)
// written to the file logPath, and kills it at the test's end; if the test
// failed, the end of the log is logged then. name names the node in
// messages.
func Start(t testing.TB, name, bin string, args []string, logPath string) *Process {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	p := &Process{name: name, cmd: exec.Command(bin, args...), log: logPath, exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("%s's log:\n%s", name, tail(string(b), 4000))
			}
		}
	})
	return p
}

// WaitReady calls ready every 100ms until it returns nil. It fails the
// test if the process exits first, or if ready still fails after a minute
// (addr names where the node was asked, in the message).
func (p *Process) WaitReady(t testing.TB, addr string, ready func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := ready()
		if err == nil {
			return
		}
		select {
		case <-p.exited:
			t.Fatalf("%s exited: %v", p.name, p.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer on %s: %v", p.name, addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
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
