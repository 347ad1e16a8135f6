package diff

import (
	"fmt"
	"math"
	"strings"

	"github.com/retrace-dev/retrace/condition"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/stats"
)

// A gate is one --gate: a condition on the diff that fails the command
// (exit 3) or cannot be decided with the data given (exit 4). It is a
// condition of package condition, written for condition.Gate: the
// grammar and its decision are the ones eval thresholds use, documented
// there (and in docs/conditions.md).

// The kinds of gate.
const (
	GateMetric      = condition.KindMetric
	GateNoNew       = condition.KindNoNewDetector
	GateNoRegressed = condition.KindNoRegressed
)

// Gate is one parsed gate.
type Gate = condition.Condition

// ParseGate parses one gate (condition.Parse for condition.Gate); the
// error is metrics.ExprErrors, each problem at its column.
func ParseGate(src string) (*Gate, error) {
	return condition.Parse(src, condition.Gate)
}

// checkGate decides the gate g on the result.
func checkGate(g *Gate, res *Result, b, c *side, opts Options) GateResult {
	gr := GateResult{Gate: g.String(), Status: GatePass}
	switch g.Kind {
	case GateNoNew:
		n := 0
		for _, f := range res.Findings.New {
			if f.Severity.Rank() >= g.Severity.Rank() {
				n++
			}
		}
		gr.Detail = fmt.Sprintf("%d new findings of severity %s or worse", n, g.Severity)
		if n > 0 {
			gr.Status = GateFail
		}
		return gr
	case GateNoRegressed:
		// Scenarios first: a scenario that broke is the plainest
		// regression there is, and needs no statistics when scripted.
		var names []string
		for _, n := range res.RegressedScenarios() {
			names = append(names, "scenario "+n)
		}
		for _, r := range res.Rows {
			if r.Verdict == VerdictRegressed {
				names = append(names, r.Metric)
			}
		}
		if res.Paired != nil && res.Paired.Verdict == VerdictRegressed {
			names = append(names, "paired scenarios (McNemar)")
		}
		undecided := 0
		if res.Scenarios != nil {
			undecided = res.Scenarios.Count(results.ChangeInconclusive)
		}
		switch {
		case len(names) > 0:
			gr.Status = GateFail
			gr.Detail = fmt.Sprintf("%d regressed: %s", len(names), strings.Join(names, ", "))
		case undecided > 0:
			gr.Status = GateInconclusive
			gr.Detail = fmt.Sprintf("no row or scenario regressed, but %d live scenarios went from pass to fail within chance; more runs would decide", undecided)
		case len(res.Rows) == 0 && res.Scenarios == nil:
			// Every row was skipped and there are no eval results to
			// pair: nothing was checked, which is no pass.
			gr.Status = GateInconclusive
			gr.Detail = fmt.Sprintf("no row could be compared (all %d skipped with too little data) and there are no eval results on both sides: nothing was checked", len(res.Skipped))
		default:
			gr.Detail = "no row or scenario regressed"
		}
		return gr
	}
	name := g.Aggregate.String()
	var row *Row
	for i := range res.Rows {
		if res.Rows[i].Metric == name {
			row = &res.Rows[i]
		}
	}
	if row == nil {
		// The table skipped the row. A gate reads what it needs itself:
		// against base both sides' data (a rate with nothing counted on
		// either side still has an interval), against a number the
		// candidate's alone.
		sp := specOf(g.Aggregate)
		var r Row
		var why string
		if g.Base {
			r, why = compareRow(sp, b.c.series[name], c.c.series[name], opts, opts.Resamples)
		} else {
			r, why = candidateRow(sp, c.c.series[name])
		}
		if why != "" {
			gr.Status = GateInconclusive
			gr.Detail = name + " has too little data: " + why
			return gr
		}
		row = &r
	}
	// The interval of what is compared, and the limit it is compared with.
	var ci stats.Interval
	limit := g.LimitAt(row.Base)
	what := ""
	if g.Base {
		ci = row.CI
		what = fmt.Sprintf("the difference %s, interval [%s, %s], against %s (the gate at base %s)", FormatValue(*row, row.Diff),
			FormatValue(*row, ci.Lo), FormatValue(*row, ci.Hi), FormatValue(*row, limit), FormatValue(*row, row.Base))
	} else {
		ci = candInterval(g.Aggregate, c.c.series[name], opts)
		what = fmt.Sprintf("the candidate's %s, interval [%s, %s], against %s", FormatValue(*row, row.Cand),
			FormatValue(*row, ci.Lo), FormatValue(*row, ci.Hi), FormatValue(*row, limit))
	}
	if !ci.Valid() {
		gr.Status = GateInconclusive
		gr.Detail = what + ": no interval"
		return gr
	}
	switch g.Decide(ci, limit) {
	case condition.Pass:
		gr.Detail = what + ": the whole interval holds"
	case condition.Fail:
		gr.Status = GateFail
		gr.Detail = what + ": the whole interval fails"
	default:
		gr.Status = GateInconclusive
		half, mid := (ci.Hi-ci.Lo)/2, (ci.Hi+ci.Lo)/2
		if d := math.Abs(mid - limit); d > 0 {
			// A half-width shrinks as 1/√n: n must grow by (h/d)².
			gr.MoreRuns = math.Ceil((half/d)*(half/d)*10) / 10
			whose := "the runs on each side"
			if !g.Base {
				// Against a number only the candidate's interval counts.
				whose = "the candidate's runs"
			}
			gr.Detail = fmt.Sprintf("%s: the interval straddles the limit; about %.1f× %s would decide it", what, gr.MoreRuns, whose)
		} else {
			gr.Detail = what + ": the interval is centred on the limit; no number of runs is sure to decide it"
		}
	}
	return gr
}

