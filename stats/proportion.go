package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Interval is a two-sided confidence interval at Level (e.g. 0.95).
// An interval that cannot be computed (no data where data is needed, or an
// invalid level) has NaN bounds; Valid reports which.
type Interval struct{ Lo, Hi, Level float64 }

// Valid reports whether both bounds are numbers.
func (i Interval) Valid() bool { return !math.IsNaN(i.Lo) && !math.IsNaN(i.Hi) }

// Contains reports whether v lies in the closed interval [Lo, Hi]. An
// invalid interval contains nothing.
func (i Interval) Contains(v float64) bool { return i.Valid() && i.Lo <= v && v <= i.Hi }

// invalid is the interval returned when the inputs do not allow one.
func invalid(level float64) Interval { return Interval{Lo: math.NaN(), Hi: math.NaN(), Level: level} }

// zFor returns the standard normal quantile z with P(|Z| <= z) = level, and
// false when level is not strictly between 0 and 1.
func zFor(level float64) (float64, bool) {
	if !(level > 0 && level < 1) {
		return 0, false
	}
	return distuv.UnitNormal.Quantile(1 - (1-level)/2), true
}

// Wilson returns the Wilson score interval (without continuity correction;
// Newcombe 1998a's method 3) for the proportion successes/n. Unlike the
// textbook Wald interval it stays inside [0, 1] and keeps its coverage near
// 0 and 1, where agent failure rates live.
//
// With n = 0 there is no information and the interval is [0, 1]. Counts
// outside 0 <= successes <= n, or a level outside (0, 1), give an invalid
// (NaN) interval.
func Wilson(successes, n int, level float64) Interval {
	if successes < 0 || n < 0 || successes > n {
		return invalid(level)
	}
	z, ok := zFor(level)
	if !ok {
		return invalid(level)
	}
	if n == 0 {
		return Interval{Lo: 0, Hi: 1, Level: level}
	}
	lo, hi := wilsonBounds(float64(successes)/float64(n), float64(n), z)
	return Interval{Lo: lo, Hi: hi, Level: level}
}

// wilsonBounds is the score interval for proportion p over n (possibly an
// effective, non-integer n) at normal quantile z.
func wilsonBounds(p, n, z float64) (lo, hi float64) {
	z2 := z * z
	denom := 1 + z2/n
	center := (p + z2/(2*n)) / denom
	half := z / denom * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	lo, hi = center-half, center+half
	// Exact ends: at p = 0 the lower bound is 0 and at p = 1 the upper is 1;
	// rounding must not move them.
	if p == 0 {
		lo = 0
	}
	if p == 1 {
		hi = 1
	}
	return math.Max(0, lo), math.Min(1, hi)
}

// Newcombe returns the hybrid score interval (Newcombe 1998b, method 10) for
// the difference p2 − p1 of two independent proportions p1 = x1/n1 and
// p2 = x2/n2: each side's Wilson interval, combined by squaring and adding
// the distances from each estimate to its limits. It is the interval that
// keeps close to its nominal coverage for small and skewed counts, where
// the Wald interval for a difference does not.
//
// When either n is 0 the difference is unknown and the interval is
// [−1, 1]. Invalid counts or level give an invalid (NaN) interval.
func Newcombe(x1, n1, x2, n2 int, level float64) Interval {
	if x1 < 0 || n1 < 0 || x1 > n1 || x2 < 0 || n2 < 0 || x2 > n2 {
		return invalid(level)
	}
	z, ok := zFor(level)
	if !ok {
		return invalid(level)
	}
	if n1 == 0 || n2 == 0 {
		return Interval{Lo: -1, Hi: 1, Level: level}
	}
	return newcombeBounds(float64(x1)/float64(n1), float64(n1), float64(x2)/float64(n2), float64(n2), z, level)
}

// newcombeBounds is method 10 for p2 − p1 over (possibly effective) sizes.
func newcombeBounds(p1, n1, p2, n2, z, level float64) Interval {
	l1, u1 := wilsonBounds(p1, n1, z)
	l2, u2 := wilsonBounds(p2, n2, z)
	d := p2 - p1
	lo := d - math.Sqrt((p2-l2)*(p2-l2)+(u1-p1)*(u1-p1))
	hi := d + math.Sqrt((u2-p2)*(u2-p2)+(p1-l1)*(p1-l1))
	return Interval{Lo: math.Max(-1, lo), Hi: math.Min(1, hi), Level: level}
}
