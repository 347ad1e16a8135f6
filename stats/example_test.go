package stats_test

import (
	"fmt"

	"github.com/retrace-dev/retrace/stats"
)

// A failure rate went from 48 of 80 runs to 56 of 70: the difference with
// its interval, and the test TwoProportions picks for these counts.
func ExampleNewcombe() {
	ci := stats.Newcombe(48, 80, 56, 70, 0.95)
	t := stats.TwoProportions(48, 80, 56, 70)
	fmt.Printf("p2 − p1 = %.4f, 95%% CI [%.4f, %.4f]\n", 56.0/70-48.0/80, ci.Lo, ci.Hi)
	fmt.Printf("%s: z = %.3f, p = %.4f\n", t.Name, t.Statistic, t.P)
	// Output:
	// p2 − p1 = 0.2000, 95% CI [0.0524, 0.3339]
	// two-proportion z test (pooled; = χ² without continuity correction): z = 2.650, p = 0.0080
}

// The same 40 scenarios ran before and after a change: 9 went from pass
// to fail and 2 from fail to pass. Only those discordant pairs count.
func ExampleMcNemar() {
	t := stats.McNemar(9, 2)
	fmt.Printf("%s: p = %.4f\n", t.Name, t.P)
	// Output:
	// McNemar (exact binomial): p = 0.0654
}

// Five metrics tested at once: Holm's adjustment keeps the chance of any
// false alarm at alpha, BH the expected share of false alarms.
func ExampleHolm() {
	p := []float64{0.001, 0.04, 0.03, 0.2, 0.012}
	fmt.Printf("Holm %.3f\n", stats.Holm(p))
	fmt.Printf("BH   %.3f\n", stats.BenjaminiHochberg(p))
	// Output:
	// Holm [0.005 0.090 0.090 0.200 0.048]
	// BH   [0.005 0.050 0.050 0.200 0.030]
}

// The median of a latency sample before and after, with a seeded
// bootstrap interval: the same seed gives the same interval on every run.
// The interval holds 0: these samples do not show the median moved.
func ExampleBootstrapQuantileDiff() {
	before := []float64{12, 15, 11, 40, 13, 14, 90, 12, 16, 13, 15, 12, 14, 200, 13}
	after := []float64{13, 16, 12, 80, 14, 15, 150, 13, 17, 14, 16, 13, 15, 400, 14}
	d, ci := stats.BootstrapQuantileDiff(before, after, 0.5, 2000, 1, 0.95)
	fmt.Printf("p50 %+.1f ms, 95%% CI [%.1f, %.1f]\n", d, ci.Lo, ci.Hi)
	// Output:
	// p50 +1.0 ms, 95% CI [-1.0, 3.0]
}
