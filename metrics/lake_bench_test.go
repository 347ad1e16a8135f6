package metrics

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchRounds is how many times the cold-path benchmarks run each path,
// interleaved, so that they report the min and the median of the same
// number of runs on a machine whose load changes.
const benchRounds = 3

// jqFilter is jq's one aggregation the cold path is compared with: the
// events counted by type, which reads and parses every line once, as a
// load does, and computes one number per type (a load computes every
// named metric).
const jqFilter = `reduce inputs as $e ({}; .[$e.type] += 1)`

// benchLake returns a lake ExportParquet wrote from the corpus dir,
// written once below RETRACE_BENCH_CORPUS (as benchCorpus does) or into a
// temporary directory.
func benchLake(b *testing.B, dir string) string {
	b.Helper()
	root := os.Getenv("RETRACE_BENCH_CORPUS")
	lake := filepath.Join(b.TempDir(), "lake")
	if root != "" {
		lake = filepath.Join(root, filepath.Base(dir)+fmt.Sprintf("-lake-v%d", LakeVersion))
		if _, err := os.Stat(filepath.Join(lake, LakeManifest)); err == nil {
			return lake
		}
	}
	ctx := context.Background()
	db := openLoaded(ctx, b, dir)
	defer db.Close()
	if _, err := db.ExportParquet(ctx, lake, true); err != nil {
		b.Fatal(err)
	}
	return lake
}

// run is one path of a cold-path benchmark: its wall times and the most
// resident memory any run of it held.
type run struct {
	name string
	// f runs the path once and returns the CPU seconds of any child
	// process it waited for, which the process's own CPU time leaves out.
	f          func() float64
	times, cpu []float64
	peak       float64
}

// stats returns the min and the median of the wall times.
func (r *run) stats() (float64, float64) { return minMedian(r.times) }

// minMedian returns the least and the middle of xs.
func minMedian(xs []float64) (float64, float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[0], s[len(s)/2]
}

// interleave runs every path benchRounds times, round by round, and
// reports each path's min and median seconds and peak RSS.
func interleave(b *testing.B, runs ...*run) {
	b.Helper()
	for range benchRounds {
		for _, r := range runs {
			resetPeakRSS()
			start, cpu := time.Now(), cpuTime()
			child := r.f()
			r.times = append(r.times, time.Since(start).Seconds())
			r.cpu = append(r.cpu, (cpuTime()-cpu).Seconds()+child)
			r.peak = max(r.peak, peakRSS())
		}
	}
	for _, r := range runs {
		lo, med := r.stats()
		b.ReportMetric(lo, r.name+"-min-s")
		b.ReportMetric(med, r.name+"-median-s")
		_, cmed := minMedian(r.cpu)
		b.ReportMetric(cmed, r.name+"-median-cpu-s")
		b.ReportMetric(r.peak/(1<<20), r.name+"-peak-RSS-MB")
	}
}

