package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
)

// handResults are results with one scenario of each verdict, in name
// order, so that the summaries' order is the renderers' doing.
func handResults() *results.Results {
	mk := func(name string, runs ...results.RunResult) results.ScenarioResult {
		s := results.ScenarioResult{Name: name, File: name + ".txtar", Runs: runs}
		s.Decide()
		return s
	}
	fail := results.Failure{Expect: "x.txtar:9: expect.outcome: the session ends with end_turn", Got: "it ended with max_turns", At: "runs/s.jsonl:12"}
	return &results.Results{Version: results.Version, DurationMs: 1500, Scenarios: []results.ScenarioResult{
		mk("a_pass", results.RunResult{Repeat: 1}),
		mk("b_flaky", results.RunResult{Repeat: 1}, results.RunResult{Repeat: 2, Failures: []results.Failure{fail}}),
		mk("c_fail", results.RunResult{Repeat: 1, Failures: []results.Failure{fail}}),
		mk("d_error", results.RunResult{Repeat: 1, Error: "workspace: disk full"}),
	}}
}

func TestTheSummariesPutFailuresFirst(t *testing.T) {
	r := handResults()
	var table, md strings.Builder
	if err := WriteEvalTable(&table, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteEvalMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, text string
		order      []string
	}{
		{"the table", table.String(), []string{"ERROR d_error", "retrace could not run it: workspace: disk full", "FAIL  c_fail",
			"expected: x.txtar:9: expect.outcome: the session ends with end_turn", "got:      it ended with max_turns", "at:       runs/s.jsonl:12",
			"FLAKY b_flaky  1/2 runs passed", "run 2:", "PASS  a_pass", "4 scenarios: 1 passed, 1 failed, 1 flaky, 1 errors in 1.5s"}},
		{"the markdown", md.String(), []string{"| error | d\\_error | 0/1 |", "| fail | c\\_fail | 0/1 |", "| flaky | b\\_flaky | 1/2 |", "| pass | a\\_pass | 1/1 |",
			"**d\\_error** (error)", "**c\\_fail** (fail)", "- run 1: expected x.txtar:9: expect.outcome: the session ends with end\\_turn; got it ended with max\\_turns (`runs/s.jsonl:12`)"}},
	} {
		at := 0
		for _, want := range c.order {
			i := strings.Index(c.text[at:], want)
			if i < 0 {
				t.Fatalf("%s does not say %q after offset %d:\n%s", c.name, want, at, c.text)
			}
			at += i + len(want)
		}
	}
	if r.Worst() != results.VerdictError {
		t.Fatalf("worst verdict %s, want error", r.Worst())
	}
}

func TestTheComparisonTableListsRegressionsFirst(t *testing.T) {
	mk := func(verdicts map[string]results.Verdict) *results.Results {
		r := &results.Results{Version: results.Version}
		for _, name := range []string{"a", "b", "c", "d", "e", "f", "g"} {
			if v, ok := verdicts[name]; ok {
				r.Scenarios = append(r.Scenarios, results.ScenarioResult{Name: name, File: "suite/" + name + ".txtar", Verdict: v})
			}
		}
		return r
	}
	base := mk(map[string]results.Verdict{"a": results.VerdictPass, "b": results.VerdictFail, "c": results.VerdictPass, "d": results.VerdictPass, "e": results.VerdictFail, "f": results.VerdictPass})
	cur := mk(map[string]results.Verdict{"a": results.VerdictPass, "b": results.VerdictPass, "c": results.VerdictFail, "d": results.VerdictFlaky, "e": results.VerdictError, "g": results.VerdictPass})
	c := results.Compare(base, cur, "base.json", 0)
	var b bytes.Buffer
	if err := WriteComparisonTable(&b, c); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"\nREGRESSED c  pass -> fail  (suite/c.txtar)\n",
		"Since the baseline base.json: 2 regressed, 1 fixed, 1 changed, 1 new, 1 removed, 1 unchanged\n",
	} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("the table does not say %q:\n%s", w, b.String())
		}
	}
	if !strings.HasPrefix(b.String(), "\nREGRESSED") {
		t.Errorf("the regressions are not first:\n%s", b.String())
	}
}

func TestTheComparisonSummaryCountsTheInconclusive(t *testing.T) {
	run := func(name string, passed, n int) results.ScenarioResult {
		s := results.ScenarioResult{Name: name, File: name + ".txtar", Live: true}
		for i := range n {
			r := results.RunResult{Repeat: i + 1}
			if i >= passed {
				r.Failures = []results.Failure{{Expect: "x", Got: "y"}}
			}
			s.Runs = append(s.Runs, r)
		}
		s.Decide()
		return s
	}
	base := &results.Results{Version: results.Version, Scenarios: []results.ScenarioResult{run("few", 5, 5), run("many", 20, 20)}}
	cur := &results.Results{Version: results.Version, Scenarios: []results.ScenarioResult{run("few", 4, 5), run("many", 5, 20)}}
	if s := ComparisonSummary(results.Compare(base, cur, "base", 0)); !strings.Contains(s, "1 regressed, 1 inconclusive,") {
		t.Errorf("summary %q does not count the inconclusive change", s)
	}
}

func TestASummaryLineNamesTheThresholdThatFailedItsPassingRuns(t *testing.T) {
	s := results.ScenarioResult{Name: "reads", File: "reads.txtar", Runs: []results.RunResult{{Repeat: 1}, {Repeat: 2}, {Repeat: 3}, {Repeat: 4}, {Repeat: 5}}}
	s.Thresholds = []results.ThresholdResult{{Expect: "x.txtar:9: p95(read) < 2s", Threshold: "p95(duration, tool=read) < 2s", Verdict: results.VerdictFail, Got: "3s"}}
	s.Decide()
	r := &results.Results{Version: results.Version, Scenarios: []results.ScenarioResult{s}}
	var b strings.Builder
	if err := WriteEvalTable(&b, r); err != nil {
		t.Fatal(err)
	}
	want := "FAIL  reads  5/5 runs passed, threshold p95(duration, tool=read) < 2s failed  (reads.txtar)\n"
	if !strings.HasPrefix(b.String(), want) {
		t.Errorf("summary:\n%s\nwant it to start with %q", b.String(), want)
	}
}

// TestALongScenarioLineFitsACILog checks that a scenario whose name and
// path do not fit MaxWidth has its path on the next line, and that a
// short one keeps its one line.
func TestALongScenarioLineFitsACILog(t *testing.T) {
	long := strings.Repeat("detector_decision_counted_as_trigger_", 2) + "fires"
	r := &results.Results{Version: results.Version, Scenarios: []results.ScenarioResult{
		{Name: long, File: "builtin/" + long + ".txtar", Runs: []results.RunResult{{Repeat: 1}}},
		{Name: "short", File: "short.txtar", Runs: []results.RunResult{{Repeat: 1}}},
	}}
	for i := range r.Scenarios {
		r.Scenarios[i].Decide()
	}
	var b bytes.Buffer
	if err := WriteEvalTable(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, line := range strings.Split(out, "\n") {
		if len([]rune(line)) > MaxWidth {
			t.Errorf("a line of %d columns:\n%s", len([]rune(line)), line)
		}
	}
	if !strings.Contains(out, "PASS  "+long+"  1/1 runs passed\n      (builtin/"+long+".txtar)\n") {
		t.Errorf("the long scenario's path is not under its line:\n%s", out)
	}
	if !strings.Contains(out, "PASS  short  1/1 runs passed  (short.txtar)\n") {
		t.Errorf("the short scenario's line changed:\n%s", out)
	}
}
