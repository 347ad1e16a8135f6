package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// detect and report bound Go's heap while DuckDB runs at its default cap,
// and put the process's limit back; a memory the user chose is left alone.
func TestDetectBoundsGoMemoryOnlyAtTheDefaultCap(t *testing.T) {
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT is set: the user's limit is kept")
	}
	was := debug.SetMemoryLimit(-1)
	sys := &IO{Getenv: func(string) string { return "" }}
	restore := boundGoMemory(sys, &loadFlags{})
	if got := debug.SetMemoryLimit(-1); got != goMemoryLimit {
		t.Errorf("limit while detecting = %d, want %d", got, goMemoryLimit)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != was {
		t.Errorf("limit after = %d, want it put back to %d", got, was)
	}
	restore = boundGoMemory(sys, &loadFlags{memoryLimit: "4GB"})
	if got := debug.SetMemoryLimit(-1); got != was {
		t.Errorf("limit with --memory-limit 4GB = %d, want it left at %d", got, was)
	}
	restore()
}
