package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// lognormal returns n log-normal draws, a latency-like sample.
func lognormal(rng *rand.Rand, n int, mu, sigma float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = math.Exp(mu + sigma*rng.NormFloat64())
	}
	return x
}

func TestBootstrapQuantileDiffIsReproducible(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, y := lognormal(rng, 300, 0, 1), lognormal(rng, 300, 0.2, 1)
	d1, ci1 := BootstrapQuantileDiff(x, y, 0.95, 500, 42, 0.95)
	d2, ci2 := BootstrapQuantileDiff(x, y, 0.95, 500, 42, 0.95)
	if d1 != d2 || ci1 != ci2 {
		t.Errorf("same seed gave %v %+v then %v %+v", d1, ci1, d2, ci2)
	}
	_, ci3 := BootstrapQuantileDiff(x, y, 0.95, 500, 43, 0.95)
	if ci3 == ci1 {
		t.Errorf("another seed gave the identical interval %+v", ci3)
	}
	if want := Quantile(y, 0.95) - Quantile(x, 0.95); d1 != want {
		t.Errorf("diff = %v, want quantile(y) − quantile(x) = %v", d1, want)
	}
	if !(ci1.Lo <= d1 && d1 <= ci1.Hi) || ci1.Level != 0.95 {
		t.Errorf("interval %+v does not hold the estimate %v", ci1, d1)
	}
}

// naiveResampleQuantile is the textbook bootstrap step: draw n indices,
// copy, sort, take the quantile.
func naiveResampleQuantile(rng *rand.Rand, s []float64, q float64) float64 {
	b := make([]float64, len(s))
	for i := range b {
		b[i] = s[rng.IntN(len(s))]
	}
	return Quantile(b, q)
}

func TestResamplerMatchesTheNaiveBootstrap(t *testing.T) {
	// The rank-splitting resampler must draw from the same distribution as
	// resampling values one by one: compare the mean and spread of 4,000
	// resampled quantiles of each, for an interpolated and an exact rank.
	s := lognormal(rand.New(rand.NewPCG(3, 4)), 501, 0, 1)
	slices.Sort(s)
	for _, q := range []float64{0.5, 0.95, 0.913} {
		const k = 4000
		fast := make([]float64, k)
		slow := make([]float64, k)
		r := resampler{rng: rand.New(rand.NewPCG(5, 6))}
		nrng := rand.New(rand.NewPCG(7, 8))
		for i := range k {
			fast[i] = r.quantile(s, q)
			slow[i] = naiveResampleQuantile(nrng, s, q)
		}
		mf, sf := meanSD(fast)
		ms, ss := meanSD(slow)
		// Standard error of a mean of 4,000 draws is sd/63; allow 4 of them.
		if math.Abs(mf-ms) > 4*math.Sqrt(sf*sf+ss*ss)/math.Sqrt(k) {
			t.Errorf("q=%v: mean %v (rank splitting) vs %v (naive)", q, mf, ms)
		}
		if math.Abs(sf-ss) > 0.1*ss {
			t.Errorf("q=%v: sd %v (rank splitting) vs %v (naive)", q, sf, ss)
		}
	}
}

func meanSD(x []float64) (mean, sd float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		sd += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(sd / float64(len(x)-1))
}

func TestBootstrapQuantileDiffEdgeCases(t *testing.T) {
	if d, ci := BootstrapQuantileDiff(nil, []float64{1}, 0.5, 100, 1, 0.95); !math.IsNaN(d) || ci.Valid() {
		t.Errorf("empty side: %v %+v, want NaN and an invalid interval", d, ci)
	}
	if d, ci := BootstrapQuantileDiff([]float64{1, 2}, []float64{3, 4}, 0.5, 0, 1, 0.95); d != 2 || ci.Valid() {
		t.Errorf("no resamples: %v %+v, want 2 and an invalid interval", d, ci)
	}
	nan := math.NaN()
	d, ci := BootstrapQuantileDiff([]float64{nan, 5}, []float64{7, nan}, 0.5, 50, 1, 0.9)
	if d != 2 || ci.Lo != 2 || ci.Hi != 2 {
		t.Errorf("one value a side, NaN ignored: %v %+v, want 2 [2, 2]", d, ci)
	}
	d, ci = BootstrapQuantileDiff([]float64{1, 2, 3}, []float64{1, 2, 3}, 1, 50, 1, 0.9)
	if d != 0 || !ci.Contains(0) {
		t.Errorf("max quantile: %v %+v", d, ci)
	}
}