// candidateRow is the row of a gate against a number when the table
// skipped it: the candidate's value alone, or why the candidate has too
// little data for it (the table's minimums, on the candidate's side).
func candidateRow(sp spec, c *series) (Row, string) {
	row := Row{Metric: sp.name, Kind: sp.kind, Better: sp.better, Denominator: sp.denom, Unit: "fraction"}
	if sp.kind != KindRate {
		row.Unit = sp.agg.Unit()
	}
	if n := c.sessionsWith(); n < minSessions {
		return row, fmt.Sprintf("the candidate has %d sessions with %s (fewer than %d)", n, sp.denom, minSessions)
	}
	switch sp.kind {
	case KindRate:
		h, n := c.sums()
		if n < minRateDenominator {
			return row, fmt.Sprintf("the candidate has %d %s in the denominator (fewer than %d)", n, sp.denom, minRateDenominator)
		}
		row.CandCount, row.CandN, row.Cand = h, n, float64(h)/float64(n)
	case KindDistribution:
		cv := c.flat()
		if need := sp.agg.Func.MinSamples(); len(cv) < need {
			return row, fmt.Sprintf("the candidate has %d samples (%s needs %d)", len(cv), sp.agg.Func, need)
		}
		row.CandN, row.Cand = len(cv), stats.Quantile(cv, sp.agg.Func.Quantile())
	default:
		cv := c.flat()
		row.CandN, row.Cand = len(cv), mean(cv)
	}
	return row, ""
}

// candInterval is the interval of the candidate's value alone, for a gate
// against a constant: Wilson on the design-effect effective counts for a
// rate, the session bootstrap for a quantile or a mean.
func candInterval(a *metrics.Aggregate, s *series, opts Options) stats.Interval {
	level := 1 - opts.Alpha
	seed := seedOf(opts.Seed, "gate "+a.String())
	zero := [][]float64{{0}}
	switch {
	case a.Func == metrics.FuncRate:
		cs := clusters(s)
		h, n := s.sums()
		neff := stats.EffectiveN(cs)
		if n == 0 || math.IsNaN(neff) {
			return stats.Wilson(h, n, level)
		}
		ne := int(math.Round(neff))
		return stats.Wilson(int(math.Round(float64(h)/float64(n)*float64(ne))), ne, level)
	case a.Func.Quantile() > 0:
		_, ci := stats.BootstrapQuantileDiffClustered(zero, s.values, a.Func.Quantile(), opts.Resamples, seed, level)
		return ci
	}
	_, ci := bootstrapMeanDiff(zero, s.values, opts.Resamples, seed, level)
	return ci
}
