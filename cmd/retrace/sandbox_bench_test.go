package main

import (
	"os/exec"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/sandbox"
)

// BenchmarkSandboxStartup measures what the sandbox adds to a bash call
// when the re-exec target is a binary that links all of retrace (this
// test binary, like retrace itself, links DuckDB and every package), as
// in a real session: each iteration starts `bash -c true` once
// unsandboxed and once sandboxed, so the baseline is measured in the same
// run. agent/sandbox's BenchmarkStartup measures the same with a small
// binary, which isolates the sandbox's own work from the re-exec's start.
func BenchmarkSandboxStartup(b *testing.B) {
	ws := b.TempDir()
	box, err := sandbox.New(sandbox.Options{Workspace: ws, Home: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer box.Close()
	if err := box.Unavailable(); err != nil {
		b.Skip(err)
	}
	run := func(sandboxed bool) time.Duration {
		cmd := exec.Command("/bin/bash", "-c", "true")
		cmd.Dir = ws
		if sandboxed {
			if err := box.Wrap(cmd); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		return time.Since(start)
	}
	var plain, boxed time.Duration
	for b.Loop() {
		plain += run(false)
		boxed += run(true)
	}
	n := float64(b.N)
	b.ReportMetric(float64(plain.Microseconds())/1000/n, "baseline-ms/op")
	b.ReportMetric(float64(boxed.Microseconds())/1000/n, "sandboxed-ms/op")
	b.ReportMetric(float64((boxed-plain).Microseconds())/1000/n, "added-ms/op")
	b.ReportMetric(float64(boxed)/float64(plain), "ratio")
}
