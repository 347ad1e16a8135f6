package diff

import (
	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/stats"
)

// Verdict is what a row of a diff says about the candidate. The set is
// closed.
type Verdict string

// The verdicts; doc.go states the rule that picks one.
const (
	// VerdictImproved: the adjusted p is below alpha and the interval
	// lies wholly on the better side of zero.
	VerdictImproved Verdict = "improved"
	// VerdictRegressed: the adjusted p is below alpha and the interval
	// lies wholly on the worse side of zero.
	VerdictRegressed Verdict = "regressed"
	// VerdictUnchanged: the interval lies within ±min-effect, so no
	// change that matters fits the data.
	VerdictUnchanged Verdict = "unchanged"
	// VerdictInconclusive: the interval does not exclude a change that
	// matters, and the test does not show one.
	VerdictInconclusive Verdict = "inconclusive"
)

// Kind says what a row measures, which chooses its test.
type Kind string

// The kinds of row.
const (
	// KindRate is a share of a denominator (failed calls among executed
	// calls): Newcombe interval, Fisher or z test.
	KindRate Kind = "rate"
	// KindDistribution is a quantile of per-call or per-response samples
	// (p95 of bash durations): Mann–Whitney U, bootstrap interval.
	KindDistribution Kind = "distribution"
	// KindMean is the mean of one number per session (turns per session):
	// Mann–Whitney U, bootstrap interval of the difference of means.
	KindMean Kind = "mean"
)

// Better says which direction of a row is an improvement.
type Better string

// The directions.
const (
	BetterLower  Better = "lower"
	BetterHigher Better = "higher"
)

// Side describes one side of a diff: what was read and how much of it.
type Side struct {
	// Label is how the side was given: its paths or its selector.
	Label string `json:"label"`
	// Selector is the label selector (tag:prompt=v1), "" when the side is
	// its own runs.
	Selector string `json:"selector,omitempty"`
	// Paths are the runs given for the side.
	Paths []string `json:"paths,omitempty"`
	// Sessions and ToolCalls count what the side holds.
	Sessions  int `json:"sessions"`
	ToolCalls int `json:"tool_calls"`
	// Results is the eval results.json the side was read from, if any.
	Results string `json:"results,omitempty"`
}

// Row is one metric compared across the two sides.
type Row struct {
	// Metric is the aggregate in canonical form, as metrics.Aggregate
	// writes it: "rate(failure, tool=bash)", "p95(duration, tool=read)";
	// a detector's row is "sessions_with(detector=lost_call)".
	Metric string `json:"metric"`
	// Kind chooses the test: rate, distribution or mean.
	Kind Kind `json:"kind"`
	// Unit is the unit of Base, Cand and Diff: "ms", "tokens", "fraction"
	// or "" (a count).
	Unit string `json:"unit"`
	// Denominator names what a rate is among ("bash calls that ran") or
	// what a distribution is over.
	Denominator string `json:"denominator"`
	// Base and Cand are the values on each side; Diff is Cand − Base.
	Base float64 `json:"base"`
	Cand float64 `json:"cand"`
	Diff float64 `json:"diff"`
	// BaseN and CandN are the denominators or sample counts.
	BaseN int `json:"base_n"`
	CandN int `json:"cand_n"`
	// BaseCount and CandCount are a rate's numerators.
	BaseCount int `json:"base_count,omitempty"`
	CandCount int `json:"cand_count,omitempty"`
	// CI is the confidence interval of Diff.
	CI stats.Interval `json:"ci"`
	// Test is the test of "no difference" and its unadjusted p.
	Test stats.Test `json:"test"`
	// PAdjusted is Test.P after the correction for many rows.
	PAdjusted float64 `json:"p_adjusted"`
	// MinEffect is the smallest difference that matters, in Unit
	// (absolute) or, when Relative, as a fraction of Base.
	MinEffect float64 `json:"min_effect"`
	Relative  bool    `json:"relative,omitempty"`
	// Verdict says what the row shows.
	Verdict Verdict `json:"verdict"`
	// Better says which direction improves.
	Better Better `json:"better"`
}

// Skipped is a metric left out for too little data.
type Skipped struct {
	Metric string `json:"metric"`
	Reason string `json:"reason"`
}

// Flip is one scenario whose pass/fail changed between two eval results.
type Flip struct {
	Scenario string `json:"scenario"`
	// From and To are the verdicts (pass, fail, ...) on base and candidate.
	From string `json:"from"`
	To   string `json:"to"`
}

