package stats

import "math"

// MoreRunsToReach estimates how many more runs (or sessions, or calls —
// whatever n counts) would shrink an interval's half-width from halfWidth
// to target, for a statistic whose uncertainty falls as 1/√n (rates, means,
// quantiles and their differences all do): n·(halfWidth/target)² − n,
// rounded up. It is what an inconclusive verdict can tell the user ("about
// N more runs would decide it"): an estimate from the spread seen so far,
// not a promise, since more data also moves the estimate.
//
// It returns 0 when the interval is already narrow enough, at most
// math.MaxInt32 (a target no corpus will reach), and −1 when no
// estimate can be made (n < 1, or a half-width or target that is not a
// positive number).
func MoreRunsToReach(n int, halfWidth, target float64) int {
	if n < 1 || !(halfWidth > 0) || !(target > 0) || math.IsInf(halfWidth, 0) || math.IsInf(target, 0) {
		return -1
	}
	if halfWidth <= target {
		return 0
	}
	r := halfWidth / target
	need := math.Ceil(float64(n) * r * r)
	if need > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(need) - n
}
