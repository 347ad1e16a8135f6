package stats_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/retrace-dev/retrace/stats"
	"github.com/retrace-dev/retrace/synth"
	"github.com/retrace-dev/retrace/trajectory"
)

// corpusSample is what the statistics of a diff read from one corpus:
// per tool, each session's call durations and failure counts, and each
// session's total tokens.
type corpusSample struct {
	events    int
	durations map[string][][]float64 // tool → session → durations
	rates     map[string][]stats.Cluster
	tokens    []float64
}

func sampleCorpus(b *testing.B, opts synth.Options) corpusSample {
	b.Helper()
	c := corpusSample{durations: map[string][][]float64{}, rates: map[string][]stats.Cluster{}}
	var buf bytes.Buffer
	for i := range opts.Sessions {
		buf.Reset()
		if _, err := synth.WriteSession(&buf, opts, i); err != nil {
			b.Fatal(err)
		}
		d := trajectory.NewDecoder(&buf, "session")
		dur := map[string][]float64{}
		calls, failed := map[string]int{}, map[string]int{}
		for {
			ev, err := d.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			c.events++
			switch p := ev.Payload.(type) {
			case *trajectory.ToolCall:
				calls[p.Tool]++
			case *trajectory.ToolFailure:
				failed[p.Tool]++
			case *trajectory.ToolEnd:
				dur[p.Tool] = append(dur[p.Tool], p.DurationMs)
			case *trajectory.SessionEnd:
				c.tokens = append(c.tokens, float64(p.Usage.InputTokens+p.Usage.OutputTokens))
			}
		}
		for tool, n := range calls {
			c.rates[tool] = append(c.rates[tool], stats.Cluster{Successes: failed[tool], N: n})
			c.durations[tool] = append(c.durations[tool], dur[tool])
		}
	}
	return c
}

// BenchmarkDiffStatistics200k is the statistics of one retrace diff of two
// 2000-session synth corpora (about 200k events each; the candidate with
// bash.failure+0.05 and read.p95*1.5): for every tool, its failure rate
// (TwoProportions, Newcombe, and the clustered forms) and its latency
// (p50 and p95 with 2,000 bootstrap resamples, plain and by session, and
// Mann–Whitney plain and clustered); the sessions' tokens likewise; then
// Holm and BH over every p-value. Loading the corpora is not timed.
func BenchmarkDiffStatistics200k(b *testing.B) {
	base := sampleCorpus(b, synth.Options{Sessions: 2000, Seed: 1})
	cand := sampleCorpus(b, synth.Options{Sessions: 2000, Seed: 1, Shifts: []synth.Shift{
		{Tool: "bash", FailurePoints: 0.05}, {Tool: "read", TailFactor: 1.5}}})
	var tools []string
	for t := range base.durations {
		if cand.durations[t] != nil {
			tools = append(tools, t)
		}
	}
	slices.Sort(tools)
	qs := []float64{0.5, 0.95}
	const resamples = 2000
	b.ResetTimer()
	for b.Loop() {
		var ps []float64
		for i, t := range tools {
			bx, cx := base.rates[t], cand.rates[t]
			var x1, n1, x2, n2 int
			for _, k := range bx {
				x1, n1 = x1+k.Successes, n1+k.N
			}
			for _, k := range cx {
				x2, n2 = x2+k.Successes, n2+k.N
			}
			ps = append(ps, stats.TwoProportions(x1, n1, x2, n2).P, stats.ClusteredTwoProportions(bx, cx).P)
			stats.Newcombe(x1, n1, x2, n2, 0.95)
			stats.ClusteredNewcombe(bx, cx, 0.95)
			seed := uint64(i + 1)
			stats.BootstrapQuantileDiffsClustered(base.durations[t], cand.durations[t], qs, resamples, seed, 0.95)
			flatB, flatC := slices.Concat(base.durations[t]...), slices.Concat(cand.durations[t]...)
			stats.BootstrapQuantileDiffs(flatB, flatC, qs, resamples, seed, 0.95)
			ps = append(ps, stats.MannWhitney(flatB, flatC).P, stats.MannWhitneyClustered(base.durations[t], cand.durations[t]).P)
		}
		stats.BootstrapQuantileDiffs(base.tokens, cand.tokens, qs, resamples, 99, 0.95)
		ps = append(ps, stats.MannWhitney(base.tokens, cand.tokens).P)
		stats.Holm(ps)
		stats.BenjaminiHochberg(ps)
	}
	b.ReportMetric(float64(base.events+cand.events), "events")
	b.ReportMetric(float64(len(tools)), "tools")
}
