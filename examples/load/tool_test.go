package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The server's log as the load tool reads it: every line counted, the
// address taken from the "serving" line, warnings and errors passed on,
// requests' INFO lines not.
func TestReadLogs(t *testing.T) {
	log := strings.Join([]string{
		`{"time":"2026-11-24T18:56:21Z","level":"INFO","msg":"sqlstore: applied migration","version":1}`,
		`{"time":"2026-11-24T18:56:21Z","level":"INFO","msg":"serving metrics","addr":"127.0.0.1:6060"}`,
		`{"time":"2026-11-24T18:56:21Z","level":"INFO","msg":"serving","addr":"127.0.0.1:40863"}`,
		`{"time":"2026-11-24T18:56:22Z","level":"INFO","msg":"request","method":"GET","path":"/v1/balance","status":200}`,
		`{"time":"2026-11-24T18:56:22Z","level":"WARN","msg":"webhook delivery failed","status":500}`,
		`{"time":"2026-11-24T18:56:22Z","level":"ERROR","msg":"request","status":500,"code":50000}`,
		`not JSON`,
	}, "\n") + "\n"
	tg := &target{logDone: make(chan struct{})}
	addr := make(chan string, 1)
	var warn strings.Builder
	tg.readLogs(strings.NewReader(log), addr, &warn)

	select {
	case got := <-addr:
		if got != "127.0.0.1:40863" {
			t.Errorf("address %q, want the serving line's", got)
		}
	default:
		t.Error("no address reported")
	}
	if n := tg.logLines.Load(); n != 7 {
		t.Errorf("%d lines counted, want 7", n)
	}
	if n := tg.logBytes.Load(); n != int64(len(log)) {
		t.Errorf("%d bytes counted, want %d", n, len(log))
	}
	got := warn.String()
	for _, want := range []string{"webhook delivery failed", `"code":50000`} {
		if !strings.Contains(got, want) {
			t.Errorf("passed on:\n%s\nwant a line with %s", got, want)
		}
	}
	if strings.Contains(got, "/v1/balance") || strings.Contains(got, "migration") {
		t.Errorf("passed on INFO lines:\n%s", got)
	}
}

// -cpuprofile writes a profile that go tool pprof reads (gzipped protobuf).
func TestCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "load.prof")
	stop, err := startCPUProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("profile of %d bytes is not gzipped", len(b))
	}
	if _, err := startCPUProfile(filepath.Join(t.TempDir(), "missing", "load.prof")); err == nil {
		t.Error("a profile in a missing directory started")
	}
}
