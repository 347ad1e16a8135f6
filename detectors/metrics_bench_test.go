package detectors

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/store"
	"github.com/retrace-dev/retrace/synth"
)

// BenchmarkDetectVersusMetrics compares what retrace detect and retrace
// metrics cost over the same corpus, cold and warm: cold, each on a new
// database in memory (Detect with every detector against loading the
// corpus and asking every named metric); warm, each through a store
// (store.Open over a cache directory of the benchmark's) over the
// unchanged corpus, as a second call of either command is. The corpus has
// RETRACE_BENCH_SESSIONS synth sessions (about 101 events each; default
// 1000, about 100k events; 10000 is about 1M). The store is made by a
// metrics call first, and detect-first-s is the first detect after it,
// which computes the Go detectors' findings and keeps them in the store.
// Each path then runs three times, interleaved; each reports its min and
// median wall and CPU seconds, and ratio and cpu-ratio are cold detect's
// medians over cold metrics' (the budget is 1.0), warm-ratio and
// warm-cpu-ratio warm detect's over cold metrics', and
// warm-vs-warm-ratio warm detect's over warm metrics'. floor-cpu-ratio
// is the least cold detect could cost against cold metrics in this
// design, where it loads what metrics loads and runs the detectors where
// metrics runs its queries: metrics' CPU less its queries', plus the SQL
// and Go detectors' own (see floorCPU), as if holding and handing over
// the events cost nothing. Run it as
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
	allMetrics := func(db *metrics.DB) {
		for _, m := range metrics.Metrics() {
			if _, err := db.Metric(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
	}
	cfg := store.Config{Dir: b.TempDir(), Wait: time.Minute}
	warm := func(load store.LoadFunc) *metrics.DB {
		db, _, err := store.Open(ctx, cfg, []string{dir}, load)
		if err != nil {
			b.Fatal(err)
		}
		return db
	}
	loadMetrics := func(db *metrics.DB) (metrics.LoadReport, error) { return db.Load(ctx, dir) }
	loadDetect := func(db *metrics.DB) (metrics.LoadReport, error) {
		_, lrep, err := Detect(ctx, db, []string{dir}, Catalog(), Options{})
		return lrep, err
	}
	paths := map[string]func(){
		"metrics": func() {
			db := fresh()
			defer db.Close()
			if _, err := db.Load(ctx, dir); err != nil {
				b.Fatal(err)
			}
			allMetrics(db)
		},
		"detect": func() {
			db := fresh()
			defer db.Close()
			if _, _, err := Detect(ctx, db, []string{dir}, Catalog(), Options{}); err != nil {
				b.Fatal(err)
			}
		},
		"warm-metrics": func() {
			db := warm(loadMetrics)
			defer db.Close()
			allMetrics(db)
		},
		"warm-detect": func() { warm(loadDetect).Close() },
	}
	names := []string{"metrics", "detect", "warm-metrics", "warm-detect"}
	wall, cpu, peak := map[string][]float64{}, map[string][]float64{}, map[string]float64{}
	for range b.N {
		// The store, made by metrics, then the first detect over it.
		warm(loadMetrics).Close()
		start := time.Now()
		warm(loadDetect).Close()
		b.ReportMetric(time.Since(start).Seconds(), "detect-first-s")
		for range 3 {
			for _, name := range names {
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
	for _, name := range names {
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
	floor := detectFloor(b, dir)
	b.ReportMetric(floor.queries, "metric-queries-cpu-s")
	b.ReportMetric(floor.sql, "sql-detectors-cpu-s")
	b.ReportMetric(floor.goDetectors, "go-detectors-cpu-s")
	// floor-cpu-ratio is what cold detect would cost against cold metrics
	// if holding and handing over the events cost nothing: metrics, less
	// its queries, plus the detectors' own CPU.
	m := med["metrics"][1]
	b.ReportMetric((m-floor.queries+floor.sql+floor.goDetectors)/m, "floor-cpu-ratio")
	b.ReportMetric(float64(rep.Events), "events")
	b.ReportMetric(med["detect"][0]/med["metrics"][0], "ratio")
	b.ReportMetric(med["detect"][1]/med["metrics"][1], "cpu-ratio")
	b.ReportMetric(med["warm-detect"][0]/med["metrics"][0], "warm-ratio")
	b.ReportMetric(med["warm-detect"][1]/med["metrics"][1], "warm-cpu-ratio")
	b.ReportMetric(med["warm-detect"][0]/med["warm-metrics"][0], "warm-vs-warm-ratio")
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

// floorCPU is what the work detect does and metrics does not costs by
// itself, in CPU seconds, each the median of three runs: the named
// metrics' queries over a loaded database whose derived tables are made
// (what metrics does and detect does not), the SQL detectors over it, and
// the Go detectors over every session (the CPU of reading the files with
// them less that of reading the files alone, both with Go's collector set
// as a load's check sets it).
type floorCPU struct {
	queries, sql, goDetectors float64
}

// detectFloor measures floorCPU over the corpus in dir.
func detectFloor(b *testing.B, dir string) floorCPU {
	ctx := context.Background()
	db, err := metrics.Open(ctx, metrics.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Load(ctx, dir); err != nil {
		b.Fatal(err)
	}
	pl, err := newPlan(Catalog(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	allMetrics := func() {
		for _, m := range metrics.Metrics() {
			if _, err := db.Metric(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
	}
	sqlDetectors := func() {
		for i, d := range pl.ds {
			if sd, ok := d.(*sqlDetector); ok {
				if _, err := sd.Corpus(ctx, db, pl.params[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	files, err := loadedFiles(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	skip := skipTypes(pl.ds)
	read := func(judge bool) func() {
		return func() {
			next := make(chan string)
			var wg sync.WaitGroup
			for range runtime.GOMAXPROCS(0) {
				wg.Go(func() {
					for f := range next {
						var live fileLiveness
						if err := readSessions(f, skip, func(s *Session) {
							if judge {
								pl.session(s, nil, &live)
							}
						}); err != nil {
							b.Error(err)
						}
					}
				})
			}
			for _, f := range files {
				next <- f
			}
			close(next)
			wg.Wait()
		}
	}
	medianCPU := func(f func()) float64 {
		var cs []float64
		for range 3 {
			c := cpuTime()
			f()
			cs = append(cs, (cpuTime() - c).Seconds())
		}
		slices.Sort(cs)
		return cs[1]
	}
	allMetrics() // makes the derived tables, which both commands make
	// The files are read under the collector's settings of a load's
	// check, as the pass runs under them.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(160 << 20))
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	return floorCPU{
		queries:     medianCPU(allMetrics),
		sql:         medianCPU(sqlDetectors),
		goDetectors: medianCPU(read(true)) - medianCPU(read(false)),
	}
}
