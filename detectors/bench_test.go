package detectors

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/synth"
)

// benchSessions is the size of the benchmark corpus: about a million
// events of the synth package's realistic sessions, as metrics measures.
const benchSessions = 10000

// BenchmarkDetectAllVersusLoad loads a synthetic corpus of about a million
// events and runs every detector over it, timing the two apart: ratio is
// the detectors' time over the load's (the budget is 0.5), and
// go-peak-heap-MB the highest Go heap seen while the detectors ran.
func BenchmarkDetectAllVersusLoad(b *testing.B) {
	dir := b.TempDir()
	rep, err := synth.Write(context.Background(), dir, synth.Options{Sessions: benchSessions, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var load, detect time.Duration
	var peak uint64
	findings := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		db, err := metrics.Open(ctx, metrics.Options{})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := db.Load(ctx, dir); err != nil {
			b.Fatal(err)
		}
		load += time.Since(start)
		runtime.GC()
		stop := sampleHeap()
		start = time.Now()
		r, err := Run(ctx, db, Catalog(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		detect += time.Since(start)
		peak = max(peak, stop())
		findings = len(r.Findings)
		db.Close()
	}
	b.ReportMetric(float64(rep.Events), "events")
	b.ReportMetric(load.Seconds()/float64(b.N), "load-s")
	b.ReportMetric(detect.Seconds()/float64(b.N), "detect-s")
	b.ReportMetric(detect.Seconds()/load.Seconds(), "ratio")
	b.ReportMetric(float64(peak)/(1<<20), "go-peak-heap-MB")
	b.ReportMetric(float64(findings), "findings")
}

// sampleHeap samples the Go heap until the returned function is called,
// which returns the highest HeapInuse seen.
func sampleHeap() func() uint64 {
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return peak.Load()
	}
}
