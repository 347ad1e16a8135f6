package main

import (
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/sandbox"
)

// BenchmarkSandboxStartup measures what the sandbox adds to a bash call
// when the re-exec target (and so the session's spawner) is a binary that
// links all of retrace (this test binary, like retrace itself, links
// DuckDB and every package), as in a real session: each iteration starts
// `bash -c true` once unsandboxed and once sandboxed, so the baseline is
// measured in the same run; first-call-ms is the session's first
// sandboxed call, which also starts the spawner. agent/sandbox's
// BenchmarkStartup measures the same with a small binary.
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
		start := time.Now()
		if !sandboxed {
			cmd := exec.Command("/bin/bash", "-c", "true")
			cmd.Dir = ws
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			return time.Since(start)
		}
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		p, err := box.Start(sandbox.Command{Argv: []string{"/bin/bash", "-c", "true"}, Dir: ws, Stdout: w, Stderr: w})
		w.Close()
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(r)
		r.Close()
		if st, err := p.Wait(); err != nil || !st.Success() {
			b.Fatalf("%v %v: %s", st, err, out)
		}
		return time.Since(start)
	}
	// The session's first sandboxed process also starts its spawner; the
	// calls after it pay only the request and a fork and exec.
	first := run(true)
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
	b.ReportMetric(float64(first.Microseconds())/1000, "first-call-ms")
}