// allMetrics opens an in-memory database, loads paths and asks every
// named metric, as retrace metrics does.
func allMetrics(b *testing.B, paths ...string) {
	ctx := context.Background()
	db, err := Open(ctx, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Load(ctx, paths...); err != nil {
		b.Fatal(err)
	}
	for _, m := range Metrics() {
		if _, err := db.Metric(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLakeMetrics measures the cold path three ways over the same
// events, at each size RETRACE_BENCH_EVENTS names: loading the JSONL
// trajectories and asking every named metric (jsonl), loading the lake
// ExportParquet wrote from them, in place, and asking every named metric
// (lake), and jq's one aggregation over the JSONL (jq, jqFilter; left out
// when jq is not installed). duckdb-floor is DuckDB's own aggregation over
// the lake (events by type and the sum of every tool_end's duration), the
// least any query over it costs. Each runs benchRounds times, interleaved;
// each reports its min and median and its peak RSS, and the ratios are of
// the medians: lake-ratio (lake / jsonl; the budget is 0.3) and
// jq-ratio (jsonl / jq; budget 0.4). Run it as
//
//	RETRACE_BENCH_EVENTS=100k,1M RETRACE_BENCH_CORPUS=/tmp/corpus \
//	  go test -run XXX -bench BenchmarkLakeMetrics -benchtime 1x ./metrics/
func BenchmarkLakeMetrics(b *testing.B) {
	for _, size := range benchSizes(b) {
		dir, events := benchCorpus(b, size)
		lake := benchLake(b, dir)
		b.Run("events="+sizeName(size), func(b *testing.B) {
			jsonl := &run{name: "jsonl", f: func() float64 { allMetrics(b, dir); return 0 }}
			inPlace := &run{name: "lake", f: func() float64 { allMetrics(b, lake); return 0 }}
			floor := &run{name: "duckdb-floor", f: func() float64 {
				ctx := context.Background()
				db, err := Open(ctx, Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				q := "SELECT type, count(*), sum(duration_ms) FROM read_parquet(" + quoteString(filepath.Join(lake, "*", "*"+ParquetExt)) +
					", hive_partitioning = true) GROUP BY type"
				if _, err := db.Query(ctx, q); err != nil {
					b.Fatal(err)
				}
				return 0
			}}
			runs := []*run{jsonl, inPlace, floor}
			var jq *run
			if _, err := exec.LookPath("jq"); err == nil {
				jq = &run{name: "jq", f: func() float64 { return jqAggregate(b, dir) }}
				runs = append(runs, jq)
			}
			for range b.N {
				interleave(b, runs...)
			}
			b.ReportMetric(float64(events), "events")
			_, j := jsonl.stats()
			_, l := inPlace.stats()
			b.ReportMetric(l/j, "lake-ratio")
			_, jc := minMedian(jsonl.cpu)
			_, lc := minMedian(inPlace.cpu)
			b.ReportMetric(lc/jc, "lake-cpu-ratio")
			if jq != nil {
				_, q := jq.stats()
				b.ReportMetric(j/q, "jq-ratio")
				_, qc := minMedian(jq.cpu)
				b.ReportMetric(jc/qc, "jq-cpu-ratio")
			}
		})
	}
}

// jqAggregate runs jq's one aggregation (jqFilter) over every trajectory
// file below dir, fed on stdin one file after another, as cat would, and
// returns jq's CPU seconds.
func jqAggregate(b *testing.B, dir string) float64 {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no trajectories in %s: %v", dir, err)
	}
	pr, pw := io.Pipe()
	go func() {
		for _, f := range files {
			in, err := os.Open(f)
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			_, err = io.Copy(pw, in)
			in.Close()
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.Close()
	}()
	cmd := exec.Command("jq", "-n", "-c", jqFilter)
	cmd.Stdin = pr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("jq: %v", err)
	}
	if !strings.Contains(string(out), `"tool_call"`) {
		b.Fatalf("jq counted %s", out)
	}
	return (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
}

// BenchmarkExportParquet measures retrace export --parquet at each size
// RETRACE_BENCH_EVENTS names: the load of the JSONL and then the export,
// on one database, as the command does. export-s and export-cpu-s are the
// export's wall and CPU time; peak-RSS-MB is the process's peak over both
// (the budget is 1 GB at any size) and export-peak-RSS-MB the
// peak while the export ran. The baseline, run after it on the same
// database, is the export as it was before it streamed: one COPY of every
// event ordered by session and seq, partitioned by date, with DuckDB's
// default memory (one-copy-s, one-copy-cpu-s, one-copy-peak-RSS-MB; left
// out with RETRACE_BENCH_NO_BASELINE set, since it holds gigabytes). Run
// it in a process of its own, so that no earlier benchmark's memory
// counts:
//
//	RETRACE_BENCH_EVENTS=1M RETRACE_BENCH_CORPUS=/tmp/corpus \
//	  go test -run XXX -bench BenchmarkExportParquet -benchtime 1x ./metrics/
func BenchmarkExportParquet(b *testing.B) {
	for _, size := range benchSizes(b) {
		dir, events := benchCorpus(b, size)
		b.Run("events="+sizeName(size), func(b *testing.B) {
			ctx := context.Background()
			var export, exportCPU, one, oneCPU time.Duration
			var peak, exportPeak, onePeak float64
			for range b.N {
				resetPeakRSS()
				db := openLoaded(ctx, b, dir)
				loaded := peakRSS()
				resetPeakRSS()
				start, cpu := time.Now(), cpuTime()
				rep, err := db.ExportParquet(ctx, filepath.Join(b.TempDir(), "lake"), false)
				export += time.Since(start)
				exportCPU += cpuTime() - cpu
				if err != nil {
					db.Close()
					b.Fatal(err)
				}
				if rep.Events != int64(events) {
					b.Fatalf("exported %d events of %d", rep.Events, events)
				}
				exportPeak = max(exportPeak, peakRSS())
				peak = max(peak, loaded, exportPeak)
				if os.Getenv("RETRACE_BENCH_NO_BASELINE") == "" {
					resetPeakRSS()
					start, cpu := time.Now(), cpuTime()
					q := "COPY (SELECT *, CAST(ts AS DATE) AS date FROM raw_events ORDER BY session, seq) TO " +
						quoteString(filepath.Join(b.TempDir(), "one")) + " (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (date))"
					if _, err := db.sql.ExecContext(ctx, q); err != nil {
						db.Close()
						b.Fatal(err)
					}
					one += time.Since(start)
					oneCPU += cpuTime() - cpu
					onePeak = max(onePeak, peakRSS())
				}
				db.Close()
			}
			n := float64(b.N)
			b.ReportMetric(export.Seconds()/n, "export-s")
			b.ReportMetric(exportCPU.Seconds()/n, "export-cpu-s")
			b.ReportMetric(peak/(1<<20), "peak-RSS-MB")
			b.ReportMetric(exportPeak/(1<<20), "export-peak-RSS-MB")
			if one > 0 {
				b.ReportMetric(one.Seconds()/n, "one-copy-s")
				b.ReportMetric(oneCPU.Seconds()/n, "one-copy-cpu-s")
				b.ReportMetric(onePeak/(1<<20), "one-copy-peak-RSS-MB")
			}
		})
	}
}