func TestBootstrapQuantileDiffCoversUnderTheNull(t *testing.T) {
	// Two samples of one distribution: the 90% interval of the p95
	// difference should hold 0 in about 90% of datasets. Percentile
	// intervals for tail quantiles run a little narrow at moderate n, so
	// the bound is loose; a broken resampler (e.g. no variance) fails it.
	const sims = 300
	rng := rand.New(rand.NewPCG(9, 10))
	covered := 0
	for i := range sims {
		x, y := lognormal(rng, 400, 0, 1), lognormal(rng, 400, 0, 1)
		_, ci := BootstrapQuantileDiff(x, y, 0.95, 400, uint64(i), 0.90)
		if ci.Contains(0) {
			covered++
		}
	}
	t.Logf("coverage of 0 by the 90%% interval of the p95 difference: %d/%d", covered, sims)
	if rate := float64(covered) / sims; rate < 0.84 || rate > 0.96 {
		t.Errorf("coverage of 0 by the 90%% interval = %d/%d = %.3f, want 0.84–0.96", covered, sims, rate)
	}
}

// clustered returns sessions of values whose level depends on the session:
// a session-wide factor exp(σ_s·Z) times per-call log-normal noise.
func clustered(rng *rand.Rand, sessions, perSession int, sessionSigma float64) [][]float64 {
	out := make([][]float64, sessions)
	for s := range out {
		f := math.Exp(sessionSigma * rng.NormFloat64())
		vs := make([]float64, perSession)
		for i := range vs {
			vs[i] = f * math.Exp(0.5*rng.NormFloat64())
		}
		out[s] = vs
	}
	return out
}

func TestClusteredBootstrapHoldsCoverageWhereThePlainOneDoesNot(t *testing.T) {
	// Strongly clustered data: 30 sessions a side, 40 calls each, the
	// session factor dominating. The plain bootstrap treats 1,200 calls as
	// independent and its interval is far too narrow; resampling sessions
	// keeps near the nominal 90%.
	const sims = 120
	rng := rand.New(rand.NewPCG(11, 12))
	var plain, byCluster int
	for i := range sims {
		x, y := clustered(rng, 30, 40, 1), clustered(rng, 30, 40, 1)
		dc, cc := BootstrapQuantileDiffClustered(x, y, 0.5, 300, uint64(i), 0.90)
		dp, cp := BootstrapQuantileDiff(slices.Concat(x...), slices.Concat(y...), 0.5, 300, uint64(i), 0.90)
		if dc != dp {
			t.Fatalf("clustered diff %v ≠ pooled diff %v", dc, dp)
		}
		if cc.Contains(0) {
			byCluster++
		}
		if cp.Contains(0) {
			plain++
		}
	}
	t.Logf("coverage of 0 by the 90%% interval of the p50 difference on clustered data: by session %d/%d, by value %d/%d", byCluster, sims, plain, sims)
	if rate := float64(byCluster) / sims; rate < 0.80 {
		t.Errorf("clustered coverage = %.3f, want ≥ 0.80", rate)
	}
	if rate := float64(plain) / sims; rate > 0.70 {
		t.Errorf("plain coverage on clustered data = %.3f; expected it to fall well below 0.90 (≤ 0.70)", rate)
	}
}

