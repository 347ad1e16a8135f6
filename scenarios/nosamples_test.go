package scenarios

import (
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
)

// A threshold over the durations of calls that never ran has nothing to
// compare: every bash call is denied (the session is headless, and bash
// needs a prompt), so p95(bash) < 1ms must be inconclusive, never a pass.
func TestAThresholdOverCallsThatNeverRanIsInconclusive(t *testing.T) {
	src := `-- scenario.yaml --
name: all_bash_denied
prompt: List the files.
model:
  turns:
    - content: [{tool_use: {name: bash, input: {command: touch a.txt}}}]
    - content: [{tool_use: {name: bash, input: {command: touch b.txt}}}]
    - content: [{text: Done.}]
expect:
  events:
    - {permission: deny, source: non_interactive, tool: bash, count: 2}
  metrics:
    - p95(bash) < 1ms
    - max(bash) < 1ms
    - rate(failure, tool=bash) <= 1
    - p95(grep) < 1ms
`
	s, err := Parse([]byte(src), "all_bash_denied.txtar")
	if err != nil {
		t.Fatal(err)
	}
	res := runSuite(t, []*Scenario{s}, Options{})
	sr := res.Scenarios[0]
	if sr.Passed != 1 {
		t.Fatalf("the run did not pass:\n%s", table(res))
	}
	// A tool never called has no duration at all.
	if tr := sr.Thresholds[3]; tr.Verdict != results.VerdictInconclusive || !strings.Contains(tr.Got, "inconclusive: no grep call ran over 1 run") {
		t.Errorf("%s: %s (%s), want inconclusive: no grep call ran", tr.Threshold, tr.Verdict, tr.Got)
	}
	if sr.Verdict != results.VerdictInconclusive {
		t.Errorf("verdict %s, want inconclusive:\n%s", sr.Verdict, table(res))
	}
	for _, tr := range sr.Thresholds[:2] {
		if tr.Verdict != results.VerdictInconclusive || !strings.Contains(tr.Got, "no bash call ran") {
			t.Errorf("%s: %s (%s), want inconclusive: no bash call ran", tr.Threshold, tr.Verdict, tr.Got)
		}
	}
	// A rate over the same calls is decided: they were called.
	if tr := sr.Thresholds[2]; tr.Verdict != results.VerdictPass {
		t.Errorf("%s: %s (%s), want pass", tr.Threshold, tr.Verdict, tr.Got)
	}
	if !strings.Contains(table(res), "1/1 runs passed, thresholds p95(duration, tool=bash) < 1ms; max(duration, tool=bash) < 1ms; p95(duration, tool=grep) < 1ms inconclusive") {
		t.Errorf("the summary line does not say which thresholds were undecided:\n%s", table(res))
	}
}
