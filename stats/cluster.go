package stats

import (
	"math"
	"slices"
)

// Cluster is one cluster's count of a rate: Successes out of N, e.g. the
// failed calls among one session's bash calls.
type Cluster struct{ Successes, N int }

// ClusteredProportion returns the pooled proportion p = ΣSuccesses / ΣN of
// clusters and its ratio-estimator variance (Cochran 1977, §6.5; Kish
// 1965):
//
//	var(p) = C/(C−1) · Σ (y_i − p·m_i)² / (Σ m_i)²
//
// over the C clusters with N > 0, which lets the clusters differ in size
// and correlates the calls within one. Clusters with N = 0 carry no calls
// and are skipped. With fewer than two clusters the variance cannot be
// estimated and is NaN; with no calls p is NaN too.
func ClusteredProportion(cs []Cluster) (p, variance float64) {
	var y, m float64
	c := 0
	for _, k := range cs {
		if k.N <= 0 {
			continue
		}
		y += float64(k.Successes)
		m += float64(k.N)
		c++
	}
	if c == 0 {
		return math.NaN(), math.NaN()
	}
	p = y / m
	if c < 2 {
		return p, math.NaN()
	}
	var ss float64
	for _, k := range cs {
		if k.N <= 0 {
			continue
		}
		r := float64(k.Successes) - p*float64(k.N)
		ss += r * r
	}
	fc := float64(c)
	return p, fc / (fc - 1) * ss / (m * m)
}

// DesignEffect returns Kish's design effect of the clustered proportion:
// its ratio-estimator variance over the variance p(1−p)/n it would have if
// the n calls were independent. A design effect of 3 means the clustered
// data carry as much information as a third as many independent calls.
//
// It is never below 1: a value below 1 (calls of one session less alike
// than calls of different ones) is mostly noise in the variance estimate,
// and trusting it would shrink intervals and inflate false alarms, so it
// is clamped. A proportion of exactly 0 or 1 has design effect 1. With
// fewer than two clusters with calls it is NaN.
func DesignEffect(cs []Cluster) float64 {
	p, v := ClusteredProportion(cs)
	if math.IsNaN(v) {
		return math.NaN()
	}
	n := 0
	for _, k := range cs {
		if k.N > 0 {
			n += k.N
		}
	}
	srs := p * (1 - p) / float64(n)
	if srs == 0 {
		return 1
	}
	return math.Max(1, v/srs)
}

// EffectiveN returns the number of independent calls the clusters are
// worth: the total N over DesignEffect. NaN when DesignEffect is.
func EffectiveN(cs []Cluster) float64 {
	n := 0
	for _, k := range cs {
		if k.N > 0 {
			n += k.N
		}
	}
	return float64(n) / DesignEffect(cs)
}

// clusterSummary is a side's pooled counts and design effect.
type clusterSummary struct {
	x, n, deff float64
}

func summarise(cs []Cluster) (clusterSummary, bool) {
	var s clusterSummary
	for _, k := range cs {
		if k.N <= 0 {
			continue
		}
		s.x += float64(k.Successes)
		s.n += float64(k.N)
	}
	s.deff = DesignEffect(cs)
	return s, !math.IsNaN(s.deff)
}

// validClusters reports whether every cluster's counts are possible.
func validClusters(cs []Cluster) bool {
	return !slices.ContainsFunc(cs, func(k Cluster) bool {
		return k.Successes < 0 || k.N < 0 || k.Successes > k.N
	})
}

