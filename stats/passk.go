package stats

import "math"

// An agent that passes a task 3 times in 5 is neither reliable nor
// useless, and which of the two matters depends on how it is used. Two
// numbers, both estimated without bias from n trials of which c passed,
// say it for k trials:
//
//   - pass^k (Yao et al., τ-bench, 2024) is the chance that all of k
//     trials pass: what a user who runs the task k times, and needs it to
//     work every time, can count on. C(c,k)/C(n,k): the share of the
//     k-subsets of the n trials that hold only passes.
//   - pass@k (Chen et al., HumanEval, 2021) is the chance that at least
//     one of k trials passes: what a user who may retry, and can tell a
//     pass, gets. 1 − C(n−c,k)/C(n,k).
//
// Both are computed as products of ratios, never as binomials, so that
// no factorial overflows for hundreds of trials.

// PassHatK returns pass^k, the unbiased estimate from n trials with c
// passes of the chance that k trials all pass: C(c,k)/C(n,k). It is NaN
// for counts that make no sense (k < 1, k > n, c < 0, c > n).
func PassHatK(n, c, k int) float64 {
	if !validPassK(n, c, k) {
		return math.NaN()
	}
	return choiceRatio(n, c, k)
}

// PassAtK returns pass@k, the unbiased estimate from n trials with c
// passes of the chance that at least one of k trials passes:
// 1 − C(n−c,k)/C(n,k). It is NaN for counts that make no sense.
func PassAtK(n, c, k int) float64 {
	if !validPassK(n, c, k) {
		return math.NaN()
	}
	return 1 - choiceRatio(n, n-c, k)
}

func validPassK(n, c, k int) bool { return k >= 1 && k <= n && c >= 0 && c <= n }

// choiceRatio is C(m,k)/C(n,k) for 0 <= m <= n and 1 <= k <= n: the
// product over i < k of (m−i)/(n−i), 0 once m−i reaches 0.
func choiceRatio(n, m, k int) float64 {
	r := 1.0
	for i := range k {
		if m-i <= 0 {
			return 0
		}
		r *= float64(m-i) / float64(n-i)
	}
	return r
}
