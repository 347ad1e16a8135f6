package metrics

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// eventsPerSession turns a corpus size in events into synth sessions: a
// session holds about 101 events, so 1M events are 10,000 sessions (1.01M
// events).
const eventsPerSession = 100

// benchSizes returns the corpus sizes, in events, the scale benchmarks
// run at: RETRACE_BENCH_EVENTS, a comma list such as "100k,1M,3M" (k and
// M are 1,000 and 1,000,000), or 1M.
func benchSizes(b *testing.B) []int {
	spec := os.Getenv("RETRACE_BENCH_EVENTS")
	if spec == "" {
		spec = "1M"
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

// benchCorpus returns a directory holding a synth corpus of about events
// events, and its exact number of events. With RETRACE_BENCH_CORPUS set
// the corpus is written once below that directory and reused by later
// runs (the same flags write the same bytes); otherwise it is written to a
// temporary directory.
func benchCorpus(b *testing.B, events int) (string, int) {
	b.Helper()
	sessions := max(events/eventsPerSession, 1)
	root := os.Getenv("RETRACE_BENCH_CORPUS")
	if root == "" {
		dir := b.TempDir()
		return dir, writeCorpus(b, dir, sessions)
	}
	dir := filepath.Join(root, fmt.Sprintf("synth-seed1-%d", sessions))
	count := filepath.Join(dir, "events.count")
	if data, err := os.ReadFile(count); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			return dir, n
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	n := writeCorpus(b, dir, sessions)
	// Written last, so a corpus cut short is written again.
	if err := os.WriteFile(count, []byte(strconv.Itoa(n)), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir, n
}

// sizeName names a corpus size as RETRACE_BENCH_EVENTS spells it.
func sizeName(n int) string {
	switch {
	case n%1000000 == 0:
		return strconv.Itoa(n/1000000) + "M"
	case n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// resetPeakRSS makes the kernel's high-water mark of the process's
// resident memory start again from what it holds now, so that each
// benchmark reports its own peak. It reports false where that is not
// possible (not Linux, or /proc not writable): the peak is then the
// process's since it started.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSS returns the process's peak resident memory (VmHWM) in bytes: Go
// heap and DuckDB's memory together, which is what a machine has to hold.
// 0 where /proc/self/status is not there.
func peakRSS() float64 {
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

// measure runs f b.N times and reports its wall time per run (s/op), the
// CPU time of the process per run (cpu-s/op: every core, DuckDB's threads
// included, so it stays meaningful on a loaded machine), events/s of
// wall time, and the peak resident memory while it ran.
func measure(b *testing.B, events int, f func()) {
	b.Helper()
	resetPeakRSS()
	cpu := cpuTime()
	b.ResetTimer()
	for range b.N {
		f()
	}
	b.StopTimer()
	wall := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(wall, "s/op")
	b.ReportMetric((cpuTime()-cpu).Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(events)/wall, "events/s")
	b.ReportMetric(peakRSS()/(1<<20), "peak-RSS-MB")
}

// openLoaded opens an in-memory database and loads dir into it; the
// caller closes it.
func openLoaded(ctx context.Context, b *testing.B, dir string) *DB {
	b.Helper()
	db, err := Open(ctx, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.Load(ctx, dir); err != nil {
		db.Close()
		b.Fatal(err)
	}
	return db
}

// BenchmarkLoadAndMetrics loads a synth corpus and runs every named
// metric over it, at each size RETRACE_BENCH_EVENTS names (default 1M
// events; e.g. RETRACE_BENCH_EVENTS=100k,1M,3M), as retrace metrics
// --metric all does. The baseline, measured in the same run over the same
// files, is DuckDB's own typed read_json of the files into one table (no
// check, no metric; left out above 3M events, as it holds about 3 GB per
// million events). insert-floor is what no loader can go below: DuckDB
// copying the rows a load made into new tables of the same columns, with
// nothing to parse or check (the peak RSS then holds the loaded rows and
// their copy). read-json-floor is what no loader that hands DuckDB JSON
// can go below: DuckDB reading the rows a load made back from JSONL files
// of one event type each (written by DuckDB before the timing starts)
// into new tables, typed as the load reads its staged chunks. Each
// reports s/op, cpu-s/op, events/s and the peak RSS of the process. Run
// it as
//
//	RETRACE_BENCH_EVENTS=100k,1M,3M RETRACE_BENCH_CORPUS=/tmp/corpus \
//	  go test -run XXX -bench BenchmarkLoadAndMetrics -benchtime 1x ./metrics/
func BenchmarkLoadAndMetrics(b *testing.B) {
	for _, size := range benchSizes(b) {
		dir, events := benchCorpus(b, size)
		ctx := context.Background()
		b.Run("events="+sizeName(size)+"/retrace", func(b *testing.B) {
			var load, all time.Duration
			measure(b, events, func() {
				start := time.Now()
				db := openLoaded(ctx, b, dir)
				defer db.Close()
				loaded := time.Now()
				for _, m := range Metrics() {
					if _, err := db.Metric(ctx, m); err != nil {
						b.Fatal(err)
					}
				}
				load += loaded.Sub(start)
				all += time.Since(start)
			})
			b.ReportMetric(load.Seconds()/float64(b.N), "load-s/op")
			b.ReportMetric((all-load).Seconds()/float64(b.N), "metrics-s/op")
		})
		b.Run("events="+sizeName(size)+"/insert-floor", func(b *testing.B) {
			db := openLoaded(ctx, b, dir)
			defer db.Close()
			measure(b, events, func() {
				for _, t := range trajectory.EventTypes() {
					q := "CREATE OR REPLACE TABLE " + quoteIdent("copy_"+string(t)) + " AS SELECT * FROM " + typeTable(t)
					if _, err := db.sql.ExecContext(ctx, q); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		b.Run("events="+sizeName(size)+"/read-json-floor", func(b *testing.B) {
			db := openLoaded(ctx, b, dir)
			defer db.Close()
			tmp := b.TempDir()
			for _, t := range trajectory.EventTypes() {
				q := "COPY " + typeTable(t) + " TO " + quoteString(filepath.Join(tmp, string(t)+".jsonl")) + " (FORMAT json)"
				if _, err := db.sql.ExecContext(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
			measure(b, events, func() {
				for _, t := range trajectory.EventTypes() {
					q := "CREATE OR REPLACE TABLE " + quoteIdent("copy_"+string(t)) + " AS SELECT * FROM read_json(" +
						quoteString(filepath.Join(tmp, string(t)+".jsonl")) + ", format = 'newline_delimited', columns = " + columnsSQL(tableColumns(t)) + ")"
					if _, err := db.sql.ExecContext(ctx, q); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		if size > 3000000 {
			// read_json into memory holds about 3 GB per million events.
			continue
		}
		b.Run("events="+sizeName(size)+"/read_json", func(b *testing.B) {
			measure(b, events, func() {
				db, err := Open(ctx, Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				q := "CREATE TABLE direct AS SELECT * FROM read_json(" + quoteString(filepath.Join(dir, "*.jsonl")) +
					", format = 'newline_delimited', filename = true, columns = " + columnsSQL(Columns()) + ")"
				if _, err := db.sql.ExecContext(ctx, q); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