// ClusteredTwoProportions is TwoProportions for clustered data (rates over
// calls grouped in sessions): the pooled z test with each side's variance
// multiplied by its DesignEffect (the Rao–Scott first-order correction),
// or, when an expected cell of the table of effective counts (N/deff) is
// below 5, Fisher's exact test on those effective counts rounded. Name
// says which. Statistic is z (positive when b's rate is higher) or the
// effective x of a.
//
// With fewer than two sessions with calls on either side the design
// effect cannot be estimated and P = 1: there is no evidence either way.
func ClusteredTwoProportions(a, b []Cluster) Test {
	if !validClusters(a) || !validClusters(b) {
		return Test{Name: NameRaoScottZ, P: math.NaN()}
	}
	sa, okA := summarise(a)
	sb, okB := summarise(b)
	if !okA || !okB {
		return Test{Name: NameRaoScottZ, P: 1}
	}
	na, nb := sa.n/sa.deff, sb.n/sb.deff
	xa, xb := sa.x/sa.deff, sb.x/sb.deff
	if minExpected(xa, na, xb, nb) < 5 {
		ia, ib := int(math.Round(na)), int(math.Round(nb))
		ja := min(ia, int(math.Round(xa)))
		jb := min(ib, int(math.Round(xb)))
		return Test{Name: NameFisherEffective, Statistic: float64(ja), P: fisherP(ja, ia, jb, ib)}
	}
	z := pooledZ(sa.x, sa.n, sb.x, sb.n, sa.deff, sb.deff)
	return Test{Name: NameRaoScottZ, Statistic: z, P: twoSidedNormal(z)}
}

// ClusteredNewcombe is Newcombe's interval for p_b − p_a over clustered
// data: each side's Wilson interval uses its effective n (N/deff) in place
// of N. With fewer than two sessions with calls on either side it is
// [−1, 1]; invalid counts or level give a NaN interval.
func ClusteredNewcombe(a, b []Cluster, level float64) Interval {
	if !validClusters(a) || !validClusters(b) {
		return invalid(level)
	}
	z, ok := zFor(level)
	if !ok {
		return invalid(level)
	}
	sa, okA := summarise(a)
	sb, okB := summarise(b)
	if !okA || !okB {
		return Interval{Lo: -1, Hi: 1, Level: level}
	}
	return newcombeBounds(sa.x/sa.n, sa.n/sa.deff, sb.x/sb.n, sb.n/sb.deff, z, level)
}

// clusteredSample is a clustered sample's values sorted once, each with the
// cluster it came from.
type clusteredSample struct {
	values  []float64
	cluster []int32
	sizes   []int // values per cluster
}

