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
	ws := newFaultWorkspace(t, dsn, "")
	c := newPayoutClient(ws.key, "0.01")
	p := startProc(t, "-db", dsn)
	funded := fund(t, p.url, ws.key, "fund", "100000.00")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := c.start(ctx, func() string { return p.url }, 8)
	c.waitAcked(t, 30, 60*time.Second)

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
	cancel()
	wait()
	c.converge(t, p.url)
	t.Logf("%s", c)
	p.term(t, 40*time.Second)
	checkPayouts(t, dsn, ws.id, c, funded)
	auditExitsZero(t, dsn)
}
