package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The tests below simulate data with no difference between the sides and
// check that each test's false-alarm rate at alpha = 0.05 is about alpha
// (for the continuous tests: that p is about uniform). With 2,000
// simulations the rate's standard error is 0.005, so the bounds are about
// three of them. Discrete tests (Fisher, exact McNemar) are conservative by
// construction and are checked from above only.

const (
	alpha = 0.05
	sims  = 2000
)

// binom draws Binomial(n, p) by counting uniforms.
func binom(rng *rand.Rand, n int, p float64) int {
	k := 0
	for range n {
		if rng.Float64() < p {
			k++
		}
	}
	return k
}

// rate is the share of ps at or below alpha.
func rate(ps []float64, a float64) float64 {
	k := 0
	for _, p := range ps {
		if p <= a {
			k++
		}
	}
	return float64(k) / float64(len(ps))
}

func TestTwoProportionsHoldsAlphaUnderTheNull(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct {
		name    string
		n       int
		p       float64
		lo, hi  float64
		wantZ   bool
		allowed string
	}{
		{"200 a side at 20% (the z test)", 200, 0.2, 0.035, 0.065, true, ""},
		{"30 a side at 5% (mostly Fisher, conservative)", 30, 0.05, 0, 0.065, false, ""},
	} {
		ps := make([]float64, sims)
		for i := range ps {
			r := TwoProportions(binom(rng, c.n, c.p), c.n, binom(rng, c.n, c.p), c.n)
			ps[i] = r.P
			if c.wantZ && r.Name != NameTwoProportionsZ {
				t.Fatalf("%s: ran %q", c.name, r.Name)
			}
		}
		t.Logf("%s: false-alarm rate %.4f", c.name, rate(ps, alpha))
		if got := rate(ps, alpha); got < c.lo || got > c.hi {
			t.Errorf("%s: false-alarm rate %.4f over %d null datasets, want %.3f–%.3f", c.name, got, sims, c.lo, c.hi)
		}
	}
}

func TestMcNemarHoldsAlphaUnderTheNull(t *testing.T) {
	// 60 scenarios, each passing with its own probability on both sides
	// independently (so a flip either way is equally likely): the discordant
	// count varies around 20–30, crossing the exact/χ² boundary.
	rng := rand.New(rand.NewPCG(23, 24))
	ps := make([]float64, sims)
	for i := range ps {
		b, c := 0, 0
		for range 60 {
			pass := 0.3 + 0.6*rng.Float64()
			before, after := rng.Float64() < pass, rng.Float64() < pass
			switch {
			case before && !after:
				b++
			case !before && after:
				c++
			}
		}
		ps[i] = McNemar(b, c).P
	}
	t.Logf("McNemar false-alarm rate %.4f", rate(ps, alpha))
	if got := rate(ps, alpha); got > 0.065 {
		t.Errorf("McNemar false-alarm rate %.4f over %d null datasets, want ≤ 0.065", got, sims)
	}
}

func TestMannWhitneyPIsUniformUnderTheNull(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, c := range []struct {
		name string
		m, n int
		// round makes ties: values rounded to this many units (0: none).
		round float64
	}{
		{"exact, 12 and 15 values", 12, 15, 0},
		{"normal approximation, 150 and 200 values", 150, 200, 0},
		{"normal approximation with heavy ties", 150, 200, 10},
	} {
		ps := make([]float64, sims)
		for i := range ps {
			x, y := lognormal(rng, c.m, 2, 1), lognormal(rng, c.n, 2, 1)
			if c.round > 0 {
				for j := range x {
					x[j] = math.Round(x[j] / c.round)
				}
				for j := range y {
					y[j] = math.Round(y[j] / c.round)
				}
			}
			ps[i] = MannWhitney(x, y).P
		}
		t.Logf("%s: false-alarm rate %.4f, p ≤ 0.5 share %.4f", c.name, rate(ps, alpha), rate(ps, 0.5))
		if got := rate(ps, alpha); got < 0.035 || got > 0.065 {
			t.Errorf("%s: false-alarm rate %.4f, want 0.035–0.065", c.name, got)
		}
		if got := rate(ps, 0.5); got < 0.46 || got > 0.54 {
			t.Errorf("%s: share of p ≤ 0.5 is %.4f, want about 0.5 (uniform p)", c.name, got)
		}
	}
}

