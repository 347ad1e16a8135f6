package results

import (
	"strings"
	"testing"
)

// handResults are results with one scenario of each verdict, in name
// order, so that the summaries' order is the renderers' doing.
func handResults() *Results {
	mk := func(name string, runs ...RunResult) ScenarioResult {
		s := ScenarioResult{Name: name, File: name + ".txtar", Runs: runs}
		s.Decide()
		return s
	}
	fail := Failure{Expect: "x.txtar:9: expect.outcome: the session ends with end_turn", Got: "it ended with max_turns", At: "runs/s.jsonl:12"}
	return &Results{Version: Version, DurationMs: 1500, Scenarios: []ScenarioResult{
		mk("a_pass", RunResult{Repeat: 1}),
		mk("b_flaky", RunResult{Repeat: 1}, RunResult{Repeat: 2, Failures: []Failure{fail}}),
		mk("c_fail", RunResult{Repeat: 1, Failures: []Failure{fail}}),
		mk("d_error", RunResult{Repeat: 1, Error: "workspace: disk full"}),
	}}
}

func TestTheSummariesPutFailuresFirst(t *testing.T) {
	r := handResults()
	var table, md strings.Builder
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteMarkdown(&md); err != nil {
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
	if r.Worst() != VerdictError {
		t.Fatalf("worst verdict %s, want error", r.Worst())
	}
}
