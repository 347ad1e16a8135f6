package stats

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Quantile returns the q-quantile of x by linear interpolation between the
// order statistics (Hyndman and Fan's type 7, R's default): with the values
// sorted and h = (n − 1)·q, it is s[⌊h⌋] + (h − ⌊h⌋)·(s[⌊h⌋+1] − s[⌊h⌋]).
// This is DuckDB's quantile_cont, so a quantile computed here matches the
// metrics views' p50/p95 for the same values.
//
// NaN values are ignored; with no values left, or q outside [0, 1], the
// result is NaN. x is not modified.
func Quantile(x []float64, q float64) float64 {
	s := withoutNaN(x)
	slices.Sort(s)
	return QuantileSorted(s, q)
}

// QuantileSorted is Quantile for values already sorted ascending and free
// of NaN; it does not copy.
func QuantileSorted(s []float64, q float64) float64 {
	if len(s) == 0 || !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	h := float64(len(s)-1) * q
	k := int(h)
	frac := h - float64(k)
	if k+1 >= len(s) || frac == 0 {
		return s[k]
	}
	return s[k] + frac*(s[k+1]-s[k])
}

// newRand returns the PRNG of a bootstrap: PCG seeded from seed, so the same
// seed gives the same resamples on every platform and Go version.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// BootstrapQuantileDiff estimates quantile(y,q) − quantile(x,q) and a
// percentile bootstrap interval from `resamples` resamples drawn with a
// PRNG seeded by seed (math/rand/v2 PCG), so the result is reproducible.
//
// Each resample draws len(x) values from x and len(y) from y with
// replacement, independently, and takes the difference of their
// quantiles (Quantile's definition); the interval is the (1 − level)/2 and
// (1 + level)/2 quantiles of those differences. The values are sorted once;
// a resample then needs only the one or two order statistics the quantile
// interpolates between, and those are drawn exactly from their joint
// distribution (see resampler), so a resample costs O(1) instead of O(n).
//
// The resamples treat values as independent. When values come in clusters
// (the calls of one session), use BootstrapQuantileDiffClustered.
//
// NaN values are ignored. With either side empty, diff and the interval are
// NaN; with resamples < 1, or a level outside (0, 1), the interval is NaN.
func BootstrapQuantileDiff(x, y []float64, q float64, resamples int, seed uint64, level float64) (diff float64, ci Interval) {
	d, c := BootstrapQuantileDiffs(x, y, []float64{q}, resamples, seed, level)
	return d[0], c[0]
}

// BootstrapQuantileDiffs is BootstrapQuantileDiff for several quantiles of
// the same two samples (p50 and p95 of one tool's latency, say): the
// samples are sorted once. diffs[i] and cis[i] belong to qs[i]; with one
// quantile the result is BootstrapQuantileDiff's for the same seed.
func BootstrapQuantileDiffs(x, y []float64, qs []float64, resamples int, seed uint64, level float64) (diffs []float64, cis []Interval) {
	sx := withoutNaN(x)
	sy := withoutNaN(y)
	slices.Sort(sx)
	slices.Sort(sy)
	diffs = make([]float64, len(qs))
	cis = make([]Interval, len(qs))
	d := make([][]float64, len(qs))
	ok := resamples >= 1 && level > 0 && level < 1
	for i, q := range qs {
		diffs[i] = QuantileSorted(sy, q) - QuantileSorted(sx, q)
		cis[i] = invalid(level)
		if ok && !math.IsNaN(diffs[i]) {
			d[i] = make([]float64, resamples)
		}
	}
	r := resampler{rng: newRand(seed)}
	for k := 0; k < resamples && ok; k++ {
		for i, q := range qs {
			if d[i] != nil {
				d[i][k] = r.quantile(sy, q) - r.quantile(sx, q)
			}
		}
	}
	for i := range qs {
		if d[i] != nil {
			cis[i] = percentileInterval(d[i], level)
		}
	}
	return diffs, cis
}

// percentileInterval is the percentile bootstrap interval of the resampled
// statistics d (NaN entries ignored); d is sorted in place.
func percentileInterval(d []float64, level float64) Interval {
	d = slices.DeleteFunc(d, math.IsNaN)
	if len(d) == 0 {
		return invalid(level)
	}
	slices.Sort(d)
	return Interval{
		Lo:    QuantileSorted(d, (1-level)/2),
		Hi:    QuantileSorted(d, (1+level)/2),
		Level: level,
	}
}

// resampler draws the order statistics of bootstrap resamples of a sorted
// sample without drawing the resample.
//
// A resample of n values from sorted s is s[⌊n·U_i⌋] for n independent
// uniforms U_i, and since ⌊n·u⌋ is monotone its j-th smallest value is
// s[⌊n·U_(j)⌋], with U_(j) the j-th smallest uniform. U_(j) is Beta(j,
// n−j+1), and given U_(j) = u the next one is the least of n−j uniforms on
// (u, 1). So the one or two order statistics a quantile interpolates
// between cost a Beta draw and a uniform, exactly the distribution the
// textbook bootstrap (draw n values, sort, pick) samples, in O(1) instead
// of O(n log n).
type resampler struct {
	rng *rand.Rand
}

// quantile returns Quantile's q-quantile of one resample of sorted s (of
// the same size as s).
func (r *resampler) quantile(s []float64, q float64) float64 {
	n := len(s)
	h := float64(n-1) * q
	k := int(h) // 0-based rank of the lower order statistic
	frac := h - float64(k)
	// U_(k+1) in 1-based ranks.
	u := distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k), Src: r.rng}.Rand()
	lo := s[index(u, n)]
	if frac == 0 || k+1 >= n {
		return lo
	}
	// The least of the n−k−1 uniforms above u: u + (1−u)·(1 − V^(1/(n−k−1))).
	v := r.rng.Float64()
	next := u + (1-u)*(-math.Expm1(math.Log1p(-v)/float64(n-k-1)))
	hi := s[index(next, n)]
	return lo + frac*(hi-lo)
}

// index maps a uniform in [0, 1] to its index in a sample of n values.
func index(u float64, n int) int {
	return min(n-1, max(0, int(u*float64(n))))
}
