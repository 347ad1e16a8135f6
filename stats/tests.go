package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Test is a hypothesis test's result: its name as reported to users
// ("Fisher's exact test", "McNemar (exact binomial)", "Mann–Whitney U
// (normal approximation, tie-corrected)", ...), its statistic and two-sided
// p-value. Each function documents what its Statistic is. A test given no
// data has P = 1 (no evidence against the null); a test given invalid
// counts (negative, or more successes than trials) has P = NaN.
type Test struct {
	Name      string
	Statistic float64
	P         float64
}

// Names of the tests, as reported in Test.Name.
const (
	NameFisher            = "Fisher's exact test"
	NameTwoProportionsZ   = "two-proportion z test (pooled; = χ² without continuity correction)"
	NameMcNemarExact      = "McNemar (exact binomial)"
	NameMcNemarChiSquared = "McNemar (χ² with continuity correction)"
	NameMannWhitneyExact  = "Mann–Whitney U (exact)"
	NameMannWhitneyNormal = "Mann–Whitney U (normal approximation, tie-corrected)"
	// NameMannWhitneyClustered is MannWhitneyClustered's test.
	NameMannWhitneyClustered = "Mann–Whitney U (cluster-robust variance, Obuchowski 1997)"
	NameRaoScottZ            = "two-proportion z test (Rao–Scott design-effect corrected)"
	NameFisherEffective      = "Fisher's exact test (on design-effect effective counts)"
)

// relErr is the tolerance for "as or less likely" in the exact tests: a
// table whose probability equals the observed one's up to rounding counts
// as equally likely (R's fisher.test uses the same 1 + 1e-7).
const relErr = 1 + 1e-7

// Fisher returns Fisher's exact test of x1/n1 against x2/n2: conditional on
// the margins, x1 is hypergeometric, and the two-sided p-value is the sum of
// the probabilities of all tables as likely as the observed one or less
// (the definition R's fisher.test uses). Statistic is x1, the count the
// test conditions on.
func Fisher(x1, n1, x2, n2 int) Test {
	t := Test{Name: NameFisher, Statistic: float64(x1)}
	if x1 < 0 || n1 < 0 || x1 > n1 || x2 < 0 || n2 < 0 || x2 > n2 {
		t.P = math.NaN()
		return t
	}
	t.P = fisherP(x1, n1, x2, n2)
	return t
}

// fisherP is the two-sided exact p-value for valid counts.
func fisherP(x1, n1, x2, n2 int) float64 {
	k := x1 + x2 // successes in both rows: a fixed margin
	lo := max(0, k-n2)
	hi := min(n1, k)
	if lo == hi {
		return 1
	}
	logp := func(a int) float64 {
		return lchoose(n1, a) + lchoose(n2, k-a)
	}
	obs := logp(x1)
	// Scale by the most likely table's probability so exp never overflows;
	// tables far less likely than it underflow to 0, which they nearly are.
	ref := math.Inf(-1)
	for a := lo; a <= hi; a++ {
		ref = math.Max(ref, logp(a))
	}
	var all, asOrLess float64
	for a := lo; a <= hi; a++ {
		lp := logp(a)
		w := math.Exp(lp - ref)
		all += w
		if lp <= obs+math.Log(relErr) {
			asOrLess += w
		}
	}
	return math.Min(1, asOrLess/all)
}

// lchoose is log(n choose k).
func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n) + 1)
	b, _ := math.Lgamma(float64(k) + 1)
	c, _ := math.Lgamma(float64(n-k) + 1)
	return a - b - c
}

// TwoProportions tests x1/n1 against x2/n2, choosing the test for the
// counts: Fisher's exact test when any expected cell of the 2×2 table is
// below 5 (where the normal approximation is poor), else the pooled
// two-proportion z test, which is the χ² test without continuity
// correction (R's prop.test(correct = FALSE)). Name says which ran. For the
// z test Statistic is z, positive when p2 > p1; for Fisher it is x1.
func TwoProportions(x1, n1, x2, n2 int) Test {
	if x1 < 0 || n1 < 0 || x1 > n1 || x2 < 0 || n2 < 0 || x2 > n2 {
		return Test{Name: NameFisher, Statistic: float64(x1), P: math.NaN()}
	}
	if minExpected(float64(x1), float64(n1), float64(x2), float64(n2)) < 5 {
		return Fisher(x1, n1, x2, n2)
	}
	z := pooledZ(float64(x1), float64(n1), float64(x2), float64(n2), 1, 1)
	return Test{Name: NameTwoProportionsZ, Statistic: z, P: twoSidedNormal(z)}
}

// minExpected is the smallest expected cell count of the 2×2 table under
// independence.
func minExpected(x1, n1, x2, n2 float64) float64 {
	n := n1 + n2
	if n == 0 {
		return 0
	}
	k := x1 + x2
	return math.Min(math.Min(n1*k/n, n1*(n-k)/n), math.Min(n2*k/n, n2*(n-k)/n))
}

// pooledZ is (p2 − p1) over its standard error under the null of one common
// proportion, each side's variance multiplied by its design effect.
func pooledZ(x1, n1, x2, n2, deff1, deff2 float64) float64 {
	p := (x1 + x2) / (n1 + n2)
	se := math.Sqrt(p * (1 - p) * (deff1/n1 + deff2/n2))
	if se == 0 {
		return 0
	}
	return (x2/n2 - x1/n1) / se
}

// twoSidedNormal is P(|Z| >= |z|).
func twoSidedNormal(z float64) float64 {
	return math.Min(1, 2*distuv.UnitNormal.Survival(math.Abs(z)))
}

// mcnemarExactBelow is the number of discordant pairs below which McNemar
// uses the exact binomial test: the χ² approximation is poor for small
// b + c (the usual rule of thumb is 25).
const mcnemarExactBelow = 25

// McNemar tests paired binary outcomes (the same scenarios before and
// after) from the discordant pairs only: b = pass→fail, c = fail→pass.
// Under the null a discordant pair goes either way with probability 1/2.
// When b + c < 25 it is the exact binomial test (Statistic = b, two-sided
// p = min(1, 2·P(X <= min(b, c)))); else the χ² test with continuity
// correction, (|b − c| − 1)² / (b + c) on one degree of freedom (R's
// mcnemar.test default), and Statistic is χ². With no discordant pairs P = 1.
func McNemar(b, c int) Test {
	if b < 0 || c < 0 {
		return Test{Name: NameMcNemarExact, Statistic: float64(b), P: math.NaN()}
	}
	n := b + c
	if n < mcnemarExactBelow {
		t := Test{Name: NameMcNemarExact, Statistic: float64(b), P: 1}
		if n > 0 {
			bin := distuv.Binomial{N: float64(n), P: 0.5}
			t.P = math.Min(1, 2*bin.CDF(float64(min(b, c))))
		}
		return t
	}
	d := math.Abs(float64(b-c)) - 1
	if d < 0 {
		d = 0
	}
	chi2 := d * d / float64(n)
	return Test{Name: NameMcNemarChiSquared, Statistic: chi2, P: distuv.ChiSquared{K: 1}.Survival(chi2)}
}
