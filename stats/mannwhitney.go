package stats

import (
	"math"
	"slices"
)

// mwExactBelow bounds the sample sizes for which MannWhitney computes the
// exact null distribution (R's wilcox.test uses the same bound): both
// samples must be smaller than it and the data free of ties.
const mwExactBelow = 50

// MannWhitney tests whether values of y tend to be larger or smaller than
// values of x (the Wilcoxon rank-sum test), two-sided. It assumes nothing
// about the shape of the distributions, which suits latencies and token
// counts with long tails. Statistic is U for x: the number of pairs (x_i,
// y_j) with x_i > y_j, ties counting one half (R's W).
//
// With both samples under 50 values and no ties the p-value comes from
// the exact distribution of U; otherwise from the normal approximation
// with the tie correction of the variance and a continuity correction of
// 1/2 (R's wilcox.test with exact = NULL, correct = TRUE).
//
// NaN values are ignored. With either sample empty, or every value tied,
// P = 1.
func MannWhitney(x, y []float64) Test {
	xs := withoutNaN(x)
	ys := withoutNaN(y)
	m, n := len(xs), len(ys)
	if m == 0 || n == 0 {
		return Test{Name: NameMannWhitneyNormal, Statistic: 0, P: 1}
	}
	type obs struct {
		v   float64
		inX bool
	}
	all := make([]obs, 0, m+n)
	for _, v := range xs {
		all = append(all, obs{v, true})
	}
	for _, v := range ys {
		all = append(all, obs{v, false})
	}
	slices.SortFunc(all, func(a, b obs) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	// Mid-ranks, and Σ(t³ − t) over groups of ties for the variance.
	var rankSumX, tieSum float64
	ties := false
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		mid := float64(i+j+1) / 2 // ranks i+1..j, 1-based
		for k := i; k < j; k++ {
			if all[k].inX {
				rankSumX += mid
			}
		}
		if t := float64(j - i); t > 1 {
			ties = true
			tieSum += t*t*t - t
		}
		i = j
	}
	fm, fn := float64(m), float64(n)
	u := rankSumX - fm*(fm+1)/2
	if !ties && m < mwExactBelow && n < mwExactBelow {
		return Test{Name: NameMannWhitneyExact, Statistic: u, P: mannWhitneyExactP(int(math.Round(u)), m, n)}
	}
	t := Test{Name: NameMannWhitneyNormal, Statistic: u, P: 1}
	nn := fm + fn
	variance := fm * fn / 12 * ((nn + 1) - tieSum/(nn*(nn-1)))
	if !(variance > 0) {
		return t
	}
	d := u - fm*fn/2
	// Continuity correction toward the centre, never past it.
	switch {
	case d > 0.5:
		d -= 0.5
	case d < -0.5:
		d += 0.5
	default:
		d = 0
	}
	t.P = twoSidedNormal(d / math.Sqrt(variance))
	return t
}

// withoutNaN returns the values of x that are numbers, in a new slice.
func withoutNaN(x []float64) []float64 {
	out := make([]float64, 0, len(x))
	for _, v := range x {
		if !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}

// mannWhitneyExactP is the two-sided exact p-value of U = u for samples of
// m and n values without ties: the smaller tail doubled, as R computes it.
func mannWhitneyExactP(u, m, n int) float64 {
	counts := mannWhitneyCounts(m, n)
	var total float64
	for _, c := range counts {
		total += c
	}
	var tail float64
	if 2*u > m*n {
		for k := u; k < len(counts); k++ {
			tail += counts[k]
		}
	} else {
		for k := 0; k <= u; k++ {
			tail += counts[k]
		}
	}
	return math.Min(1, 2*tail/total)
}

// mannWhitneyCounts returns, for each u in 0..m·n, the number of orderings
// of m x's and n y's whose U equals u. It uses the recurrence on where the
// largest value comes from — from x, it beats all n y's: c(m, n, u) =
// c(m−1, n, u−n) + c(m, n−1, u) — keeping two rows of m, so memory stays
// O(n·m·n). Counts are sums of positive numbers, so float64 loses only
// relative precision, never sign or order of magnitude.
func mannWhitneyCounts(m, n int) []float64 {
	size := m*n + 1
	// prev[j] holds c(i−1, j, ·); cur[j] holds c(i, j, ·).
	prev := make([][]float64, n+1)
	cur := make([][]float64, n+1)
	for j := range prev {
		prev[j] = make([]float64, size)
		cur[j] = make([]float64, size)
		prev[j][0] = 1 // c(0, j, 0) = 1
	}
	for i := 1; i <= m; i++ {
		clear(cur[0])
		cur[0][0] = 1 // c(i, 0, 0) = 1
		for j := 1; j <= n; j++ {
			row := cur[j]
			clear(row)
			for u := 0; u <= i*j; u++ {
				var v float64
				if u >= j {
					v = prev[j][u-j]
				}
				v += cur[j-1][u]
				row[u] = v
			}
		}
		prev, cur = cur, prev
	}
	return prev[n]
}
