package scenarios

import (
	"math"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/report"
	"github.com/retrace-dev/retrace/results"
)

func TestRepeatedRunsReportPassHatKAndPassAtK(t *testing.T) {
	s, err := Parse([]byte(flakyScenario), "flaky.txtar")
	if err != nil {
		t.Fatal(err)
	}
	res := runSuite(t, []*Scenario{s}, Options{Repeat: 5, Parallel: 2})
	got := res.Scenarios[0]
	// 3 of 5 passed: pass^2 = C(3,2)/C(5,2) = 0.3, pass@2 = 1 − C(2,2)/C(5,2) = 0.9.
	want := []results.PassK{{K: 1, PassHat: 0.6, PassAt: 0.6}, {K: 2, PassHat: 0.3, PassAt: 0.9}, {K: 4, PassHat: 0, PassAt: 1}, {K: 5, PassHat: 0, PassAt: 1}}
	if len(got.PassK) != len(want) {
		t.Fatalf("pass_k %+v, want %+v", got.PassK, want)
	}
	for i, w := range want {
		p := got.PassK[i]
		if p.K != w.K || math.Abs(p.PassHat-w.PassHat) > 1e-9 || math.Abs(p.PassAt-w.PassAt) > 1e-9 {
			t.Fatalf("pass_k %+v, want %+v", got.PassK, want)
		}
	}
	if line := "FLAKY flaky  3/5 runs passed, pass^k 0.6/0.3/0/0 pass@k 0.6/0.9/1/1 (k=1/2/4/5)  (flaky.txtar)"; !strings.Contains(table(res), line) {
		t.Fatalf("the summary does not give pass^k next to flaky, want %q:\n%s", line, table(res))
	}
	// One run estimates nothing about k runs; a scripted scenario that
	// always passes prints nothing more than its count.
	res = runSuite(t, []*Scenario{s}, Options{Repeat: 1})
	if res.Scenarios[0].PassK != nil {
		t.Fatalf("one run has pass_k %+v", res.Scenarios[0].PassK)
	}
	sr := results.ScenarioResult{Name: "always", Runs: make([]results.RunResult, 3)}
	sr.Decide()
	line := func() string {
		var b strings.Builder
		_ = report.WriteEvalTable(&b, &results.Results{Scenarios: []results.ScenarioResult{sr}})
		return b.String()
	}
	if sr.Verdict != results.VerdictPass || len(sr.PassK) != 3 || sr.PassK[2].PassHat != 1 || strings.Contains(line(), "pass^k") {
		t.Fatalf("three passing scripted runs: %+v, table %q", sr, line())
	}
	sr.Live = true
	if !strings.Contains(line(), "pass^k 1/1/1 pass@k 1/1/1 (k=1/2/3)") {
		t.Fatalf("a live scenario's line %q has no pass^k", line())
	}
}
