package diff

import (
	"context"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/synth"
)

// benchSessions gives a corpus of about 200,000 events (synth sessions
// average about 100).
const benchSessions = 2000

// BenchmarkDiff measures retrace diff over two corpora of about 200k
// events each, with 2,000 bootstrap resamples per distribution row: the
// load of both sides with the detectors (load_s), the comparison alone
// (compare_s) and the whole (total_s). Run with -benchtime=1x.
func BenchmarkDiff(b *testing.B) {
	baseDir := writeCorpus(b, "base", synth.Options{Sessions: benchSessions, Seed: 1})
	candDir := writeCorpus(b, "cand", synth.Options{Sessions: benchSessions, Seed: 2})
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		base := load(b, "base", baseDir)
		cand := load(b, "cand", candDir)
		loaded := time.Now()
		res, err := Compare(context.Background(), base, cand, Options{Resamples: DefaultResamples})
		if err != nil {
			b.Fatal(err)
		}
		end := time.Now()
		b.ReportMetric(loaded.Sub(start).Seconds(), "load_s")
		b.ReportMetric(end.Sub(loaded).Seconds(), "compare_s")
		b.ReportMetric(end.Sub(start).Seconds(), "total_s")
		b.ReportMetric(float64(len(res.Rows)), "rows")
		var events float64
		for _, in := range []Input{base, cand} {
			tab, err := in.DB.Query(context.Background(), "SELECT count(*) FROM events")
			if err != nil {
				b.Fatal(err)
			}
			n, _ := metrics.ValueNumber(tab.Rows[0][0])
			events += n
		}
		b.ReportMetric(events, "events")
	}
}

// BenchmarkMetricsAllBaseline is the baseline of BenchmarkDiff: what
// retrace metrics --metric all costs over the same two corpora (load
// without detectors, then every named metric).
func BenchmarkMetricsAllBaseline(b *testing.B) {
	baseDir := writeCorpus(b, "base", synth.Options{Sessions: benchSessions, Seed: 1})
	candDir := writeCorpus(b, "cand", synth.Options{Sessions: benchSessions, Seed: 2})
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		for _, dir := range []string{baseDir, candDir} {
			db, err := metrics.Open(ctx, metrics.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := db.Load(ctx, dir); err != nil {
				b.Fatal(err)
			}
			for _, m := range metrics.Metrics() {
				if _, err := db.Metric(ctx, m); err != nil {
					b.Fatal(err)
				}
			}
			db.Close()
		}
		b.ReportMetric(time.Since(start).Seconds(), "total_s")
	}
}
