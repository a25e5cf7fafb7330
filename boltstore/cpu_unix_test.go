//go:build unix

package boltstore

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time the process has used, in every thread: the
// flusher's work in the background included.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
