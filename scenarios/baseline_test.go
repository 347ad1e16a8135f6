package scenarios

import (
	"testing"

	"github.com/retrace-dev/retrace/results"
)

// TestABaselineIsComparedWithWhatRan checks which scenarios of a baseline
// an eval compares with: those it ran, and those its suite no longer has
// (removed indeed), never one that is still in the suite but did not run
// here (left out by --run or --shard, skipped, or cut off by an interrupt),
// which was once reported REMOVED.
func TestABaselineIsComparedWithWhatRan(t *testing.T) {
	suite := []*Scenario{{Name: "ran"}, {Name: "left_out"}, {Name: "interrupted"}}
	base := &results.Results{Scenarios: []results.ScenarioResult{
		{Name: "ran", Verdict: results.VerdictPass}, {Name: "left_out", Verdict: results.VerdictPass},
		{Name: "interrupted", Verdict: results.VerdictPass}, {Name: "gone", Verdict: results.VerdictPass}}}
	ran := &results.Results{Interrupted: true, NotRun: 1, Scenarios: []results.ScenarioResult{{Name: "ran", Verdict: results.VerdictPass}}}
	got := BaselineOfSelected(base, suite, ran)
	var names []string
	for _, s := range got.Scenarios {
		names = append(names, s.Name)
	}
	if len(names) != 2 || names[0] != "ran" || names[1] != "gone" {
		t.Errorf("compared with %v, want [ran gone]", names)
	}
	c := results.Compare(got, ran, "base", 0)
	if n := c.Count(results.ChangeRemoved); n != 1 {
		t.Errorf("%d removed, want 1 (gone)", n)
	}
	if len(base.Scenarios) != 4 {
		t.Errorf("the baseline given was changed: %d scenarios", len(base.Scenarios))
	}
}
