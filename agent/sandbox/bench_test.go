package sandbox

import (
	"os/exec"
	"testing"
	"time"
)

// BenchmarkStartup measures what the sandbox adds to starting a bash
// command (`bash -c true`): each iteration starts it once unsandboxed and
// once sandboxed, so the baseline is measured in the same run, and it
// reports both, the difference (target: at most 2 ms), their ratio, and
// the session's first sandboxed call, which also starts the spawner.
func BenchmarkStartup(b *testing.B) {
	if _, err := landlockABI(); err != nil {
		b.Skipf("no Landlock here: %v", err)
	}
	ws := b.TempDir()
	box, err := New(Options{Workspace: ws, Home: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer box.Close()
	run := func(sandboxed bool) time.Duration {
		c := Command{Argv: []string{"/bin/bash", "-c", "true"}, Dir: ws}
		start := time.Now()
		if sandboxed {
			if out, ok := runIn(b, box, c); !ok {
				b.Fatalf("sandboxed: %s", out)
			}
		} else {
			cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
			cmd.Dir = ws
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
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

// BenchmarkPlan measures making a session's sandbox: probing the kernel,
// enumerating the read rules around the secret paths, making the cgroups
// and writing the plan. It is paid once per session.
func BenchmarkPlan(b *testing.B) {
	if _, err := landlockABI(); err != nil {
		b.Skipf("no Landlock here: %v", err)
	}
	ws := b.TempDir()
	for b.Loop() {
		box, err := New(Options{Workspace: ws})
		if err != nil {
			b.Fatal(err)
		}
		box.Close()
	}
}
