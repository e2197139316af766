package noderig

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the node: with NODERIG_HELPER set it is one
// instead of running the tests.
func TestMain(m *testing.M) {
	switch os.Getenv("NODERIG_HELPER") {
	case "listen": // a node that answers on NODERIG_ADDR until killed
		l, err := net.Listen("tcp", os.Getenv("NODERIG_ADDR"))
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		fmt.Println("listening on", l.Addr())
		for {
			c, err := l.Accept()
			if err != nil {
				os.Exit(2)
			}
			c.Close()
		}
	case "exit": // a node that fails at once
		fmt.Println("no configuration")
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// fatal is a testing.TB whose Fatalf records its message and ends the
// goroutine, as the testing package's does.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper() {}

func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatalOf runs do with a fatal and returns the message it failed with
// ("" when it did not).
func fatalOf(t *testing.T, do func(testing.TB)) string {
	f := &fatal{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		do(f)
	}()
	<-done
	return f.msg
}

func dial(addr string) func() error {
	return func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}
}

// A node started on a free port answers there once ready, writes its
// output to its log, and is gone once its test has ended.
func TestStartWaitReadyKill(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(FreePort(t))
	logPath := filepath.Join(t.TempDir(), "node.log")
	t.Setenv("NODERIG_HELPER", "listen")
	t.Setenv("NODERIG_ADDR", addr)
	t.Run("node", func(t *testing.T) {
		p := Start(t, "helper", os.Args[0], nil, logPath)
		p.WaitReady(t, addr, dial(addr))
		Wait(t, 10*time.Second, "the log", func() bool {
			b, _ := os.ReadFile(logPath)
			return strings.Contains(string(b), "listening on "+addr)
		})
	})
	if err := dial(addr)(); err == nil {
		t.Fatal("the node still answers after its test ended")
	}
}

// WaitReady fails at once, naming the node, when its process exits.
func TestWaitReadyExited(t *testing.T) {
	t.Setenv("NODERIG_HELPER", "exit")
	p := Start(t, "helper", os.Args[0], nil, filepath.Join(t.TempDir(), "node.log"))
	start := time.Now()
	msg := fatalOf(t, func(tb testing.TB) {
		p.WaitReady(tb, "nowhere", func() error { return errors.New("not yet") })
	})
	if msg != "helper exited: exit status 3" {
		t.Fatalf("WaitReady failed with %q", msg)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("WaitReady took %s to see the exit", time.Since(start))
	}
}

func TestWait(t *testing.T) {
	n := 0
	Wait(t, 10*time.Second, "the third call", func() bool { n++; return n == 3 })
	msg := fatalOf(t, func(tb testing.TB) { Wait(tb, 100*time.Millisecond, "never", func() bool { return false }) })
	if msg != "after 100ms: never" {
		t.Fatalf("Wait failed with %q", msg)
	}
}

// A binary named by the environment variable is used as it is; one
// named there but missing is an error naming the variable.
func TestBinaryFromEnv(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "noded")
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NODERIG_TEST_BIN", bin)
	b := &Binary{Name: "noded", Env: "NODERIG_TEST_BIN", Module: "example.com/noded", Package: "example.com/noded", DefaultVersion: "v1.0.0"}
	if got := b.Path(t); got != bin {
		t.Fatalf("Path %q, want %q", got, bin)
	}
	t.Setenv("NODERIG_TEST_BIN", bin+".missing")
	_, err := (&Binary{Name: "noded", Env: "NODERIG_TEST_BIN"}).locate()
	if err == nil || !strings.HasPrefix(err.Error(), "NODERIG_TEST_BIN: ") {
		t.Fatalf("a missing binary: %v", err)
	}
}
