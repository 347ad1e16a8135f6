//go:build unix

package mockllm_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process has used, so
// that a benchmark on a shared machine can report throughput per core
// second, which other processes' load does not change.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
