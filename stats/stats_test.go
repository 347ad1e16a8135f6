package stats

import (
	"math"
	"testing"
)

// near fails the test when got and want differ by more than tol.
func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %.6g, want %.6g ± %g", what, got, want, tol)
	}
}

func TestWilsonMatchesNewcombe1998a(t *testing.T) {
	// Newcombe RG (1998), "Two-sided confidence intervals for the single
	// proportion: comparison of seven methods", Stat Med 17:857–872,
	// Table I, method 3 (score interval without continuity correction).
	cases := []struct {
		x, n   int
		lo, hi float64
	}{
		{81, 263, 0.2553, 0.3662},
		{15, 148, 0.0624, 0.1605},
		{0, 20, 0, 0.1611},
		{1, 29, 0.0061, 0.1718},
	}
	for _, c := range cases {
		got := Wilson(c.x, c.n, 0.95)
		near(t, "Wilson lo", got.Lo, c.lo, 5e-5)
		near(t, "Wilson hi", got.Hi, c.hi, 5e-5)
		if got.Level != 0.95 {
			t.Errorf("Level = %v, want 0.95", got.Level)
		}
	}
}

func TestWilsonEdgeCases(t *testing.T) {
	if got := Wilson(0, 0, 0.95); got.Lo != 0 || got.Hi != 1 {
		t.Errorf("Wilson with n = 0 = %+v, want [0, 1]", got)
	}
	if got := Wilson(20, 20, 0.95); got.Hi != 1 || !(got.Lo > 0.83 && got.Lo < 0.84) {
		t.Errorf("Wilson with all successes = %+v, want [0.8389, 1]", got)
	}
	for _, bad := range []struct{ x, n int }{{-1, 5}, {6, 5}, {0, -1}} {
		if got := Wilson(bad.x, bad.n, 0.95); got.Valid() {
			t.Errorf("Wilson(%d, %d) = %+v, want an invalid interval", bad.x, bad.n, got)
		}
	}
	for _, level := range []float64{0, 1, -0.5, math.NaN()} {
		if got := Wilson(1, 2, level); got.Valid() {
			t.Errorf("Wilson at level %v = %+v, want an invalid interval", level, got)
		}
	}
}

func TestNewcombeMatchesNewcombe1998b(t *testing.T) {
	// Newcombe RG (1998), "Interval estimation for the difference between
	// independent proportions: comparison of eleven methods", Stat Med
	// 17:873–890, Table II, method 10. The paper's θ is p1 − p2 with p1
	// first (56/70 − 48/80); Newcombe here returns p2 − p1, so the paper's
	// first sample is passed second.
	cases := []struct {
		name           string
		x1, n1, x2, n2 int
		lo, hi         float64
	}{
		{"(a) 56/70 − 48/80", 48, 80, 56, 70, 0.0524, 0.3339},
		{"(b) 9/10 − 3/10", 3, 10, 9, 10, 0.1705, 0.8090},
		{"(e) 0/10 − 0/20", 0, 20, 0, 10, -0.1611, 0.2775},
	}
	for _, c := range cases {
		got := Newcombe(c.x1, c.n1, c.x2, c.n2, 0.95)
		near(t, c.name+" lo", got.Lo, c.lo, 5e-5)
		near(t, c.name+" hi", got.Hi, c.hi, 5e-5)
	}
	// Swapping the samples mirrors the interval.
	a, b := Newcombe(48, 80, 56, 70, 0.95), Newcombe(56, 70, 48, 80, 0.95)
	near(t, "mirrored lo", b.Lo, -a.Hi, 1e-12)
	near(t, "mirrored hi", b.Hi, -a.Lo, 1e-12)
}

func TestNewcombeEdgeCases(t *testing.T) {
	if got := Newcombe(0, 0, 3, 10, 0.95); got.Lo != -1 || got.Hi != 1 {
		t.Errorf("Newcombe with an empty side = %+v, want [-1, 1]", got)
	}
	if got := Newcombe(10, 10, 0, 10, 0.95); got.Lo != -1 || !(got.Hi < -0.6) {
		t.Errorf("Newcombe 10/10 → 0/10 = %+v, want [-1, < -0.6]", got)
	}
	if got := Newcombe(3, 2, 1, 1, 0.95); got.Valid() {
		t.Errorf("Newcombe with x > n = %+v, want invalid", got)
	}
}

