//go:build linux

package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFaultSQLiteDiskFull: the server's file-size limit is cut to one byte
// while payouts run (as a full disk would, SQLite's writes fail with EFBIG),
// then lifted. Meanwhile writes answer 50000 and reads keep working; nothing
// is half-written; once there is room again payouts are accepted without a
// restart, and the audit passes.
func TestFaultSQLiteDiskFull(t *testing.T) {
	skipShortFault(t)
	dsn := filepath.Join(t.TempDir(), "full.db")
	r := startFaultRun(t, dsn, dsn, "100000.00", 8, 30, 60*time.Second)
	ws, c, p := r.ws, r.c, r.p

	pid := p.cmd.Process.Pid
	setFileSize := func(limit uint64) {
		t.Helper()
		rl := unix.Rlimit{Cur: limit, Max: unix.RLIM_INFINITY}
		if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &rl, nil); err != nil {
			t.Fatalf("prlimit: %v", err)
		}
	}
	for round := range faultCount(1, 3) {
		internalBefore := c.internal.Load()
		setFileSize(1) // no write may grow a file: the disk is full
		full := time.Now()
		for time.Since(full) < 3*time.Second {
			st, env, _, err := doJSON(context.Background(), plainClient, "GET", p.url+"/v1/balance", ws.key, "")
			if err != nil || st != 200 || env.Code != 0 {
				t.Fatalf("round %d: balance while the disk is full: %d %+v %v", round, st, env, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		setFileSize(unix.RLIM_INFINITY)
		if c.internal.Load() == internalBefore {
			t.Errorf("round %d: no write answered 50000 while the disk was full", round)
		}
		// Recovery without a restart: payouts are accepted again.
		c.waitAcked(t, 30, 30*time.Second)
	}
	r.stopLoad(t)
	t.Logf("%s", c)
	r.finish(t)
}
