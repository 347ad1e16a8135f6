package results

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/retrace-dev/retrace/stats"
	"github.com/retrace-dev/retrace/trajectory"
)

// Version is the version of the results JSON format.
const Version = 1

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
	// SideSessions are the recordings of an agent run's conversations
	// other than the session judged and its subagents' (opencode's title
	// request; see agent.main): kept, not judged.
	SideSessions []string `json:"side_sessions,omitempty"`
	// AgentVersion is the agent CLI's version (its --version), for a
	// run of a profile's client.
	AgentVersion string `json:"agent_version,omitempty"`
}

// ThresholdResult is one metric threshold over a scenario's runs.
type ThresholdResult struct {
	// Expect says the threshold and where it is written (file:line: path: threshold).
	Expect string `json:"expect"`
	// Threshold is the threshold alone, in canonical form, for a summary
	// line.
	Threshold string `json:"threshold,omitempty"`
	// Verdict is pass, fail or inconclusive.
	Verdict Verdict `json:"verdict"`
	// Value is the aggregate, in milliseconds for a duration; absent when
	// there was nothing to aggregate.
	Value *float64 `json:"value,omitempty"`
	// Got says the value with what it was computed over, or why the
	// threshold could not be decided.
	Got string `json:"got"`
	// At is the trajectory line that shows a failed threshold (file:line):
	// the first call or event counted, or the slowest call's tool_end.
	At string `json:"at,omitempty"`
}

