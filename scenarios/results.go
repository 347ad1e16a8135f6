package scenarios

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/retrace-dev/retrace/trajectory"
)

// ResultsVersion is the version of the results JSON format.
const ResultsVersion = 1

// Verdict is a scenario's result over its runs. The set is closed.
type Verdict string

// The verdicts.
const (
	// VerdictPass: every run passed.
	VerdictPass Verdict = "pass"
	// VerdictFail: no run passed.
	VerdictFail Verdict = "fail"
	// VerdictFlaky: some runs passed and some failed; never a pass.
	VerdictFlaky Verdict = "flaky"
	// VerdictError: retrace could not run the scenario.
	VerdictError Verdict = "error"
	// VerdictInconclusive: every run passed, but a metric threshold had
	// too few runs or samples to decide; never a pass.
	VerdictInconclusive Verdict = "inconclusive"
)

// Failure is one expectation a run did not meet.
type Failure struct {
	// Expect says the expectation and where it is written (file:line: path: what).
	Expect string `json:"expect"`
	// Got says what happened instead.
	Got string `json:"got"`
	// At is the trajectory line that shows it (file:line), when one does.
	At string `json:"at,omitempty"`
}

// RunResult is one run of a scenario.
type RunResult struct {
	// Repeat numbers the run from 1.
	Repeat int `json:"repeat"`
	// Passed says every expectation held.
	Passed bool `json:"passed"`
	// Error is set when retrace could not run the scenario.
	Error string `json:"error,omitempty"`
	// Reason, Turns and ExitCode are the session's end.
	Reason   trajectory.EndReason `json:"reason,omitempty"`
	Turns    int                  `json:"turns"`
	ExitCode int                  `json:"exit_code"`
	// EndError is the error that ended the session, when there was one
	// (the script's turn that was missed, say).
	EndError string `json:"end_error,omitempty"`
	// Trajectory is the recording; Session its id.
	Trajectory string `json:"trajectory,omitempty"`
	Session    string `json:"session,omitempty"`
	// Findings count the detectors' findings, by detector id (only when
	// the scenario expects something of the detectors).
	Findings   map[string]int `json:"findings,omitempty"`
	Failures   []Failure      `json:"failures,omitempty"`
	DurationMs float64        `json:"duration_ms"`
	// Warnings say what the reader of the result must know about how the
	// run went, such as an agent CLI that ran without network isolation
	// or a transcript that could not be merged.
	Warnings []string `json:"warnings,omitempty"`
}

// ScenarioResult is a scenario's runs and verdict.
type ScenarioResult struct {
	Name        string   `json:"name"`
	File        string   `json:"file"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Verdict     Verdict  `json:"verdict"`
	// Passed counts the runs that passed, of len(Runs): pass^k holds when
	// Passed == len(Runs).
	Passed int         `json:"passed"`
	Runs   []RunResult `json:"runs"`
	// Thresholds are the scenario's metric thresholds, checked over all
	// of its runs.
	Thresholds []ThresholdResult `json:"thresholds,omitempty"`
}

// decide sets Passed and Verdict from the runs and the thresholds.
func (s *ScenarioResult) decide() {
	s.Passed = 0
	errs := 0
	for i := range s.Runs {
		r := &s.Runs[i]
		r.Passed = r.Error == "" && len(r.Failures) == 0
		if r.Passed {
			s.Passed++
		}
		if r.Error != "" {
			errs++
		}
	}
	failed, undecided := false, false
	for _, t := range s.Thresholds {
		failed = failed || t.Verdict == VerdictFail
		undecided = undecided || t.Verdict == VerdictInconclusive
	}
	switch {
	case errs > 0:
		s.Verdict = VerdictError
	case failed || s.Passed == 0:
		// A threshold that fails is decided, whatever the runs did.
		s.Verdict = VerdictFail
	case s.Passed < len(s.Runs):
		s.Verdict = VerdictFlaky
	case undecided:
		s.Verdict = VerdictInconclusive
	default:
		s.Verdict = VerdictPass
	}
}

// Results are the results of a suite's run, or of several shards merged.
type Results struct {
	Version int `json:"version"`
	// Shard is "i/n" for the results of one shard.
	Shard      string           `json:"shard,omitempty"`
	Scenarios  []ScenarioResult `json:"scenarios"`
	DurationMs float64          `json:"duration_ms"`
	// Baseline is the comparison with a baseline run's results, when
	// one was given (baseline.go).
	Baseline *Comparison `json:"baseline,omitempty"`
}

// Count returns the number of scenarios with verdict v.
func (r *Results) Count(v Verdict) int {
	n := 0
	for _, s := range r.Scenarios {
		if s.Verdict == v {
			n++
		}
	}
	return n
}

// Worst returns the verdict that decides the exit: error, then fail,
// then flaky, then inconclusive, then pass (also for no scenarios).
func (r *Results) Worst() Verdict {
	for _, v := range []Verdict{VerdictError, VerdictFail, VerdictFlaky, VerdictInconclusive} {
		if r.Count(v) > 0 {
			return v
		}
	}
	return VerdictPass
}

// ErrResults is wrapped by the errors of ReadResults and Merge for
// results that cannot be read or joined.
var ErrResults = errors.New("invalid eval results")

// ReadResults reads results JSON written by WriteJSON; name is used in
// messages.
func ReadResults(data []byte, name string) (*Results, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Results
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrResults, name, err)
	}
	if r.Version != ResultsVersion {
		return nil, fmt.Errorf("%w: %s: version %d, this retrace reads version %d", ErrResults, name, r.Version, ResultsVersion)
	}
	for _, s := range r.Scenarios {
		if !slices.Contains([]Verdict{VerdictPass, VerdictFail, VerdictFlaky, VerdictError, VerdictInconclusive}, s.Verdict) {
			return nil, fmt.Errorf("%w: %s: scenario %s has verdict %q", ErrResults, name, s.Name, s.Verdict)
		}
	}
	return &r, nil
}

// Merge joins the results of shards into the results one run of the
// whole suite would have given: the scenarios in file and name order. A
// scenario in two of them is an error (the shards overlap). The duration
// is the longest shard's, the wall time of a matrix run at once.
func Merge(parts ...*Results) (*Results, error) {
	out := &Results{Version: ResultsVersion, Scenarios: []ScenarioResult{}}
	seen := map[string]string{}
	for _, p := range parts {
		for _, s := range p.Scenarios {
			key := s.File + "\x00" + s.Name
			if prev, dup := seen[key]; dup {
				return nil, fmt.Errorf("%w: scenario %s (%s) is in shard %s and shard %s", ErrResults, s.Name, s.File, cmp.Or(prev, "?"), cmp.Or(p.Shard, "?"))
			}
			seen[key] = p.Shard
			out.Scenarios = append(out.Scenarios, s)
		}
		out.DurationMs = max(out.DurationMs, p.DurationMs)
	}
	slices.SortStableFunc(out.Scenarios, func(a, b ScenarioResult) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}
