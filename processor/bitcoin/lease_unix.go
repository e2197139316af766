//go:build unix

package bitcoin

import (
	"errors"
	"os"
	"syscall"
)

// processRuns reports whether a process pid exists (a zombie counts):
// signal 0 checks without sending anything; EPERM is a process of another
// user's.
func processRuns(pid int) bool {
	proc, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = proc.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
