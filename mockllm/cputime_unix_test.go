//go:build unix

package mockllm_test

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user and system) the process has used, so
// that a benchmark on a shared machine can report its cost per CPU second
// beside the wall-clock rate.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
