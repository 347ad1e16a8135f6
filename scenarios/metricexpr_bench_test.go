package scenarios

import "testing"

// BenchmarkParseThreshold measures parsing one threshold, as Parse does
// for each line of expect.metrics.
func BenchmarkParseThreshold(b *testing.B) {
	srcs := []string{"p95(bash) < 2s", "rate(failure, tool=bash, failure_kind=timeout) <= 0.1", "count(tool_call, tool=read) >= 2", "mean(turns) <= 6"}
	for i := range b.N {
		if _, err := ParseThreshold(srcs[i%len(srcs)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/threshold")
}

// BenchmarkThresholdStage measures what the thresholds add to a Run: the
// same scenario (three tool calls a run, two runs) without and with four
// thresholds, which load its recordings into DuckDB and query them. The
// stage's cost is the difference of ms/scenario.
func BenchmarkThresholdStage(b *testing.B) {
	for _, c := range []struct {
		name       string
		thresholds []string
	}{
		{"none", []string{}},
		{"four", []string{"p50(read) < 1m", "rate(failure, tool=bash) <= 1", "count(tool_call, tool=read) >= 1", "mean(turns) <= 6"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var s *Scenario
			if len(c.thresholds) == 0 {
				s = metricScenario(b, 2, "mean(turns) <= 6")
				s.Expect.Metrics = nil
			} else {
				s = metricScenario(b, 2, c.thresholds...)
			}
			for range b.N {
				runSuite(b, []*Scenario{s}, Options{Parallel: 1})
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/scenario")
		})
	}
}
