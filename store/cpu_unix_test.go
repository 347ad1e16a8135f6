//go:build unix

package store

import "syscall"

// cpuSeconds returns the CPU time this process has used so far, user and
// system, every thread (DuckDB's among them).
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