func TestClusteredResampleQuantileMatchesPooledQuantile(t *testing.T) {
	// With every weight 1 the walk must find Quantile of the pooled values,
	// from either end.
	x := [][]float64{{5, 1}, {}, {3, 9, 2}, {7}}
	s := newClusteredSample(x)
	flat := slices.Concat(x...)
	for _, q := range []float64{0, 0.1, 0.5, 0.51, 0.9, 0.95, 1} {
		got := s.quantileWeighted(q, []int32{1, 1, 1, 1}, len(flat))
		if want := Quantile(flat, q); math.Abs(got-want) > 1e-12 {
			t.Errorf("q=%v: weighted walk %v, Quantile %v", q, got, want)
		}
	}
	// Weight 2 on a cluster counts its values twice.
	for _, c := range []struct {
		w    []int32
		vals []float64
	}{
		{[]int32{0, 0, 2, 1}, []float64{3, 9, 2, 3, 9, 2, 7}},
		{[]int32{3, 0, 0, 1}, []float64{5, 1, 5, 1, 5, 1, 7}},
		{[]int32{0, 5, 1, 0}, []float64{3, 9, 2}},
		{[]int32{1, 0, 0, 4}, []float64{5, 1, 7, 7, 7, 7}},
	} {
		for _, q := range []float64{0, 0.2, 0.5, 0.7, 0.95, 1} {
			got := s.quantileWeighted(q, c.w, len(c.vals))
			if want := Quantile(c.vals, q); math.Abs(got-want) > 1e-12 {
				t.Errorf("weights %v, q=%v: %v, want %v", c.w, q, got, want)
			}
		}
	}
}

func TestClusteredBootstrapEdgeCases(t *testing.T) {
	if d, ci := BootstrapQuantileDiffClustered(nil, [][]float64{{1}}, 0.5, 10, 1, 0.9); !math.IsNaN(d) || ci.Valid() {
		t.Errorf("empty side: %v %+v", d, ci)
	}
	// Mostly empty sessions: resamples of only empty ones are skipped.
	x := [][]float64{{}, {}, {}, {4}}
	y := [][]float64{{}, {6}, {}, {}}
	d, ci := BootstrapQuantileDiffClustered(x, y, 0.5, 200, 3, 0.9)
	if d != 2 || ci.Lo != 2 || ci.Hi != 2 {
		t.Errorf("one value a side among empty sessions: %v %+v, want 2 [2, 2]", d, ci)
	}
}

func TestDesignEffect(t *testing.T) {
	// Independent-looking clusters: every session has the same rate, so
	// the between-session variance is below binomial and deff clamps to 1.
	even := []Cluster{{1, 10}, {1, 10}, {1, 10}, {1, 10}}
	if got := DesignEffect(even); got != 1 {
		t.Errorf("DesignEffect(equal rates) = %v, want 1 (clamped)", got)
	}
	// All-or-nothing sessions: 2 of 4 sessions fail all 10 calls. p = 0.5,
	// Σ(y − p·m)² = 4·25 = 100, var = 4/3·100/40² = 0.08333; binomial
	// var = 0.25/40 = 0.00625; deff = 13.33 and the 40 calls are worth 3.
	allOrNothing := []Cluster{{10, 10}, {0, 10}, {10, 10}, {0, 10}}
	near(t, "deff", DesignEffect(allOrNothing), 40.0/3, 1e-9)
	near(t, "effective n", EffectiveN(allOrNothing), 3, 1e-9)
	p, v := ClusteredProportion(allOrNothing)
	near(t, "p", p, 0.5, 0)
	near(t, "var", v, 1.0/12, 1e-12)
	if got := DesignEffect([]Cluster{{3, 10}, {0, 0}}); !math.IsNaN(got) {
		t.Errorf("DesignEffect of one session with calls = %v, want NaN", got)
	}
	if got := DesignEffect([]Cluster{{0, 10}, {0, 5}}); got != 1 {
		t.Errorf("DesignEffect with p = 0 = %v, want 1", got)
	}
}

