package diff

import (
	"math/rand/v2"
)

// calibrate runs the A/A calibration: opts.AA times, the base's sessions
// are shuffled (seeded) and cut in two halves, and every row is compared
// between the halves as between base and candidate. Nothing changed
// between two halves of one corpus, so every regressed or improved
// verdict is a false alarm; the family rate (splits with any alarm) is to
// be read next to alpha. The bootstrap of each split takes at most
// DefaultAAResamples resamples.
func calibrate(specs []spec, base *corpus, opts Options) *Calibration {
	cal := &Calibration{Splits: opts.AA, Seed: int64(opts.Seed), Alpha: opts.Alpha}
	rng := rand.New(rand.NewPCG(opts.Seed, 0xaa))
	resamples := min(opts.Resamples, DefaultAAResamples)
	per := map[string]*CalibrationRow{}
	var order []string
	n := len(base.sessions)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	for split := range opts.AA {
		rng.Shuffle(n, func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		h := n / 2
		o := opts
		o.Seed = opts.Seed + uint64(split) + 1
		o.Count = nil // counted by split, below
		rows, _ := compareAll(specs, base, base, append([]int(nil), idx[:h]...), append([]int(nil), idx[h:2*h]...), o, resamples)
		if opts.Count != nil {
			opts.Count("A/A splits", split+1, opts.AA)
		}
		alarm := false
		for _, r := range rows {
			cr, ok := per[r.Metric]
			if !ok {
				cr = &CalibrationRow{Metric: r.Metric}
				per[r.Metric] = cr
				order = append(order, r.Metric)
			}
			cr.Splits++
			if r.Verdict == VerdictRegressed || r.Verdict == VerdictImproved {
				cr.Alarms++
				alarm = true
			}
		}
		if alarm {
			cal.FamilyAlarms++
		}
	}
	for _, m := range order {
		cr := per[m]
		cr.Rate = float64(cr.Alarms) / float64(cr.Splits)
		cal.Rows = append(cal.Rows, *cr)
	}
	if cal.Splits > 0 {
		cal.FamilyRate = float64(cal.FamilyAlarms) / float64(cal.Splits)
	}
	return cal
}