func TestFisherMatchesR(t *testing.T) {
	// R's ?fisher.test examples. TeaTasting: matrix(c(3, 1, 1, 3)),
	// p-value = 0.4857. Convictions (Fisher 1962): dizygotic 2 convicted of
	// 17, monozygotic 10 of 13; fisher.test(Convictions) two-sided p-value
	// = 0.0005367.
	near(t, "TeaTasting p", Fisher(3, 4, 1, 4).P, 0.4857, 5e-5)
	near(t, "Convictions p", Fisher(2, 17, 10, 13).P, 0.0005367, 5e-8)
	if got := Fisher(2, 17, 10, 13); got.Name != NameFisher || got.Statistic != 2 {
		t.Errorf("Fisher = %+v, want name %q and statistic 2", got, NameFisher)
	}
}

func TestFisherEdgeCases(t *testing.T) {
	for _, c := range []struct{ x1, n1, x2, n2 int }{{0, 0, 0, 0}, {0, 0, 3, 9}, {5, 5, 7, 7}, {0, 5, 0, 7}} {
		if got := Fisher(c.x1, c.n1, c.x2, c.n2).P; got != 1 {
			t.Errorf("Fisher%v p = %v, want 1 (one possible table)", c, got)
		}
	}
	if got := Fisher(-1, 3, 1, 3).P; !math.IsNaN(got) {
		t.Errorf("Fisher with a negative count p = %v, want NaN", got)
	}
	// Large unbalanced counts neither overflow nor lose the tiny p-value.
	if got := Fisher(0, 100000, 40, 100000).P; !(got > 0 && got < 1e-10) {
		t.Errorf("Fisher 0/100000 vs 40/100000 p = %v, want a tiny positive p", got)
	}
}

func TestTwoProportionsChoosesItsTest(t *testing.T) {
	// R: prop.test(c(15, 25), c(50, 50), correct = FALSE) gives
	// X-squared = 4.1667, p-value = 0.04123; z = sqrt(X-squared), positive
	// because the second rate is higher.
	got := TwoProportions(15, 50, 25, 50)
	if got.Name != NameTwoProportionsZ {
		t.Fatalf("TwoProportions(15/50, 25/50).Name = %q, want the z test", got.Name)
	}
	near(t, "z²", got.Statistic*got.Statistic, 4.1667, 5e-5)
	if got.Statistic <= 0 {
		t.Errorf("z = %v, want positive (p2 > p1)", got.Statistic)
	}
	near(t, "p", got.P, 0.04123, 5e-6)
	// An expected cell below 5 switches to Fisher.
	small := TwoProportions(3, 4, 1, 4)
	if small.Name != NameFisher {
		t.Errorf("TwoProportions(3/4, 1/4).Name = %q, want Fisher", small.Name)
	}
	near(t, "small p", small.P, 0.4857, 5e-5)
}

func TestMcNemar(t *testing.T) {
	// Exact: b = 1, c = 9: 2·P(X <= 1 | 10, 1/2) = 2·11/1024 (R:
	// binom.test(1, 10)$p.value = 0.02148).
	got := McNemar(1, 9)
	if got.Name != NameMcNemarExact {
		t.Errorf("McNemar(1, 9).Name = %q, want exact", got.Name)
	}
	near(t, "exact p", got.P, 22.0/1024, 1e-12)
	// χ²: Agresti, Franklin & Klingenberg, Statistics (5th ed.), ch. 10
	// example 17: discordant pairs 16 and 58. With continuity correction
	// (R: mcnemar.test(matrix(c(1921, 16, 58, 5), 2))) McNemar's
	// chi-squared = (|16 − 58| − 1)² / 74 = 22.716, p-value = 1.878e-06.
	chi := McNemar(16, 58)
	if chi.Name != NameMcNemarChiSquared {
		t.Errorf("McNemar(16, 58).Name = %q, want χ²", chi.Name)
	}
	near(t, "χ²", chi.Statistic, 22.716, 5e-4)
	near(t, "χ² p", chi.P, 1.878e-06, 5e-9)
	if got := McNemar(0, 0); got.P != 1 {
		t.Errorf("McNemar(0, 0).P = %v, want 1", got.P)
	}
	if got := McNemar(12, 13); got.Name != NameMcNemarChiSquared {
		t.Errorf("McNemar at b + c = 25 = %q, want χ²", got.Name)
	}
	if got := McNemar(-1, 3); !math.IsNaN(got.P) {
		t.Errorf("McNemar(-1, 3).P = %v, want NaN", got.P)
	}
}

