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
// a resample then needs only the ranks of the one or two order statistics
// the quantile interpolates between, which are drawn exactly by splitting
// the sorted index range with binomial draws (a multinomial resample
// restricted to the branch that holds those ranks), so a resample costs
// O(log n) instead of O(n).
//
// The resamples treat values as independent. When values come in clusters
// (the calls of one session), use BootstrapQuantileDiffClustered.
//
// NaN values are ignored. With either side empty, diff and the interval are
// NaN; with resamples < 1, or a level outside (0, 1), the interval is NaN.
func BootstrapQuantileDiff(x, y []float64, q float64, resamples int, seed uint64, level float64) (diff float64, ci Interval) {
	sx := withoutNaN(x)
	sy := withoutNaN(y)
	slices.Sort(sx)
	slices.Sort(sy)
	diff = QuantileSorted(sy, q) - QuantileSorted(sx, q)
	if math.IsNaN(diff) || resamples < 1 || !(level > 0 && level < 1) {
		return diff, invalid(level)
	}
	rng := newRand(seed)
	r := resampler{rng: rng}
	d := make([]float64, resamples)
	for i := range d {
		d[i] = r.quantile(sy, q) - r.quantile(sx, q)
	}
	return diff, percentileInterval(d, level)
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

// smallDraw is the count at or below which the resampler draws a range's
// indices directly and sorts them instead of splitting it further: a few
// uniform draws are cheaper than a binomial one.
const smallDraw = 16

// resampler draws the order statistics of bootstrap resamples of a sorted
// sample.
type resampler struct {
	rng *rand.Rand
	buf [smallDraw]int
	// ranks are the 0-based order statistics wanted (ranks[1] = ranks[0]+1
	// when the quantile interpolates), idx the sorted-sample indices found.
	ranks [2]int
	idx   [2]int
	want  int
}

// quantile returns Quantile's q-quantile of one resample of sorted s (of
// the same size as s).
func (r *resampler) quantile(s []float64, q float64) float64 {
	n := len(s)
	h := float64(n-1) * q
	k := int(h)
	frac := h - float64(k)
	r.ranks = [2]int{k, k + 1}
	r.want = 2
	if frac == 0 || k+1 >= n {
		r.want = 1
	}
	r.find(0, n, n, 0)
	lo := s[r.idx[0]]
	if r.want == 1 {
		return lo
	}
	return lo + frac*(s[r.idx[1]]-lo)
}

// find locates the wanted ranks among `count` draws that landed uniformly
// in the index range [lo, hi), `before` draws having landed below lo.
func (r *resampler) find(lo, hi, count, before int) {
	if count == 0 || !r.wants(before, before+count) {
		return
	}
	if hi-lo == 1 {
		for i := 0; i < r.want; i++ {
			if rk := r.ranks[i]; rk >= before && rk < before+count {
				r.idx[i] = lo
			}
		}
		return
	}
	if count <= smallDraw {
		b := r.buf[:count]
		for i := range b {
			b[i] = lo + r.rng.IntN(hi-lo)
		}
		slices.Sort(b)
		for i := 0; i < r.want; i++ {
			if rk := r.ranks[i]; rk >= before && rk < before+count {
				r.idx[i] = b[rk-before]
			}
		}
		return
	}
	mid := lo + (hi-lo)/2
	left := int(distuv.Binomial{N: float64(count), P: float64(mid-lo) / float64(hi-lo), Src: r.rng}.Rand())
	r.find(lo, mid, left, before)
	r.find(mid, hi, count-left, before+left)
}

// wants reports whether any wanted rank lies in [from, to).
func (r *resampler) wants(from, to int) bool {
	for i := 0; i < r.want; i++ {
		if rk := r.ranks[i]; rk >= from && rk < to {
			return true
		}
	}
	return false
}
