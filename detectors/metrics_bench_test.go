package detectors

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/synth"
)

// BenchmarkDetectVersusMetrics compares what retrace detect and retrace
// metrics cost cold over the same corpus, each on a new database: Detect
// with every detector (detect) against loading the corpus and asking every
// named metric (metrics), and the peak RSS of each. The corpus has RETRACE_BENCH_SESSIONS synth
// sessions (about 101 events each; default 1000, about 100k events; 10000
// is about 1M). Both run three times, interleaved; each reports its min
// and median wall and CPU seconds, and ratio and cpu-ratio are detect's
// medians over metrics' (the budget is 1.0). Run it as
//
//	RETRACE_BENCH_SESSIONS=10000 go test -run XXX -bench BenchmarkDetectVersusMetrics -benchtime 1x ./detectors/
func BenchmarkDetectVersusMetrics(b *testing.B) {
	sessions := 1000
	if s := os.Getenv("RETRACE_BENCH_SESSIONS"); s != "" {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			b.Fatalf("RETRACE_BENCH_SESSIONS=%q: want a number of sessions", s)
		}
		sessions = n
	}
	dir := b.TempDir()
	rep, err := synth.Write(context.Background(), dir, synth.Options{Sessions: sessions, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	fresh := func() *metrics.DB {
		db, err := metrics.Open(ctx, metrics.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return db
	}
	paths := map[string]func(){
		"metrics": func() {
			db := fresh()
			defer db.Close()
			if _, err := db.Load(ctx, dir); err != nil {
				b.Fatal(err)
			}
			for _, m := range metrics.Metrics() {
				if _, err := db.Metric(ctx, m); err != nil {
					b.Fatal(err)
				}
			}
		},
		"detect": func() {
			db := fresh()
			defer db.Close()
			if _, _, err := Detect(ctx, db, []string{dir}, Catalog(), Options{}); err != nil {
				b.Fatal(err)
			}
		},
	}
	wall, cpu, peak := map[string][]float64{}, map[string][]float64{}, map[string]float64{}
	for range b.N {
		for range 3 {
			for _, name := range []string{"metrics", "detect"} {
				// The kernel's high-water mark of resident memory starts
				// again from what the process holds now (Linux only).
				os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
				start, c := time.Now(), cpuTime()
				paths[name]()
				wall[name] = append(wall[name], time.Since(start).Seconds())
				cpu[name] = append(cpu[name], (cpuTime() - c).Seconds())
				peak[name] = max(peak[name], vmHWM())
			}
		}
	}
	med := map[string][2]float64{}
	for _, name := range []string{"metrics", "detect"} {
		w, c := slices.Clone(wall[name]), slices.Clone(cpu[name])
		slices.Sort(w)
		slices.Sort(c)
		b.ReportMetric(w[0], name+"-min-s")
		b.ReportMetric(w[len(w)/2], name+"-median-s")
		b.ReportMetric(c[0], name+"-min-cpu-s")
		b.ReportMetric(c[len(c)/2], name+"-median-cpu-s")
		med[name] = [2]float64{w[len(w)/2], c[len(c)/2]}
		if peak[name] > 0 {
			b.ReportMetric(peak[name]/(1<<20), name+"-peak-RSS-MB")
		}
	}
	b.ReportMetric(float64(rep.Events), "events")
	b.ReportMetric(med["detect"][0]/med["metrics"][0], "ratio")
	b.ReportMetric(med["detect"][1]/med["metrics"][1], "cpu-ratio")
}

// vmHWM returns the process's peak resident memory in bytes (VmHWM: Go's
// heap and DuckDB's memory together), or 0 where /proc is not there.
func vmHWM() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}
