package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat's CPU times;
// it is 100 on every common architecture.
const clockTicks = 100

// cpuTime is the process's user plus system CPU time so far.
func cpuTime(pid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces; the fields after it don't.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, true
}

// memoryKiB reads a field of /proc/<pid>/status such as VmRSS or VmHWM.
func memoryKiB(pid int, field string) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// usageSampler follows a process's CPU and peak memory while a workload runs.
type usageSampler struct {
	pid   int
	start time.Time
	cpu0  time.Duration
	done  chan struct{}
	wg    sync.WaitGroup
	peak  int64
}

func startSampler(pid int) *usageSampler {
	s := &usageSampler{pid: pid, start: time.Now(), done: make(chan struct{})}
	s.cpu0, _ = cpuTime(pid)
	s.wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, ok := memoryKiB(pid, "VmRSS"); ok {
				s.peak = max(s.peak, rss)
			}
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	})
	return s
}

// stop returns the cores the process kept busy on average, its peak
// resident memory in MiB and the CPU time it used.
func (s *usageSampler) stop() (cores, rssMiB float64, used time.Duration) {
	close(s.done)
	s.wg.Wait()
	cpu1, _ := cpuTime(s.pid)
	used = cpu1 - s.cpu0
	return used.Seconds() / time.Since(s.start).Seconds(), float64(s.peak) / 1024, used
}

// measure runs one workload's drive, then settle (the webhooks' drain, so
// that their delivery counts in the work of each payout), and adds to its
// result the cores and peak memory of the server process pid (0: not ours
// to watch), the CPU the server and the database processes dbPIDs spent
// per request, and the cores of this process (the clients and the webhook
// receiver): on a machine where the load and the server share the cores,
// what the load takes the server cannot have, so the ratio of two rates
// reads right only beside the split, and the CPU per request is the figure
// the load cannot distort.
func measure(pid int, dbPIDs []int, drive func() result, settle func(*result)) result {
	var server *usageSampler
	if pid != 0 {
		server = startSampler(pid)
	}
	db0 := cpuTimes(dbPIDs)
	self := startSampler(os.Getpid())
	res := drive()
	if settle != nil {
		settle(&res)
	}
	res.LoadCPU, _, _ = self.stop()
	if server != nil {
		res.ServerCPU, res.ServerRSSMiB, res.serverUsed = server.stop()
		if res.Requests > 0 {
			res.ServerCPUPerOp = perOp(res.serverUsed, res.Requests)
		}
	}
	if len(dbPIDs) > 0 {
		res.databaseUsed = cpuTimes(dbPIDs) - db0
		if res.Requests > 0 {
			res.DatabaseCPUPerOp = perOp(res.databaseUsed, res.Requests)
		}
	}
	return res
}

// waitQuiet waits, up to maxWait, until the processes pids spend at most
// one clock tick of CPU in a quarter of a second between them: the work a
// load left behind (hand-offs, the outbox) is done, so it counts in the
// load's CPU and not in the next workload's.
func waitQuiet(ctx context.Context, pids []int, maxWait time.Duration) {
	deadline := time.Now().Add(maxWait)
	for time.Now().Before(deadline) {
		c0 := cpuTimes(pids)
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return
		}
		if cpuTimes(pids)-c0 <= time.Second/clockTicks {
			return
		}
	}
}

// perOp is CPU time per request in microseconds.
func perOp(used time.Duration, requests int) float64 {
	return float64(used.Microseconds()) / float64(requests)
}

// cpuTimes is the CPU time so far of the processes that still run.
func cpuTimes(pids []int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		if t, ok := cpuTime(pid); ok {
			sum += t
		}
	}
	return sum
}

// processesNamed lists the processes whose command name is name (as
// /proc/<pid>/comm has it): PostgreSQL's postmaster and every backend are
// "postgres".
func processesNamed(name string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile("/proc/" + e.Name() + "/comm"); err == nil && strings.TrimSpace(string(comm)) == name {
			pids = append(pids, pid)
		}
	}
	return pids
}

// serverUsage is what the server process cost over the whole run.
type serverUsage struct {
	PeakRSSMiB    float64 `json:"peak_rss_mib"` // VmHWM: the high-water mark of the whole run
	RSSMiB        float64 `json:"rss_mib"`      // at the end
	IdleCPU       float64 `json:"idle_cpu_percent"`
	IdleSeconds   float64 `json:"idle_seconds"`
	LogLines      int64   `json:"log_lines,omitempty"`
	LogBytes      int64   `json:"log_bytes,omitempty"`
	DatabaseBytes int64   `json:"sqlite_bytes,omitempty"` // the SQLite file with its WAL
	Payouts       int     `json:"payouts"`                // in the database: the run's and any prefilled
	BytesPerPay   int64   `json:"sqlite_bytes_per_payout,omitempty"`
}

// usage reports the server's memory, its CPU while idle (after every
// workload and every delivery), and its logs and database size.
func (t *target) usage(ctx context.Context, idle time.Duration) *serverUsage {
	u := &serverUsage{}
	if hwm, ok := memoryKiB(t.pid(), "VmHWM"); ok {
		u.PeakRSSMiB = float64(hwm) / 1024
	}
	if rss, ok := memoryKiB(t.pid(), "VmRSS"); ok {
		u.RSSMiB = float64(rss) / 1024
	}
	if idle > 0 {
		cpu0, ok0 := cpuTime(t.pid())
		start := time.Now()
		select {
		case <-time.After(idle):
		case <-ctx.Done():
		}
		cpu1, ok1 := cpuTime(t.pid())
		if ok0 && ok1 {
			u.IdleSeconds = time.Since(start).Seconds()
			u.IdleCPU = 100 * (cpu1 - cpu0).Seconds() / u.IdleSeconds
		}
	}
	u.LogLines, u.LogBytes = t.logLines.Load(), t.logBytes.Load()
	u.Payouts = t.prefilled // stored before the run
	for _, w := range t.workspaces() {
		u.Payouts += len(w.acceptedIDs)
	}
	if t.cmd != nil && !strings.HasPrefix(t.db, "postgres") {
		for _, suffix := range []string{"", "-wal"} {
			if fi, err := os.Stat(t.db + suffix); err == nil {
				u.DatabaseBytes += fi.Size()
			}
		}
		if u.Payouts > 0 {
			u.BytesPerPay = u.DatabaseBytes / int64(u.Payouts)
		}
	}
	return u
}