func newClusteredSample(x [][]float64) clusteredSample {
	type vc struct {
		v float64
		c int32
	}
	var all []vc
	sizes := make([]int, len(x))
	for c, vs := range x {
		for _, v := range vs {
			if !math.IsNaN(v) {
				all = append(all, vc{v, int32(c)})
				sizes[c]++
			}
		}
	}
	slices.SortFunc(all, func(a, b vc) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	s := clusteredSample{values: make([]float64, len(all)), cluster: make([]int32, len(all)), sizes: sizes}
	for i, e := range all {
		s.values[i] = e.v
		s.cluster[i] = e.c
	}
	return s
}

// resample draws len(sizes) clusters with replacement into the reused
// weights w and returns how many values the drawn clusters pool.
func (s clusteredSample) resample(w []int32, r *resampler) int {
	clear(w)
	c := len(s.sizes)
	total := 0
	for range c {
		k := r.rng.IntN(c)
		w[k]++
		total += s.sizes[k]
	}
	return total
}

// quantileWeighted is Quantile's q-quantile of the pooled values with
// cluster c's values counted w[c] times, total of them (NaN when total is
// 0). It walks the sorted values from the nearer end of the wanted rank,
// adding each value's cluster weight, so it touches at most about half of
// them.
func (s clusteredSample) quantileWeighted(q float64, w []int32, total int) float64 {
	if total == 0 {
		return math.NaN()
	}
	h := float64(total-1) * q
	k := int(h)
	frac := h - float64(k)
	two := frac != 0 && k+1 < total
	var lo, hi float64
	if q <= 0.5 {
		// Rank k is the first value where the running weight passes k;
		// rank k+1 is the same value if its weight covers it, else the
		// next value with weight.
		i, cum := s.walkUp(w, k)
		lo, hi = s.values[i], s.values[i]
		if two && cum <= k+1 {
			hi = s.values[s.nextUp(w, i)]
		}
	} else {
		// The same from the top: rank k+1 is total−2−k from the top and
		// rank k the one below it.
		t := total - 1 - k
		if two {
			t = total - 2 - k
		}
		i, cum := s.walkDown(w, t)
		lo, hi = s.values[i], s.values[i]
		if two && cum <= t+1 {
			lo = s.values[s.nextDown(w, i)]
		}
	}
	if !two {
		return lo
	}
	return lo + frac*(hi-lo)
}

// walkUp returns the first index whose running weight from the bottom
// exceeds rank, and that running weight.
func (s clusteredSample) walkUp(w []int32, rank int) (int, int) {
	cum := 0
	for i, c := range s.cluster {
		cum += int(w[c])
		if cum > rank {
			return i, cum
		}
	}
	return len(s.cluster) - 1, cum
}

// walkDown is walkUp from the top.
func (s clusteredSample) walkDown(w []int32, rank int) (int, int) {
	cum := 0
	for i := len(s.cluster) - 1; i >= 0; i-- {
		cum += int(w[s.cluster[i]])
		if cum > rank {
			return i, cum
		}
	}
	return 0, cum
}

// nextUp returns the first index above i whose cluster was drawn.
func (s clusteredSample) nextUp(w []int32, i int) int {
	for j := i + 1; j < len(s.cluster); j++ {
		if w[s.cluster[j]] > 0 {
			return j
		}
	}
	return i
}

// nextDown returns the first index below i whose cluster was drawn.
func (s clusteredSample) nextDown(w []int32, i int) int {
	for j := i - 1; j >= 0; j-- {
		if w[s.cluster[j]] > 0 {
			return j
		}
	}
	return i
}

// BootstrapQuantileDiffClustered is BootstrapQuantileDiff for values that
// come in clusters (x[i] holds the values of one session): each resample
// draws whole clusters with replacement, as many as each side has, and
// pools their values. Calls of one session share its task, workspace and
// model, so they are not independent; resampling calls as if they were
// understates the variance and raises false alarms, and resampling the
// sessions — the units actually sampled — does not.
//
// diff is the difference of the pooled quantiles, quantile(∪y) −
// quantile(∪x), the same number BootstrapQuantileDiff gives for the
// flattened values. Clusters with no values still count as drawn units
// (a session that made no such call). A resample whose drawn clusters hold
// no values is skipped. NaN values are ignored; with either side empty,
// diff and the interval are NaN.
func BootstrapQuantileDiffClustered(x, y [][]float64, q float64, resamples int, seed uint64, level float64) (diff float64, ci Interval) {
	d, c := BootstrapQuantileDiffsClustered(x, y, []float64{q}, resamples, seed, level)
	return d[0], c[0]
}

// BootstrapQuantileDiffsClustered is BootstrapQuantileDiffClustered for
// several quantiles: each resample of sessions serves every quantile.
// diffs[i] and cis[i] belong to qs[i]; with one quantile the result is
// BootstrapQuantileDiffClustered's for the same seed.
func BootstrapQuantileDiffsClustered(x, y [][]float64, qs []float64, resamples int, seed uint64, level float64) (diffs []float64, cis []Interval) {
	sx := newClusteredSample(x)
	sy := newClusteredSample(y)
	diffs = make([]float64, len(qs))
	cis = make([]Interval, len(qs))
	d := make([][]float64, len(qs))
	ok := resamples >= 1 && level > 0 && level < 1
	some := false
	for i, q := range qs {
		diffs[i] = QuantileSorted(sy.values, q) - QuantileSorted(sx.values, q)
		cis[i] = invalid(level)
		if ok && !math.IsNaN(diffs[i]) {
			d[i] = make([]float64, resamples)
			some = true
		}
	}
	if !some {
		return diffs, cis
	}
	r := resampler{rng: newRand(seed)}
	wx := make([]int32, len(x))
	wy := make([]int32, len(y))
	qy := make([]float64, len(qs))
	for k := range resamples {
		ty := sy.resample(wy, &r)
		for i, q := range qs {
			if d[i] != nil {
				qy[i] = sy.quantileWeighted(q, wy, ty)
			}
		}
		tx := sx.resample(wx, &r)
		for i, q := range qs {
			if d[i] != nil {
				d[i][k] = qy[i] - sx.quantileWeighted(q, wx, tx)
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