// ScenarioResult is a scenario's runs and verdict.
type ScenarioResult struct {
	Name        string   `json:"name"`
	File        string   `json:"file"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Verdict     Verdict  `json:"verdict"`
	// SuitePath is the scenario file's path relative to its suite
	// directory (sub/NAME.txtar), the same wherever the suite is checked
	// out; JUnit's classname is made of it.
	SuitePath string `json:"suite_path,omitempty"`
	// Passed counts the runs that passed, of len(Runs): pass^k holds when
	// Passed == len(Runs).
	Passed int         `json:"passed"`
	Runs   []RunResult `json:"runs"`
	// Thresholds are the scenario's metric thresholds, checked over all
	// of its runs.
	Thresholds []ThresholdResult `json:"thresholds,omitempty"`
	// Live says the runs talked to a real model (eval --provider), not
	// a script: they may differ by chance, so a change since a baseline
	// is decided with a test (Compare).
	Live bool `json:"live,omitempty"`
	// PassK estimates, from the runs, the chance that k runs all pass
	// (pass^k) and that at least one does (pass@k), for k = 1, 2, 4, ...
	// and the number of runs; only for two runs or more, none of which
	// retrace failed to run.
	PassK []PassK `json:"pass_k,omitempty"`
}

// PassK is pass^k and pass@k at one k, estimated without bias from the
// scenario's runs (stats.PassHatK, stats.PassAtK).
type PassK struct {
	K       int     `json:"k"`
	PassHat float64 `json:"pass_hat_k"`
	PassAt  float64 `json:"pass_at_k"`
}

// passK computes PassK for n runs of which c passed: at k = 1, 2, 4, ...
// below n, and at n.
func passK(n, c int) []PassK {
	if n < 2 {
		return nil
	}
	var out []PassK
	for k := 1; k <= n; k *= 2 {
		if k < n {
			out = append(out, PassK{K: k, PassHat: stats.PassHatK(n, c, k), PassAt: stats.PassAtK(n, c, k)})
		}
	}
	return append(out, PassK{K: n, PassHat: stats.PassHatK(n, c, n), PassAt: stats.PassAtK(n, c, n)})
}

// Decide sets Passed and Verdict from the runs and the thresholds: the
// runner calls it once every run and threshold of the scenario is in.
func (s *ScenarioResult) Decide() {
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
	s.PassK = nil
	if errs == 0 {
		s.PassK = passK(len(s.Runs), s.Passed)
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
	Shard string `json:"shard,omitempty"`
	// SuiteHash identifies the suite that was run, after --run and
	// --filter-tag and before --shard (scenarios.SuiteHash), so that Merge can
	// tell shards of one suite from shards of two.
	SuiteHash string `json:"suite_hash,omitempty"`
	// RetraceVersion is the version of retrace that ran the suite.
	RetraceVersion string `json:"retrace_version,omitempty"`
	// Partial says the results lack shards (MergeOptions.AllowPartial);
	// Missing names them ("2/3").
	Partial bool     `json:"partial,omitempty"`
	Missing []string `json:"missing_shards,omitempty"`
	// Interrupted says the run was stopped (SIGINT, SIGTERM) before
	// every run of every scenario ran: the scenarios hold the runs that
	// finished, and NotRun counts the runs that did not.
	Interrupted bool             `json:"interrupted,omitempty"`
	NotRun      int              `json:"not_run,omitempty"`
	Scenarios   []ScenarioResult `json:"scenarios"`
	DurationMs  float64          `json:"duration_ms"`
	// Baseline is the comparison with a baseline run's results, when
	// one was given (Compare).
	Baseline *Comparison `json:"baseline,omitempty"`
	// Source is the name Read was given (the file read), so that Merge's
	// messages name the result they are about; it is not written.
	Source string `json:"-"`
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

// ErrResults is wrapped by the errors of Read and Merge for
// results that cannot be read or joined.
var ErrResults = errors.New("invalid eval results")

// Read reads results JSON written by WriteJSON; name is used in
// messages.
func Read(data []byte, name string) (*Results, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Results
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrResults, name, err)
	}
	if r.Version != Version {
		return nil, fmt.Errorf("%w: %s: version %d, this retrace reads version %d", ErrResults, name, r.Version, Version)
	}
	for _, s := range r.Scenarios {
		if !slices.Contains([]Verdict{VerdictPass, VerdictFail, VerdictFlaky, VerdictError, VerdictInconclusive}, s.Verdict) {
			return nil, fmt.Errorf("%w: %s: scenario %s has verdict %q", ErrResults, name, s.Name, s.Verdict)
		}
	}
	r.Source = name
	return &r, nil
}

// ErrShardSet is wrapped by the error of Merge for shards that are not
// one whole suite (ShardSetError).
var ErrShardSet = fmt.Errorf("%w: the shards are not one whole suite", ErrResults)

// ShardSetError says why the results given to Merge are not the shards
// of one whole run of one suite.
type ShardSetError struct {
	// Missing are the shards absent from the set, as "2/3".
	Missing []string
	// Problems are the other faults: a shard given twice, results that
	// are no shard's, shards of different suites, totals or versions.
	Problems []string
}

func (e *ShardSetError) Error() string {
	var parts []string
	if len(e.Missing) > 0 {
		word := "shard"
		if len(e.Missing) > 1 {
			word = "shards"
		}
		parts = append(parts, fmt.Sprintf("missing %s %s", word, andList(e.Missing)))
	}
	parts = append(parts, e.Problems...)
	return strings.Join(parts, "; ")
}

func (e *ShardSetError) Unwrap() error { return ErrShardSet }

// andList joins items as "a", "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// MergeOptions are the options of Merge.
type MergeOptions struct {
	// AllowPartial merges a set that lacks shards: the result is marked
	// Partial and names the missing shards. Any other fault of the set is
	// refused all the same.
	AllowPartial bool
}

// checkShards checks that parts are the shards 1/n to n/n of one run of
// one suite, by one retrace, each once. A single result without a shard
// is a whole run and stands alone.
func checkShards(parts []*Results) *ShardSetError {
	e := &ShardSetError{}
	if len(parts) == 1 && parts[0].Shard == "" {
		return nil
	}
	total := 0
	seen := map[int]bool{}
	for _, p := range parts {
		i, n, ok := splitShard(p.Shard)
		switch {
		case p.Shard == "":
			e.Problems = append(e.Problems, fmt.Sprintf("%s is no shard's (it has no shard i/n): merge only the results of eval --shard", cmp.Or(p.Source, "a result given")))
			continue
		case !ok:
			e.Problems = append(e.Problems, fmt.Sprintf("shard %q%s is not i/n", p.Shard, of(p)))
			continue
		case total != 0 && n != total:
			e.Problems = append(e.Problems, fmt.Sprintf("shard %s%s is of %d shards, another of %d: they split different runs", p.Shard, of(p), n, total))
			continue
		case seen[i]:
			e.Problems = append(e.Problems, fmt.Sprintf("shard %s is given twice%s", p.Shard, of(p)))
			continue
		}
		total = n
		seen[i] = true
	}
	for i := 1; i <= total; i++ {
		if !seen[i] {
			e.Missing = append(e.Missing, fmt.Sprintf("%d/%d", i, total))
		}
	}
	for _, field := range []struct {
		name string
		get  func(*Results) string
	}{
		{"suite hash", func(r *Results) string { return r.SuiteHash }},
		{"retrace version", func(r *Results) string { return r.RetraceVersion }},
	} {
		values := map[string][]string{}
		for _, p := range parts {
			v := field.get(p)
			values[v] = append(values[v], cmp.Or(p.Source, p.Shard, "?"))
		}
		if len(values) > 1 {
			var say []string
			for _, v := range slices.Sorted(maps.Keys(values)) {
				say = append(say, fmt.Sprintf("%s in %s", cmp.Or(shortHash(v), "none"), strings.Join(values[v], ", ")))
			}
			e.Problems = append(e.Problems, fmt.Sprintf("the shards differ in %s (%s): they ran different suites or retraces", field.name, strings.Join(say, "; ")))
		}
	}
	if len(e.Missing) == 0 && len(e.Problems) == 0 {
		return nil
	}
	return e
}

// of names the file a result was read from, for a message about it: " (in
// FILE)", or nothing when it was not read from one.
func of(r *Results) string {
	if r.Source == "" {
		return ""
	}
	return " (in " + r.Source + ")"
}

// shortHash shortens a suite hash for a message; other values stay.
func shortHash(v string) string {
	if len(v) == 64 {
		return v[:12]
	}
	return v
}

// splitShard reads "i/n".
func splitShard(s string) (i, n int, ok bool) {
	a, b, found := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !found || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return 0, 0, false
	}
	return i, n, true
}

// Merge joins the results of shards into the results one run of the
// whole suite would have given: the scenarios in file and name order.
// The shards must be 1/n to n/n of one suite run by one retrace, each
// once (a *ShardSetError otherwise); with opts.AllowPartial, missing
// shards are merged anyway into results marked Partial. A scenario in two
// of them is an error (the shards overlap). The duration is the longest
// shard's, the wall time of a matrix run at once.
func Merge(opts MergeOptions, parts ...*Results) (*Results, error) {
	out := &Results{Version: Version, Scenarios: []ScenarioResult{}}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: no results to merge", ErrResults)
	}
	if e := checkShards(parts); e != nil {
		if len(e.Problems) > 0 || !opts.AllowPartial {
			return nil, e
		}
		out.Partial, out.Missing = true, e.Missing
	}
	out.SuiteHash, out.RetraceVersion = parts[0].SuiteHash, parts[0].RetraceVersion
	seen := map[string]string{}
	for _, p := range parts {
		out.Interrupted = out.Interrupted || p.Interrupted
		out.NotRun += p.NotRun
		out.Partial = out.Partial || p.Partial
		out.Missing = append(out.Missing, p.Missing...)
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

// WriteJSON writes the results as indented JSON, which Read and
// Merge read back.
func (r *Results) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
