//go:build !unix

package store

// cpuSeconds is 0 where getrusage(2) is missing: the benchmark's CPU
// ratios are then not reported.
func cpuSeconds() float64 { return 0 }
