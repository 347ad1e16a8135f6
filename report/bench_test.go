package report

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/synth"
)

// benchCorpus writes the 2,000-session synthetic corpus of the benchmarks
// (retrace synth --sessions 2000).
func benchCorpus(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "runs")
	if _, err := synth.Write(context.Background(), dir, synth.Options{Sessions: 2000, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkReport2000 measures retrace report over 2,000 synthetic
// sessions, from the files to the HTML: the load with the detectors and
// the liveness table in its pass, Gather and Render (the targets: under
// 10 s, under 5 MB). The baseline, in the same run, is what retrace
// metrics --metric all does over the same corpus: the load and every
// named metric.
func BenchmarkReport2000(b *testing.B) {
	dir := benchCorpus(b)
	ctx := context.Background()
	b.Run("baseline=metrics_all", func(b *testing.B) {
		for b.Loop() {
			db, err := metrics.Open(ctx, metrics.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := db.Load(ctx, dir); err != nil {
				b.Fatal(err)
			}
			for _, name := range metrics.Metrics() {
				if _, err := db.Metric(ctx, name); err != nil {
					b.Fatal(err)
				}
			}
			db.Close()
		}
	})
	b.Run("report", func(b *testing.B) {
		var size, findings int
		for b.Loop() {
			db, err := metrics.Open(ctx, metrics.Options{})
			if err != nil {
				b.Fatal(err)
			}
			rep, live, _, err := detectors.DetectLiveness(ctx, db, []string{dir}, detectors.Catalog(), detectors.Options{})
			if err != nil {
				b.Fatal(err)
			}
			m, err := Gather(ctx, db, rep, live, Options{})
			if err != nil {
				b.Fatal(err)
			}
			var buf bytes.Buffer
			if err := Render(&buf, m); err != nil {
				b.Fatal(err)
			}
			size, findings = buf.Len(), len(m.Findings)
			db.Close()
		}
		b.ReportMetric(float64(size), "bytes")
		b.ReportMetric(float64(findings), "findings")
	})
}