func TestMannWhitneyMatchesR(t *testing.T) {
	// R's ?wilcox.test: wilcox.test(x, y) for these depression scores gives
	// W = 35, p-value = 0.2544 (exact: no ties, both samples under 50).
	x := []float64{0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46}
	y := []float64{1.15, 0.88, 0.90, 0.74, 1.21}
	got := MannWhitney(x, y)
	if got.Name != NameMannWhitneyExact || got.Statistic != 35 {
		t.Errorf("MannWhitney = %+v, want exact with W = 35", got)
	}
	near(t, "p", got.P, 0.2544, 5e-5)
	// Swapping the samples gives U' = m·n − U and the same p.
	sw := MannWhitney(y, x)
	if sw.Statistic != 15 || math.Abs(sw.P-got.P) > 1e-12 {
		t.Errorf("swapped = %+v, want W = 15 and p %v", sw, got.P)
	}
}

func TestMannWhitneyExactCountsSumToBinomial(t *testing.T) {
	// Every ordering of m x's among m + n values is counted once.
	for _, c := range []struct{ m, n int }{{1, 1}, {3, 4}, {10, 5}, {49, 49}} {
		var total float64
		for _, v := range mannWhitneyCounts(c.m, c.n) {
			total += v
		}
		want := math.Exp(lchoose(c.m+c.n, c.m))
		if math.Abs(total-want) > 1e-9*want {
			t.Errorf("Σ counts(%d, %d) = %g, want C(%d, %d) = %g", c.m, c.n, total, c.m+c.n, c.m, want)
		}
	}
}

func TestMannWhitneyNormalWithTies(t *testing.T) {
	// Worked by hand from the definition R uses (tie-corrected variance,
	// continuity correction 1/2): x = 1 1 2 3, y = 2 3 3 4 4. Mid-ranks
	// 1.5 1.5 3.5 6 for x: R1 = 12.5, U = 12.5 − 10 = 2.5; ties of sizes
	// 2, 2, 3, 2 give Σ(t³−t) = 6+6+24+6 = 42; var = 20/12·(10 − 42/72) =
	// 15.694; z = (2.5 − 10 + 0.5)/3.9616 = −1.7670; p = 0.07724.
	got := MannWhitney([]float64{1, 1, 2, 3}, []float64{2, 3, 3, 4, 4})
	if got.Name != NameMannWhitneyNormal || got.Statistic != 2.5 {
		t.Errorf("MannWhitney = %+v, want the normal approximation with U = 2.5", got)
	}
	near(t, "p", got.P, 0.07724, 5e-5)
}

func TestMannWhitneyEdgeCases(t *testing.T) {
	if got := MannWhitney(nil, []float64{1}); got.P != 1 {
		t.Errorf("MannWhitney with an empty side P = %v, want 1", got.P)
	}
	if got := MannWhitney([]float64{2, 2, 2}, []float64{2, 2}); got.P != 1 {
		t.Errorf("MannWhitney with every value tied P = %v, want 1", got.P)
	}
	nan := math.NaN()
	a := MannWhitney([]float64{nan, 1, 2, 3}, []float64{4, 5, nan})
	b := MannWhitney([]float64{1, 2, 3}, []float64{4, 5})
	if a != b {
		t.Errorf("NaN values not ignored: %+v vs %+v", a, b)
	}
}

func TestQuantileMatchesTypeSeven(t *testing.T) {
	// R: quantile(c(1, 2, 3, 4, 10), c(0, .25, .5, .95, 1)) (type 7) =
	// 1, 2, 3, 8.8, 10; DuckDB's quantile_cont agrees.
	x := []float64{10, 3, 1, 4, 2}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.25, 2}, {0.5, 3}, {0.95, 8.8}, {1, 10}} {
		near(t, "quantile", Quantile(x, c.q), c.want, 1e-12)
	}
	if x[0] != 10 {
		t.Error("Quantile modified its input")
	}
	for _, c := range []struct {
		x []float64
		q float64
	}{{nil, 0.5}, {[]float64{math.NaN()}, 0.5}, {x, -0.1}, {x, 1.1}, {x, math.NaN()}} {
		if got := Quantile(c.x, c.q); !math.IsNaN(got) {
			t.Errorf("Quantile(%v, %v) = %v, want NaN", c.x, c.q, got)
		}
	}
	near(t, "one value", Quantile([]float64{7}, 0.95), 7, 0)
}