func TestClusteredTwoProportionsHoldsAlphaWhereThePlainTestDoesNot(t *testing.T) {
	// 40 sessions a side of 5–30 calls; each session fails calls at its own
	// rate (Beta(1, 4): mean 20%, strongly clustered). The plain test over
	// calls raises false alarms several times too often; the design-effect
	// corrected one stays near alpha.
	rng := rand.New(rand.NewPCG(27, 28))
	side := func() ([]Cluster, int, int) {
		cs := make([]Cluster, 40)
		x, n := 0, 0
		for i := range cs {
			m := 5 + rng.IntN(26)
			g1, g2 := rng.ExpFloat64(), rng.ExpFloat64()+rng.ExpFloat64()+rng.ExpFloat64()+rng.ExpFloat64()
			k := binom(rng, m, g1/(g1+g2))
			cs[i] = Cluster{k, m}
			x += k
			n += m
		}
		return cs, x, n
	}
	const k = 1000
	clustered, plain := make([]float64, k), make([]float64, k)
	for i := range k {
		a, xa, na := side()
		b, xb, nb := side()
		clustered[i] = ClusteredTwoProportions(a, b).P
		plain[i] = TwoProportions(xa, na, xb, nb).P
	}
	t.Logf("false-alarm rates on clustered data: design-effect corrected %.4f, plain %.4f", rate(clustered, alpha), rate(plain, alpha))
	if got := rate(clustered, alpha); got > 0.075 {
		t.Errorf("clustered false-alarm rate %.4f over %d null datasets, want ≤ 0.075", got, k)
	}
	if got := rate(plain, alpha); got < 0.15 {
		t.Errorf("plain false-alarm rate on clustered data %.4f; expected it well above alpha (≥ 0.15)", got)
	}
}

func TestHolmHoldsTheFamilyWiseRate(t *testing.T) {
	// 20 null metrics per diff: without correction most diffs raise an
	// alarm (1 − 0.95^20 = 64%); Holm keeps any-alarm at or below alpha,
	// and BH (all nulls true, so FDR = FWER) too.
	rng := rand.New(rand.NewPCG(29, 30))
	var raw, holm, bh int
	for range sims {
		p := make([]float64, 20)
		for j := range p {
			p[j] = rng.Float64()
		}
		if minOf(p) <= alpha {
			raw++
		}
		if minOf(Holm(p)) <= alpha {
			holm++
		}
		if minOf(BenjaminiHochberg(p)) <= alpha {
			bh++
		}
	}
	t.Logf("any-alarm rates over 20 null metrics: raw %.4f, Holm %.4f, BH %.4f", float64(raw)/sims, float64(holm)/sims, float64(bh)/sims)
	if r := float64(raw) / sims; r < 0.55 {
		t.Errorf("uncorrected any-alarm rate %.3f, want about 0.64", r)
	}
	for name, k := range map[string]int{"Holm": holm, "BH": bh} {
		if r := float64(k) / sims; r > 0.065 {
			t.Errorf("%s any-alarm rate %.4f, want ≤ 0.065", name, r)
		}
	}
}

func minOf(x []float64) float64 {
	m := math.Inf(1)
	for _, v := range x {
		m = math.Min(m, v)
	}
	return m
}

func TestMannWhitneyClusteredHoldsAlphaWhereThePlainTestDoesNot(t *testing.T) {
	// 40 sessions a side of 5–30 calls, each session with its own latency
	// level: the plain test over calls raises false alarms far too often,
	// the cluster-robust one keeps near alpha.
	rng := rand.New(rand.NewPCG(33, 34))
	side := func() [][]float64 {
		cs := make([][]float64, 40)
		for i := range cs {
			f := math.Exp(0.8 * rng.NormFloat64())
			vs := make([]float64, 5+rng.IntN(26))
			for j := range vs {
				vs[j] = f * math.Exp(0.5*rng.NormFloat64())
			}
			cs[i] = vs
		}
		return cs
	}
	const k = 1000
	robust, plain := make([]float64, k), make([]float64, k)
	for i := range k {
		x, y := side(), side()
		r := MannWhitneyClustered(x, y)
		if r.Name != NameMannWhitneyClustered {
			t.Fatalf("name %q", r.Name)
		}
		robust[i] = r.P
		plain[i] = MannWhitney(slices.Concat(x...), slices.Concat(y...)).P
	}
	t.Logf("false-alarm rates on clustered latencies: cluster-robust %.4f, plain %.4f", rate(robust, alpha), rate(plain, alpha))
	if got := rate(robust, alpha); got > 0.075 || got < 0.025 {
		t.Errorf("cluster-robust false-alarm rate %.4f over %d null datasets, want 0.025–0.075", got, k)
	}
	if got := rate(plain, alpha); got < 0.2 {
		t.Errorf("plain false-alarm rate on clustered data %.4f; expected it well above alpha (≥ 0.2)", got)
	}
}