func TestClusteredTwoProportions(t *testing.T) {
	// With one call per session the correction is only the ratio
	// estimator's small-sample factor C/(C−1): z shrinks by sqrt(200/199).
	var a, b []Cluster
	for i := range 200 {
		a = append(a, Cluster{boolInt(i < 30), 1})
		b = append(b, Cluster{boolInt(i < 50), 1})
	}
	got, plain := ClusteredTwoProportions(a, b), TwoProportions(30, 200, 50, 200)
	if got.Name != NameRaoScottZ || math.Abs(got.Statistic-plain.Statistic*math.Sqrt(199.0/200)) > 1e-9 {
		t.Errorf("one call per session: %+v, want z of %+v", got, plain)
	}
	// All-or-nothing sessions: the same pooled counts are far weaker
	// evidence than the plain test claims.
	var ca, cb []Cluster
	for i := range 20 {
		ca = append(ca, Cluster{10 * boolInt(i < 6), 10})
		cb = append(cb, Cluster{10 * boolInt(i < 10), 10})
	}
	cl, pl := ClusteredTwoProportions(ca, cb), TwoProportions(60, 200, 100, 200)
	if !(pl.P < 0.001 && cl.P > 0.1) {
		t.Errorf("all-or-nothing sessions: clustered p %v (%s), plain p %v; want ≫ and ≪", cl.P, cl.Name, pl.P)
	}
	if got := ClusteredTwoProportions([]Cluster{{1, 3}}, cb); got.P != 1 {
		t.Errorf("one session on a side: P = %v, want 1", got.P)
	}
	if got := ClusteredTwoProportions([]Cluster{{4, 3}, {0, 1}}, cb); !math.IsNaN(got.P) {
		t.Errorf("invalid cluster: P = %v, want NaN", got.P)
	}
	ci := ClusteredNewcombe(ca, cb, 0.95)
	if !ci.Contains(0.2) || !ci.Contains(0) {
		t.Errorf("ClusteredNewcombe = %+v, want it to hold 0.2 and 0 (wide)", ci)
	}
	if plainCI := Newcombe(60, 200, 100, 200, 0.95); plainCI.Contains(0) {
		t.Errorf("plain Newcombe = %+v unexpectedly holds 0", plainCI)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestManyQuantilesAtOnceGiveWhatOneAtATimeGives(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	x, y := lognormal(rng, 500, 0, 1), lognormal(rng, 400, 0.1, 1)
	for _, q := range []float64{0.5, 0.95} {
		d1, c1 := BootstrapQuantileDiff(x, y, q, 300, 5, 0.95)
		ds, cs := BootstrapQuantileDiffs(x, y, []float64{q}, 300, 5, 0.95)
		if ds[0] != d1 || cs[0] != c1 {
			t.Errorf("q=%v: one quantile %v %+v, the many-quantile form %v %+v", q, d1, c1, ds[0], cs[0])
		}
	}
	cx, cy := clustered(rng, 40, 10, 0.5), clustered(rng, 50, 8, 0.5)
	ds, cs := BootstrapQuantileDiffsClustered(cx, cy, []float64{0.5, 0.95, 2}, 300, 5, 0.9)
	d1, c1 := BootstrapQuantileDiffClustered(cx, cy, 0.5, 300, 5, 0.9)
	if ds[0] != d1 || cs[0] != c1 {
		t.Errorf("clustered p50: alone %v %+v, with others %v %+v", d1, c1, ds[0], cs[0])
	}
	if !cs[1].Valid() || !cs[1].Contains(ds[1]) {
		t.Errorf("clustered p95 = %v %+v", ds[1], cs[1])
	}
	if !math.IsNaN(ds[2]) || cs[2].Valid() {
		t.Errorf("q = 2 gave %v %+v, want NaN", ds[2], cs[2])
	}
}

func TestClusteredBootstrapCoverageOfTheP95(t *testing.T) {
	// The figure doc.go quotes: the 95% interval of the p95 difference of
	// session-clustered latencies, 60 sessions of 20 calls a side, over 200
	// datasets with no difference. Percentile intervals of tail quantiles
	// run a little narrow (91.5% here); far below would be a bug.
	rng := rand.New(rand.NewPCG(41, 42))
	const sims = 200
	covered := 0
	for i := range sims {
		x, y := clustered(rng, 60, 20, 0.5), clustered(rng, 60, 20, 0.5)
		if _, ci := BootstrapQuantileDiffClustered(x, y, 0.95, 500, uint64(i), 0.95); ci.Contains(0) {
			covered++
		}
	}
	t.Logf("p95 difference, 95%% interval, 60 sessions a side: coverage %d/%d", covered, sims)
	if rate := float64(covered) / sims; rate < 0.88 {
		t.Errorf("coverage %.3f, want ≥ 0.88", rate)
	}
}
