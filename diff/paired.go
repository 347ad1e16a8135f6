package diff

import (
	"slices"

	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/stats"
)

// pair compares two eval results scenario by scenario: McNemar's test on
// the scenarios that passed on one side and failed on the other (a
// scenario that passes on both says nothing about the change). A
// scenario passes when its verdict is pass; every other verdict (fail,
// flaky, error, inconclusive) counts as not passing. Nil when no scenario
// is in both.
func pair(base, cand *results.Results, alpha float64) *Paired {
	bv := map[string]results.Verdict{}
	for _, s := range base.Scenarios {
		bv[s.Name] = s.Verdict
	}
	p := &Paired{Flips: []Flip{}}
	var fixed []Flip
	for _, s := range cand.Scenarios {
		from, ok := bv[s.Name]
		if !ok {
			continue
		}
		p.Scenarios++
		bp, cp := from == results.VerdictPass, s.Verdict == results.VerdictPass
		switch {
		case bp && !cp:
			p.PassFail++
			p.Flips = append(p.Flips, Flip{Scenario: s.Name, From: string(from), To: string(s.Verdict)})
		case !bp && cp:
			p.FailPass++
			fixed = append(fixed, Flip{Scenario: s.Name, From: string(from), To: string(s.Verdict)})
		}
	}
	if p.Scenarios == 0 {
		return nil
	}
	byName := func(a, b Flip) int {
		if a.Scenario < b.Scenario {
			return -1
		}
		if a.Scenario > b.Scenario {
			return 1
		}
		return 0
	}
	slices.SortFunc(p.Flips, byName)
	slices.SortFunc(fixed, byName)
	p.Flips = append(p.Flips, fixed...)
	p.Test = stats.McNemar(p.PassFail, p.FailPass)
	switch {
	case p.Test.P < alpha && p.PassFail > p.FailPass:
		p.Verdict = VerdictRegressed
	case p.Test.P < alpha && p.FailPass > p.PassFail:
		p.Verdict = VerdictImproved
	case p.PassFail == 0 && p.FailPass == 0:
		p.Verdict = VerdictUnchanged
	default:
		p.Verdict = VerdictInconclusive
	}
	return p
}