// Paired is the per-scenario comparison of two eval results.
type Paired struct {
	// Scenarios counts the scenarios both results hold.
	Scenarios int `json:"scenarios"`
	// PassFail and FailPass are McNemar's discordant counts.
	PassFail int `json:"pass_fail"`
	FailPass int `json:"fail_pass"`
	// Test is McNemar's test on them.
	Test stats.Test `json:"test"`
	// Verdict is regressed when more scenarios broke than were fixed
	// beyond chance, improved for the converse, else unchanged or
	// inconclusive.
	Verdict Verdict `json:"verdict"`
	// Flips lists every scenario that changed, pass→fail first.
	Flips []Flip `json:"flips"`
}

// Findings are the detector findings that differ between the sides.
type Findings struct {
	// New are in the candidate and not in the base; Resolved the reverse.
	// Findings are matched by detector and a key that does not name the
	// session (doc.go).
	New      []detectors.Finding `json:"new"`
	Resolved []detectors.Finding `json:"resolved"`
}

// GateStatus is the outcome of one gate.
type GateStatus string

// The gate outcomes.
const (
	GatePass         GateStatus = "pass"
	GateFail         GateStatus = "fail"
	GateInconclusive GateStatus = "inconclusive"
)

// GateResult is one --gate checked.
type GateResult struct {
	// Gate is the gate in canonical form.
	Gate   string     `json:"gate"`
	Status GateStatus `json:"status"`
	// Detail says what decided it, with the interval used.
	Detail string `json:"detail"`
	// MoreRuns estimates how many times the current runs would decide an
	// inconclusive gate (from the half-width ∝ 1/√n), 0 otherwise.
	MoreRuns float64 `json:"more_runs,omitempty"`
}

// CalibrationRow is one metric's false alarms over the A/A splits.
type CalibrationRow struct {
	Metric string `json:"metric"`
	// Splits counts the splits the metric could be compared in.
	Splits int `json:"splits"`
	// Alarms counts the splits that called it regressed or improved.
	Alarms int `json:"alarms"`
	// Rate is Alarms/Splits.
	Rate float64 `json:"rate"`
}

// Calibration is the A/A noise floor: BASE split in random halves.
type Calibration struct {
	Splits int     `json:"splits"`
	Seed   int64   `json:"seed"`
	Alpha  float64 `json:"alpha"`
	// FamilyAlarms counts the splits in which any row alarmed; FamilyRate
	// is FamilyAlarms/Splits, to be read next to Alpha.
	FamilyAlarms int              `json:"family_alarms"`
	FamilyRate   float64          `json:"family_rate"`
	Rows         []CalibrationRow `json:"rows"`
}

// Result is one diff of BASE against CAND; it is also the --format json
// document.
type Result struct {
	Base Side `json:"base"`
	Cand Side `json:"cand"`
	// Alpha is the significance level of the verdicts and intervals.
	Alpha float64 `json:"alpha"`
	// Correction names the multiple-testing correction: holm or bh.
	Correction string `json:"correction"`
	// Resamples and Seed drive the bootstrap intervals.
	Resamples int   `json:"resamples"`
	Seed      int64 `json:"seed"`
	// Clustered says the distribution intervals resample whole sessions.
	Clustered bool `json:"clustered"`
	// Rows are the compared metrics, in a fixed order.
	Rows []Row `json:"rows"`
	// Skipped are metrics left out for too little data.
	Skipped []Skipped `json:"skipped,omitempty"`
	// Scenarios is the scenario-by-scenario verdict when both sides have
	// eval results: results.Compare, the one retrace eval --baseline
	// reports. A scenario whose runs all passed in the base and not all
	// in the candidate is regressed (a live one only beyond chance).
	Scenarios   *results.Comparison `json:"scenarios,omitempty"`
	Paired      *Paired             `json:"paired,omitempty"`
	Findings    Findings            `json:"findings"`
	Gates       []GateResult        `json:"gates,omitempty"`
	Calibration *Calibration        `json:"calibration,omitempty"`
}

// RegressedScenarios returns the names of the scenarios that regressed,
// in order; none without eval results on both sides.
func (r *Result) RegressedScenarios() []string {
	if r.Scenarios == nil {
		return nil
	}
	return r.Scenarios.Regressed()
}

// Counts returns how many rows have each verdict.
func (r *Result) Counts() map[Verdict]int {
	n := map[Verdict]int{}
	for _, row := range r.Rows {
		n[row.Verdict]++
	}
	return n
}