func TestHolmAndBHMatchR(t *testing.T) {
	// R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") =
	// 0.03 0.06 0.06 0.02 and "BH" = 0.02 0.04 0.04 0.02.
	p := []float64{0.01, 0.04, 0.03, 0.005}
	wantHolm := []float64{0.03, 0.06, 0.06, 0.02}
	wantBH := []float64{0.02, 0.04, 0.04, 0.02}
	h, bh := Holm(p), BenjaminiHochberg(p)
	for i := range p {
		near(t, "Holm", h[i], wantHolm[i], 1e-12)
		near(t, "BH", bh[i], wantBH[i], 1e-12)
	}
	// NaN stays NaN and does not count: this is the m = 2 adjustment.
	h2 := Holm([]float64{0.02, math.NaN(), 0.04})
	if !math.IsNaN(h2[1]) || math.Abs(h2[0]-0.04) > 1e-12 || math.Abs(h2[2]-0.04) > 1e-12 {
		t.Errorf("Holm with NaN = %v, want [0.04 NaN 0.04]", h2)
	}
	if len(Holm(nil)) != 0 || len(BenjaminiHochberg(nil)) != 0 {
		t.Error("adjusting no p-values returned some")
	}
	if got := Holm([]float64{0.9, 0.8}); got[0] != 1 || got[1] != 1 {
		t.Errorf("Holm caps at 1: got %v", got)
	}
}

func TestMannWhitneyClustered(t *testing.T) {
	// One value per cluster: the statistic is MannWhitney's U and the p
	// value close to its normal approximation (DeLong's variance in place
	// of the null one).
	x := []float64{0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46}
	y := []float64{1.15, 0.88, 0.90, 0.74, 1.21}
	singles := func(v []float64) [][]float64 {
		out := make([][]float64, len(v))
		for i := range v {
			out[i] = v[i : i+1]
		}
		return out
	}
	got := MannWhitneyClustered(singles(x), singles(y))
	if got.Statistic != 35 {
		t.Errorf("U = %v, want 35 (R's W)", got.Statistic)
	}
	// θ = 1 − 35/50 = 0.3. DeLong et al. (1988) from the placements, by
	// hand: S10 = 0.17111 (x), S01 = 0.015 (y), var = S10/10 + S01/5 =
	// 0.020111, z = −0.2/0.14182 = −1.4103, p = 0.15845 (rough at 10 and 5
	// values: the exact p is 0.2544).
	near(t, "p", got.P, 0.15845, 5e-5)
	// A clear shift of whole sessions is found.
	var a, b [][]float64
	for i := range 30 {
		a = append(a, []float64{1 + float64(i%5), 2 + float64(i%5), 3})
		b = append(b, []float64{3 + float64(i%5), 4 + float64(i%5), 5})
	}
	if r := MannWhitneyClustered(a, b); r.P > 1e-4 {
		t.Errorf("shifted sessions: p = %v, want tiny", r.P)
	}
	if r := MannWhitneyClustered(b, b); r.P != 1 && math.Abs(r.P-1) > 1e-9 {
		t.Errorf("a sample against itself: p = %v, want 1", r.P)
	}
	for _, c := range []struct{ x, y [][]float64 }{
		{nil, b}, {[][]float64{{1, 2, 3}}, b}, {[][]float64{{math.NaN()}, {}}, b}, {[][]float64{{2}, {2}}, [][]float64{{2}, {2}}},
	} {
		if r := MannWhitneyClustered(c.x, c.y); r.P != 1 {
			t.Errorf("MannWhitneyClustered(%v, …).P = %v, want 1 (cannot decide)", c.x, r.P)
		}
	}
}

func TestMoreRunsToReach(t *testing.T) {
	// Halving a half-width takes four times the runs: 400 in all, 300 more.
	if got := MoreRunsToReach(100, 0.1, 0.05); got != 300 {
		t.Errorf("MoreRunsToReach(100, 0.1, 0.05) = %d, want 300", got)
	}
	// It agrees with Wilson: at p = 0.3 the 95% half-width at n = 100 is
	// about 0.089; the n it names gives a half-width at or below 0.03.
	w := Wilson(30, 100, 0.95)
	more := MoreRunsToReach(100, (w.Hi-w.Lo)/2, 0.03)
	n := 100 + more
	w2 := Wilson(int(math.Round(0.3*float64(n))), n, 0.95)
	if h := (w2.Hi - w2.Lo) / 2; h > 0.0305 || h < 0.028 {
		t.Errorf("after %d more runs the half-width is %v, want about 0.03", more, h)
	}
	if got := MoreRunsToReach(50, 0.01, 0.02); got != 0 {
		t.Errorf("already narrow: %d, want 0", got)
	}
	for _, c := range []struct {
		n    int
		h, t float64
	}{{0, 0.1, 0.05}, {10, math.NaN(), 0.05}, {10, 0.1, 0}, {10, math.Inf(1), 0.1}, {10, 0.1, -1}} {
		if got := MoreRunsToReach(c.n, c.h, c.t); got != -1 {
			t.Errorf("MoreRunsToReach(%d, %v, %v) = %d, want -1", c.n, c.h, c.t, got)
		}
	}
	if got := MoreRunsToReach(1000, 1, 1e-6); got != math.MaxInt32 {
		t.Errorf("huge: %d, want MaxInt32", got)
	}
}
