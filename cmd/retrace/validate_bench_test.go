package main

import (
	"context"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/synth"
	"github.com/retrace-dev/retrace/trajectory"
)

// BenchmarkValidateMillion validates a synth corpus of about a million
// events (10,000 files) as retrace validate does: on every core with the
// fast decoder, and, as the baselines, on one core with the fast decoder
// and on one core with the encoding/json decoder (validate before it went
// parallel and fast).
func BenchmarkValidateMillion(b *testing.B) {
	dir := b.TempDir()
	rep, err := synth.Write(context.Background(), dir, synth.Options{Sessions: 10000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	in, err := trajectory.ExpandInputs(dir)
	if err != nil {
		b.Fatal(err)
	}
	sys := &IO{In: strings.NewReader(""), Getenv: func(string) string { return "" }, Now: time.Now}
	for _, bc := range []struct {
		name      string
		workers   int
		reference bool
	}{
		{"fast/every-core", 0, false},
		{"fast/one-core", 1, false},
		{"reference/one-core", 1, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			trajectory.SetReferenceDecoding(bc.reference)
			defer trajectory.SetReferenceDecoding(false)
			workers := runtime.GOMAXPROCS(0)
			if bc.workers > 0 {
				workers = bc.workers
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(bc.workers))
			}
			cpu := cpuTime()
			events := 0
			for b.Loop() {
				reports, errs := validateFiles(sys, in.Files, workers)
				for i, r := range reports {
					if errs[i] != nil || len(r.Problems) > 0 {
						b.Fatal(errs[i], r.Problems)
					}
					events += r.Events
				}
			}
			b.ReportMetric(float64(rep.Events), "events")
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(events)/(cpuTime()-cpu).Seconds(), "events/cpu-s")
		})
	}
}

// cpuTime returns the user and system CPU time the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
