package stats

import (
	"math"
	"slices"
)

// MannWhitneyClustered is MannWhitney for values that come in clusters
// (x[i] holds the values of one base session, y[j] of one candidate
// session): the same statistic, with a variance that lets the values of one
// session be correlated. MannWhitney's null variance assumes independent
// values; calls of one session are alike, so over calls it raises false
// alarms, and this test does not.
//
// It estimates θ = P(y > x) + ½·P(y = x), Mann–Whitney's U over m·n, and
// tests θ = ½ with the clustered variance of Obuchowski (1997,
// "Nonparametric analysis of clustered ROC curve data", Biometrics
// 53:567–578): each value's placement (the share of the other sample it
// beats, ties one half) is summed per cluster, and the variance of θ comes
// from the spread of those cluster sums around their expectation, side by
// side, the two sides being independent. With one value per cluster it is
// DeLong's variance. The p-value is two-sided from the normal
// distribution, which needs a few dozen clusters a side to be accurate.
// Statistic is U for x, as in MannWhitney.
//
// NaN values are ignored; clusters without values are skipped. With
// fewer than two clusters with values on either side, or no variance, P = 1.
func MannWhitneyClustered(x, y [][]float64) Test {
	t := Test{Name: NameMannWhitneyClustered, P: 1}
	type obs struct {
		v       float64
		inX     bool
		cluster int32
	}
	var all []obs
	cx, cy := 0, 0
	for _, side := range []struct {
		c   [][]float64
		inX bool
		n   *int
	}{{x, true, &cx}, {y, false, &cy}} {
		for k, vs := range side.c {
			has := false
			for _, v := range vs {
				if !math.IsNaN(v) {
					all = append(all, obs{v, side.inX, int32(k)})
					has = true
				}
			}
			if has {
				*side.n++
			}
		}
	}
	m, n := 0, 0
	for _, o := range all {
		if o.inX {
			m++
		} else {
			n++
		}
	}
	if m == 0 || n == 0 {
		return t
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
	// For a value v of x, the y's below it plus half the y's equal to it
	// are (its mid-rank among all) − (its mid-rank among the x's); the
	// same for y. Walk groups of equal values, counting each side.
	sumX := make([]float64, len(x)) // per cluster, Σ placements of its x values
	sumY := make([]float64, len(y))
	sizeX := make([]float64, len(x))
	sizeY := make([]float64, len(y))
	belowX, belowY := 0, 0 // values of each side below the current group
	var uX float64         // Σ over x of the y's it beats (ties ½)
	for i := 0; i < len(all); {
		j := i
		eqX, eqY := 0, 0
		for j < len(all) && all[j].v == all[i].v {
			if all[j].inX {
				eqX++
			} else {
				eqY++
			}
			j++
		}
		// An x in this group beats belowY y's and ties eqY of them; a y
		// beats belowX x's and ties eqX.
		px := (float64(belowY) + float64(eqY)/2) / float64(n) // P(y < this x)
		py := (float64(belowX) + float64(eqX)/2) / float64(m) // P(x < this y)
		for k := i; k < j; k++ {
			o := all[k]
			if o.inX {
				// Placement of an x: the share of y's above it, ties ½.
				sumX[o.cluster] += 1 - px
				sizeX[o.cluster]++
				uX += px * float64(n)
			} else {
				sumY[o.cluster] += py
				sizeY[o.cluster]++
			}
		}
		belowX += eqX
		belowY += eqY
		i = j
	}
	fm, fn := float64(m), float64(n)
	t.Statistic = uX
	if cx < 2 || cy < 2 {
		return t
	}
	theta := 1 - uX/(fm*fn)
	spread := func(sums, sizes []float64, clusters int, total float64) float64 {
		var ss float64
		for k := range sums {
			if sizes[k] == 0 {
				continue
			}
			d := sums[k] - sizes[k]*theta
			ss += d * d
		}
		c := float64(clusters)
		return c / ((c - 1) * total) * ss
	}
	variance := spread(sumX, sizeX, cx, fm)/fm + spread(sumY, sizeY, cy, fn)/fn
	if !(variance > 0) {
		return t
	}
	t.P = twoSidedNormal((theta - 0.5) / math.Sqrt(variance))
	return t
}
