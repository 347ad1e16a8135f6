package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// choose is C(n,k) by the textbook recurrence, for checking.
func choose(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

func TestPassKMatchesTheBinomialDefinitions(t *testing.T) {
	for n := 1; n <= 20; n++ {
		for c := 0; c <= n; c++ {
			for k := 1; k <= n; k++ {
				hat, at := PassHatK(n, c, k), PassAtK(n, c, k)
				wantHat := choose(c, k) / choose(n, k)
				wantAt := 1 - choose(n-c, k)/choose(n, k)
				if math.Abs(hat-wantHat) > 1e-12 || math.Abs(at-wantAt) > 1e-12 {
					t.Fatalf("n=%d c=%d k=%d: pass^k %v pass@k %v, want %v %v", n, c, k, hat, at, wantHat, wantAt)
				}
			}
		}
	}
}

func TestPassKKnownValues(t *testing.T) {
	for _, tc := range []struct {
		n, c, k int
		hat, at float64
	}{
		{5, 3, 1, 0.6, 0.6}, // k = 1: both are the pass rate
		{5, 3, 2, 0.3, 0.9}, // C(3,2)/C(5,2) = 3/10; 1 − C(2,2)/C(5,2) = 9/10
		{5, 3, 3, 0.1, 1},   // C(3,3)/C(5,3) = 1/10; only 2 failures: 3 trials hold a pass
		{5, 3, 5, 0, 1},
		{5, 5, 5, 1, 1}, // every trial passed
		{5, 0, 1, 0, 0}, // none did
		{4, 2, 2, 1.0 / 6, 5.0 / 6},
	} {
		if hat, at := PassHatK(tc.n, tc.c, tc.k), PassAtK(tc.n, tc.c, tc.k); math.Abs(hat-tc.hat) > 1e-12 || math.Abs(at-tc.at) > 1e-12 {
			t.Errorf("n=%d c=%d k=%d: pass^k %v pass@k %v, want %v %v", tc.n, tc.c, tc.k, hat, at, tc.hat, tc.at)
		}
	}
}

func TestPassKRefusesCountsThatMakeNoSense(t *testing.T) {
	for _, tc := range [][3]int{{5, 3, 0}, {5, 3, 6}, {5, -1, 1}, {5, 6, 1}, {0, 0, 1}} {
		if !math.IsNaN(PassHatK(tc[0], tc[1], tc[2])) || !math.IsNaN(PassAtK(tc[0], tc[1], tc[2])) {
			t.Errorf("n=%d c=%d k=%d: want NaN", tc[0], tc[1], tc[2])
		}
	}
}

// TestPassKIsUnbiased checks the estimators' defining property: over
// many draws of n Bernoulli(p) trials, their mean is p^k and 1−(1−p)^k,
// the true chances, where the plug-in (c/n)^k is biased.
func TestPassKIsUnbiased(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, k, p, draws = 8, 3, 0.7, 200000
	var sumHat, sumAt, sumPlugin float64
	for range draws {
		c := 0
		for range n {
			if rng.Float64() < p {
				c++
			}
		}
		sumHat += PassHatK(n, c, k)
		sumAt += PassAtK(n, c, k)
		sumPlugin += math.Pow(float64(c)/n, k)
	}
	hat, at, plugin := sumHat/draws, sumAt/draws, sumPlugin/draws
	if math.Abs(hat-math.Pow(p, k)) > 0.003 || math.Abs(at-(1-math.Pow(1-p, k))) > 0.003 {
		t.Fatalf("mean pass^k %v pass@k %v, want %v %v", hat, at, math.Pow(p, k), 1-math.Pow(1-p, k))
	}
	// The plug-in is off by more than the sampling noise: the test can
	// tell an unbiased estimator from a biased one.
	if math.Abs(plugin-math.Pow(p, k)) < 0.01 {
		t.Fatalf("the plug-in (c/n)^k has mean %v, near %v: the test cannot see bias", plugin, math.Pow(p, k))
	}
}

func TestPassKHundredsOfTrialsDoNotOverflow(t *testing.T) {
	if got := PassHatK(1000, 900, 500); math.IsNaN(got) || math.IsInf(got, 0) || got < 0 || got > 1 {
		t.Fatalf("PassHatK(1000, 900, 500) = %v", got)
	}
	if got := PassAtK(1000, 1, 1000); got != 1 {
		t.Fatalf("PassAtK(1000, 1, 1000) = %v, want 1", got)
	}
}
