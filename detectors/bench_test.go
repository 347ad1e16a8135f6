package detectors

import (
	"context"
	"fmt"
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
// events and runs every detector over it, three ways, each on a new
// database: the load alone (load-s); Detect, which loads and detects in
// one pass (detect-s, and ratio, its time over the load's: the issue's
// budget is 1.5, the detectors adding at most half the load); and the load
// followed by Run, which reads the files again, the baseline (two-pass-s
// and two-pass-ratio). Both run with the type filter off, as a catalog
// whose Go detectors read every type gets, and on (filtered-ratio,
// two-pass-filtered-ratio). go-peak-heap-MB is the highest Go heap seen
// during Detect (filter off), and load-peak-heap-MB during the load alone
// (DuckDB's memory is its own and not counted in either). cpu-ratio and
// two-pass-cpu-ratio are the filter-off ratios in CPU time, which a
// machine busy with other work changes less than the wall clock.
func BenchmarkDetectAllVersusLoad(b *testing.B) {
	dir := b.TempDir()
	rep, err := synth.Write(context.Background(), dir, synth.Options{Sessions: benchSessions, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// timed runs f on a new database and returns how long it took, in
	// wall and CPU time, and the highest Go heap seen meanwhile.
	timed := func(f func(db *metrics.DB) error) (time.Duration, time.Duration, uint64) {
		db, err := metrics.Open(ctx, metrics.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		runtime.GC()
		stop := sampleHeap()
		start, cpu := time.Now(), cpuTime()
		if err := f(db); err != nil {
			b.Fatal(err)
		}
		took, used := time.Since(start), cpuTime()-cpu
		return took, used, stop()
	}
	var load, once, onceFiltered, twoPass, twoFiltered, loadCPU, onceCPU, twoPassCPU time.Duration
	var loadPeak, oncePeak uint64
	findings := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, c, peak := timed(func(db *metrics.DB) error {
			_, err := db.Load(ctx, dir)
			return err
		})
		load, loadCPU, loadPeak = load+d, loadCPU+c, max(loadPeak, peak)
		for _, filter := range []bool{false, true} {
			d, c, peak = timed(func(db *metrics.DB) error {
				filterTypes = filter
				defer func() { filterTypes = true }()
				r, _, err := Detect(ctx, db, []string{dir}, Catalog(), Options{})
				findings = len(r.Findings)
				return err
			})
			if filter {
				onceFiltered += d
			} else {
				once, onceCPU, oncePeak = once+d, onceCPU+c, max(oncePeak, peak)
			}
		}
		for _, filter := range []bool{false, true} {
			d, c, _ = timed(func(db *metrics.DB) error {
				if _, err := db.Load(ctx, dir); err != nil {
					return err
				}
				filterTypes = filter
				defer func() { filterTypes = true }()
				r, err := Run(ctx, db, Catalog(), Options{})
				if err == nil && len(r.Findings) != findings {
					err = fmt.Errorf("Run found %d, Detect %d", len(r.Findings), findings)
				}
				return err
			})
			if filter {
				twoFiltered += d
			} else {
				twoPass, twoPassCPU = twoPass+d, twoPassCPU+c
			}
		}
	}
	b.ReportMetric(float64(rep.Events), "events")
	b.ReportMetric(load.Seconds()/float64(b.N), "load-s")
	b.ReportMetric(once.Seconds()/float64(b.N), "detect-s")
	b.ReportMetric(once.Seconds()/load.Seconds(), "ratio")
	b.ReportMetric(onceFiltered.Seconds()/load.Seconds(), "filtered-ratio")
	b.ReportMetric(twoPass.Seconds()/float64(b.N), "two-pass-s")
	b.ReportMetric(twoPass.Seconds()/load.Seconds(), "two-pass-ratio")
	b.ReportMetric(twoFiltered.Seconds()/load.Seconds(), "two-pass-filtered-ratio")
	if loadCPU > 0 {
		b.ReportMetric(onceCPU.Seconds()/loadCPU.Seconds(), "cpu-ratio")
		b.ReportMetric(twoPassCPU.Seconds()/loadCPU.Seconds(), "two-pass-cpu-ratio")
	}
	b.ReportMetric(float64(oncePeak)/(1<<20), "go-peak-heap-MB")
	b.ReportMetric(float64(loadPeak)/(1<<20), "load-peak-heap-MB")
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
