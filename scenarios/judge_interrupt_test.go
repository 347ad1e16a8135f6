package scenarios

import (
	"context"
	"regexp"
	"testing"

	"github.com/retrace-dev/retrace/results"
)

// An interruption that comes once every run has finished, while their
// recordings load for the detectors, must not lose the suite's verdicts:
// the finished runs are judged and the results returned whole.
func TestAnInterruptionWhileJudgingKeepsTheVerdicts(t *testing.T) {
	suite, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	suite = Filter(suite, regexp.MustCompile(`^detector_denial_loop_fires$`), nil)
	if len(suite) != 1 || len(suite[0].Expect.Detectors.Fire) == 0 {
		t.Fatalf("want the one built-in scenario that a detector judges, got %d", len(suite))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	beforeJudge = cancel
	defer func() { beforeJudge = func() {} }()
	res, err := Run(ctx, suite, Options{Out: t.TempDir()})
	if err != nil {
		t.Fatalf("interrupted while judging: %v", err)
	}
	if len(res.Scenarios) != 1 || res.Scenarios[0].Verdict != results.VerdictPass || res.Interrupted {
		t.Errorf("results %+v, want the scenario judged and passed, not interrupted (every run finished)", res.Scenarios)
	}
}
