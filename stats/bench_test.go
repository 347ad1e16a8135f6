package stats

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkBootstrapQuantileDiff is the diff's distribution metric at the
// issue's scale: 2,000 resamples of the p95 difference of 20k against 20k
// values (a 200k-event corpus holds about that many calls of its busiest
// tool).
func BenchmarkBootstrapQuantileDiff(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := lognormal(rng, 20000, 3, 1), lognormal(rng, 20000, 3.1, 1)
	const resamples = 2000
	b.ResetTimer()
	for b.Loop() {
		BootstrapQuantileDiff(x, y, 0.95, resamples, 7, 0.95)
	}
	b.ReportMetric(float64(resamples)*float64(b.N)/b.Elapsed().Seconds(), "resamples/s")
}

// BenchmarkBootstrapQuantileDiffNaive is the baseline the rank-splitting
// resampler is measured against: each resample draws 20k values, sorts a
// copy and takes the quantile (200 resamples, reported per resample too).
func BenchmarkBootstrapQuantileDiffNaive(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := lognormal(rng, 20000, 3, 1), lognormal(rng, 20000, 3.1, 1)
	const resamples = 200
	buf := make([]float64, len(x))
	b.ResetTimer()
	for b.Loop() {
		r := rand.New(rand.NewPCG(7, 7))
		d := make([]float64, resamples)
		for i := range d {
			for j := range buf {
				buf[j] = y[r.IntN(len(y))]
			}
			slices.Sort(buf)
			qy := QuantileSorted(buf, 0.95)
			for j := range buf {
				buf[j] = x[r.IntN(len(x))]
			}
			slices.Sort(buf)
			d[i] = qy - QuantileSorted(buf, 0.95)
		}
		percentileInterval(d, 0.95)
	}
	b.ReportMetric(float64(resamples)*float64(b.N)/b.Elapsed().Seconds(), "resamples/s")
}

// BenchmarkBootstrapQuantileDiffClustered resamples sessions: 1,000
// sessions of 20 calls a side (20k values), 2,000 resamples of the p95.
func BenchmarkBootstrapQuantileDiffClustered(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := clustered(rng, 1000, 20, 0.5), clustered(rng, 1000, 20, 0.5)
	const resamples = 2000
	b.ResetTimer()
	for b.Loop() {
		BootstrapQuantileDiffClustered(x, y, 0.95, resamples, 7, 0.95)
	}
	b.ReportMetric(float64(resamples)*float64(b.N)/b.Elapsed().Seconds(), "resamples/s")
}

// BenchmarkMannWhitney20k is the rank test on 20k against 20k values.
func BenchmarkMannWhitney20k(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := lognormal(rng, 20000, 3, 1), lognormal(rng, 20000, 3.1, 1)
	for b.Loop() {
		MannWhitney(x, y)
	}
}

// BenchmarkBootstrapQuantileDiffsClusteredP50P95 is one tool's latency as
// diff reports it: p50 and p95 from the same 2,000 resamples of 1,000
// sessions a side (20k values).
func BenchmarkBootstrapQuantileDiffsClusteredP50P95(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := clustered(rng, 1000, 20, 0.5), clustered(rng, 1000, 20, 0.5)
	const resamples = 2000
	for b.Loop() {
		BootstrapQuantileDiffsClustered(x, y, []float64{0.5, 0.95}, resamples, 7, 0.95)
	}
	b.ReportMetric(float64(resamples)*float64(b.N)/b.Elapsed().Seconds(), "resamples/s")
}

// BenchmarkMannWhitneyClustered20k is the cluster-robust rank test on
// 1,000 sessions of 20 values a side.
func BenchmarkMannWhitneyClustered20k(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := clustered(rng, 1000, 20, 0.5), clustered(rng, 1000, 20, 0.5)
	for b.Loop() {
		MannWhitneyClustered(x, y)
	}
}
