package store

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/synth"
)

// benchEvents returns the corpus sizes, in events, of the benchmarks:
// RETRACE_BENCH_EVENTS as the metrics benchmarks read it (a comma list
// such as "100k,1M"), or 100k.
func benchEvents(b *testing.B) []int {
	spec := os.Getenv("RETRACE_BENCH_EVENTS")
	if spec == "" {
		spec = "100k"
	}
	var out []int
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		mult := 1
		switch {
		case strings.HasSuffix(f, "k"):
			mult, f = 1000, strings.TrimSuffix(f, "k")
		case strings.HasSuffix(f, "M"):
			mult, f = 1000000, strings.TrimSuffix(f, "M")
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			b.Fatalf("RETRACE_BENCH_EVENTS=%q: %q is not a number of events such as 100k or 1M", spec, f)
		}
		out = append(out, n*mult)
	}
	return out
}

// adHoc is the ad hoc query the benchmark asks: a join of the derived
// views, as a person at the prompt would.
const adHoc = `SELECT s.model, c.tool, count(*) AS calls, avg(c.duration_ms) AS ms
FROM tool_calls c JOIN sessions s USING (session) GROUP BY ALL ORDER BY calls DESC`

// BenchmarkStoreWarm measures, over a synth corpus of each size
// RETRACE_BENCH_EVENTS names (100 events a session; default 100k), what
// retrace metrics --metric funnel and retrace query do: cold (a new
// in-memory database, every file read), warm (through the store over the
// unchanged corpus: a stat per file), and after 1% new files landed
// (read alone into the store). Each is run three times and reported as
// min and median seconds, with the ratios of the medians to cold's and
// the bytes the store's file grew by over the warm runs (0: nothing
// written when nothing changed). The store's first build is timed too
// (s-first, and x-first/cold-metric against the cold run's median), and
// the first build and the adds are also reported in CPU time against
// cold's (x-cpu-...; the add also as the ratio of the minimums, and
// both in CPU seconds): on a machine shared with other work, CPU time
// varies far less than wall time. So are a warm call and the add of one
// file of one session (x-cpu-warm, x-cpu-add1file): what every call and
// every update costs whatever they read, below which no add can go.
func BenchmarkStoreWarm(b *testing.B) {
	for _, events := range benchEvents(b) {
		b.Run(strconv.Itoa(events/1000)+"k", func(b *testing.B) {
			ctx := context.Background()
			sessions := max(events/100, 1)
			runs := b.TempDir()
			if _, err := synth.Write(ctx, runs, synth.Options{Sessions: sessions, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			// Three batches of 1% new files, one landing before each run,
			// then three batches of one file of one session: what any
			// update costs whatever it adds.
			var batches, singles []string
			for i := range 6 {
				d := b.TempDir()
				n := max(sessions/100, 1)
				if i >= 3 {
					n = 1
				}
				if _, err := synth.Write(ctx, d, synth.Options{Sessions: n, Seed: int64(100 + i)}); err != nil {
					b.Fatal(err)
				}
				if i < 3 {
					batches = append(batches, d)
				} else {
					singles = append(singles, d)
				}
			}
			cache := b.TempDir()
			cfg := Config{Dir: cache, Wait: time.Minute}
			load := func(db *metrics.DB) (metrics.LoadReport, error) { return db.Load(ctx, runs) }
			ask := func(db *metrics.DB, what string) {
				var err error
				if what == "metric" {
					_, err = db.Metric(ctx, "funnel")
				} else {
					_, err = db.Query(ctx, adHoc)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			cold := func(what string) {
				db, err := metrics.Open(ctx, metrics.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := db.Load(ctx, runs); err != nil {
					b.Fatal(err)
				}
				ask(db, what)
				db.Close()
			}
			warm := func(what string) {
				db, _, err := Open(ctx, cfg, []string{runs}, load)
				if err != nil {
					b.Fatal(err)
				}
				ask(db, what)
				db.Close()
			}
			// cpu has the CPU seconds of every timed run, by what it ran.
			cpu := map[string][]float64{}
			timedAs := func(what string, f func()) time.Duration {
				start, c := time.Now(), cpuSeconds()
				f()
				cpu[what] = append(cpu[what], cpuSeconds()-c)
				return time.Since(start)
			}
			timed := func(f func()) time.Duration { return timedAs("", f) }
			// The store is made once, first (its time is a cold load's and
			// more: reported as s-first).
			first := timedAs("first", func() { warm("metric") })
			path := filepath.Join(cache, Key([]string{runs})+Ext)
			var cm, cq, wm, wq, add []time.Duration
			before, _ := os.Stat(path)
			for range 3 {
				cm = append(cm, timedAs("cold", func() { cold("metric") }))
				cq = append(cq, timed(func() { cold("query") }))
				wm = append(wm, timedAs("warm", func() { warm("metric") }))
				wq = append(wq, timed(func() { warm("query") }))
			}
			after, _ := os.Stat(path)
			land := func(dir string) {
				files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
				for _, f := range files {
					if err := os.Rename(f, filepath.Join(runs, filepath.Base(f))); err != nil {
						b.Fatal(err)
					}
				}
			}
			for i := range 3 {
				land(batches[i])
				add = append(add, timedAs("add", func() { warm("metric") }))
			}
			for i := range 3 {
				land(singles[i])
				timedAs("add1file", func() { warm("metric") })
			}
			b.ReportMetric(first.Seconds(), "s-first")
			for _, m := range []struct {
				name string
				ds   []time.Duration
			}{{"cold-metric", cm}, {"cold-query", cq}, {"warm-metric", wm}, {"warm-query", wq}, {"add1pct-metric", add}} {
				b.ReportMetric(minOf(m.ds), "s-min-"+m.name)
				b.ReportMetric(median(m.ds), "s-med-"+m.name)
			}
			b.ReportMetric(first.Seconds()/median(cm), "x-first/cold-metric")
			if c := medianOf(cpu["cold"]); c > 0 {
				b.ReportMetric(cpu["first"][0]/c, "x-cpu-first/cold-metric")
				b.ReportMetric(medianOf(cpu["add"])/c, "x-cpu-add1pct/cold-metric")
				b.ReportMetric(slices.Min(cpu["add"])/slices.Min(cpu["cold"]), "x-cpu-min-add1pct/cold-metric")
				b.ReportMetric(medianOf(cpu["add"]), "cpu-s-med-add1pct")
				b.ReportMetric(medianOf(cpu["cold"]), "cpu-s-med-cold-metric")
				// What every update and every call costs, whatever it
				// adds: the floor of the add's ratio.
				b.ReportMetric(medianOf(cpu["add1file"])/c, "x-cpu-add1file/cold-metric")
				b.ReportMetric(medianOf(cpu["warm"])/c, "x-cpu-warm/cold-metric")
			}
			b.ReportMetric(median(wm)/median(cm), "x-warm/cold-metric")
			b.ReportMetric(median(wq)/median(cq), "x-warm/cold-query")
			b.ReportMetric(median(add)/median(cm), "x-add1pct/cold-metric")
			b.ReportMetric(float64(after.Size()-before.Size()), "B-grown-unchanged")
			if !after.ModTime().Equal(before.ModTime()) {
				b.Errorf("the store's file was written over an unchanged corpus")
			}
			b.ReportMetric(float64(after.Size())/float64(events), "B-store/event")
		})
	}
}

func minOf(ds []time.Duration) float64 { return slices.Min(ds).Seconds() }

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func median(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Seconds()
}
