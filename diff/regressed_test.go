package diff

import (
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
)

// evalResults is eval results of one run per scenario, pass or fail.
func evalResults(verdicts map[string]results.Verdict, live bool) *results.Results {
	r := &results.Results{Version: results.Version}
	for _, name := range []string{"a", "b", "c"} {
		v, ok := verdicts[name]
		if !ok {
			continue
		}
		passed := 0
		if v == results.VerdictPass {
			passed = 1
		}
		r.Scenarios = append(r.Scenarios, results.ScenarioResult{Name: name, File: name + ".txtar", Verdict: v, Passed: passed,
			Runs: []results.RunResult{{Repeat: 1, Passed: passed == 1}}, Live: live})
	}
	return r
}

// The gate 'no regressed' and eval --baseline give one verdict: both
// read results.Compare. A pass -> fail flip fails the gate although no
// metric row regressed, and the gate names the scenario first.
func TestNoRegressedFailsOnAScenarioThatBrokeAndNamesItFirst(t *testing.T) {
	base := evalResults(map[string]results.Verdict{"a": results.VerdictPass, "b": results.VerdictPass}, false)
	cand := evalResults(map[string]results.Verdict{"a": results.VerdictPass, "b": results.VerdictFail}, false)
	g, err := ParseGate("no regressed")
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{
		Rows:      []Row{{Metric: "p95(duration, tool=bash)", Verdict: VerdictRegressed}, {Metric: "rate(failure)", Verdict: VerdictInconclusive}},
		Scenarios: results.Compare(base, cand, "base", DefaultAlpha),
	}
	baseline := results.Compare(base, cand, "base", DefaultAlpha)
	if strings.Join(res.RegressedScenarios(), ",") != strings.Join(baseline.Regressed(), ",") || len(baseline.Regressed()) != 1 {
		t.Fatalf("diff says %v regressed, eval --baseline %v", res.RegressedScenarios(), baseline.Regressed())
	}
	gr := checkGate(g, res, nil, nil, Options{})
	if gr.Status != GateFail || !strings.HasPrefix(gr.Detail, "2 regressed: scenario b, p95(duration, tool=bash)") {
		t.Errorf("gate: %s %q", gr.Status, gr.Detail)
	}
	// With every row inconclusive the scenario alone fails it.
	res.Rows = res.Rows[1:]
	if gr := checkGate(g, res, nil, nil, Options{}); gr.Status != GateFail || gr.Detail != "1 regressed: scenario b" {
		t.Errorf("gate over inconclusive rows: %s %q", gr.Status, gr.Detail)
	}
	// A live scenario's single flip is within chance: undecided, not a pass.
	liveBase := evalResults(map[string]results.Verdict{"a": results.VerdictPass}, true)
	liveCand := evalResults(map[string]results.Verdict{"a": results.VerdictFail}, true)
	res = &Result{Scenarios: results.Compare(liveBase, liveCand, "base", DefaultAlpha)}
	if gr := checkGate(g, res, nil, nil, Options{}); gr.Status != GateInconclusive {
		t.Errorf("a live flip: %s %q, want inconclusive", gr.Status, gr.Detail)
	}
}
