package diff

import (
	"context"
	"math"
	"testing"

	"github.com/retrace-dev/retrace/synth"
)

// binomialCritical returns the smallest c with P(X > c) <= tail for X ~
// Binomial(n, p).
func binomialCritical(n int, p, tail float64) int {
	cdf := 0.0
	for k := 0; k <= n; k++ {
		lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
		cdf += math.Exp(lg(n) - lg(k) - lg(n-k) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
		if 1-cdf <= tail {
			return k
		}
	}
	return n
}

// TestTheAACalibrationHoldsAlpha splits one synth corpus in random halves
// 200 times and compares every row between the halves: nothing changed,
// so every regressed or improved row is a false alarm. The family-wise
// rate (splits with any alarm) must stay at or below alpha; the test
// allows the binomial noise of 200 splits only: it fails when the alarms
// exceed the count that a true rate of exactly alpha would exceed with
// probability 1% or less (the splits share sessions, so they are not
// quite independent; the bound is the one for independent ones).
func TestTheAACalibrationHoldsAlpha(t *testing.T) {
	if testing.Short() {
		t.Skip("200 splits")
	}
	base := load(t, "base", writeCorpus(t, "base", synth.Options{Sessions: 400, Seed: 5}))
	const splits = 200
	res, err := Compare(context.Background(), base, base, Options{AA: splits, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	// Splits with every call taken as independent, for the record: why
	// the default treats sessions as the unit (200 of them gave 0.32).
	naive, err := Compare(context.Background(), base, base, Options{AA: 50, Seed: 9, callLevel: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("call-level tests: family-wise false alarms %d of %d splits (%.3g)", naive.Calibration.FamilyAlarms, naive.Calibration.Splits, naive.Calibration.FamilyRate)
	cal := res.Calibration
	if cal == nil || cal.Splits != splits {
		t.Fatalf("calibration %+v", cal)
	}
	limit := binomialCritical(splits, cal.Alpha, 0.01)
	t.Logf("family-wise false alarms: %d of %d splits (%.3g; alpha %g, allowed up to %d); %d rows", cal.FamilyAlarms, splits, cal.FamilyRate, cal.Alpha, limit, len(cal.Rows))
	if cal.FamilyAlarms > limit {
		t.Errorf("%d of %d A/A splits raised an alarm: more than %d, the most a rate of alpha %g gives 99%% of the time", cal.FamilyAlarms, splits, limit, cal.Alpha)
	}
	for _, r := range cal.Rows {
		if r.Alarms > 0 {
			t.Logf("%s: %d of %d", r.Metric, r.Alarms, r.Splits)
		}
		if r.Splits == 0 || r.Rate != float64(r.Alarms)/float64(r.Splits) {
			t.Errorf("row %+v", r)
		}
	}
	if len(cal.Rows) < 30 {
		t.Errorf("only %d rows were calibrated", len(cal.Rows))
	}
	// The same corpus on both sides changes nothing.
	for _, r := range res.Rows {
		if r.Diff != 0 || r.Verdict == VerdictRegressed || r.Verdict == VerdictImproved {
			t.Errorf("a corpus against itself: %s is %s", describeRow(r), r.Verdict)
		}
	}
}
