package sqltest

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU runs f, reporting the process's CPU time per operation as
// cpu-ns/op: on a shared machine the figure that the other processes'
// load distorts least, and, for a parallel benchmark, the work of every
// goroutine rather than the wall time.
func reportCPU(b *testing.B, f func()) {
	start := processCPU()
	f()
	if used := processCPU() - start; used > 0 && b.N > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
