package diff

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/synth"
)

// writeEvalOut writes an eval --out directory: runs/ (a small synth
// corpus) and a results.json with the given verdicts by scenario.
func writeEvalOut(t *testing.T, name string, seed int64, verdicts map[string]results.Verdict) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if _, err := synth.Write(context.Background(), filepath.Join(dir, "runs"), synth.Options{Sessions: 20, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	res := results.Results{Version: results.Version, Scenarios: []results.ScenarioResult{}}
	for _, n := range []string{"alpha", "bravo", "charlie", "delta", "echo"} {
		if v, ok := verdicts[n]; ok {
			res.Scenarios = append(res.Scenarios, results.ScenarioResult{Name: n, File: n + ".txtar", Verdict: v, Runs: []results.RunResult{}})
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ResultsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// loadEvalOut resolves and loads an eval --out directory as retrace diff does.
func loadEvalOut(t *testing.T, dir string) Input {
	t.Helper()
	runs, results, err := ResolveSide([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if results != filepath.Join(dir, ResultsFile) || len(runs) != 1 || runs[0] != filepath.Join(dir, "runs") {
		t.Fatalf("ResolveSide(%s) = %v, %q", dir, runs, results)
	}
	in := load(t, dir, runs...)
	if in.Results, err = ReadResults(results); err != nil {
		t.Fatal(err)
	}
	in.Side.Results = results
	return in
}

// TestAScenarioThatFlipsIsNamedAndMcNemarDecides compares two eval
// results where bravo goes from pass to fail and delta from fail to pass,
// with echo only in the candidate: both flips are named, pass→fail first,
// and McNemar's test is used and reported.
func TestAScenarioThatFlipsIsNamedAndMcNemarDecides(t *testing.T) {
	P, F := results.VerdictPass, results.VerdictFail
	base := loadEvalOut(t, writeEvalOut(t, "base", 1, map[string]results.Verdict{"alpha": P, "bravo": P, "charlie": P, "delta": F}))
	cand := loadEvalOut(t, writeEvalOut(t, "cand", 1, map[string]results.Verdict{"alpha": P, "bravo": F, "charlie": P, "delta": P, "echo": F}))
	res, err := Compare(context.Background(), base, cand, Options{Gates: []*Gate{mustGate(t, "no regressed")}})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Paired
	if p == nil {
		t.Fatal("no paired comparison")
	}
	if p.Scenarios != 4 || p.PassFail != 1 || p.FailPass != 1 {
		t.Errorf("paired %+v, want 4 scenarios in both, 1 pass→fail, 1 fail→pass", p)
	}
	if len(p.Flips) != 2 || p.Flips[0] != (Flip{Scenario: "bravo", From: "pass", To: "fail"}) || p.Flips[1].Scenario != "delta" {
		t.Errorf("flips %+v, want bravo pass→fail then delta", p.Flips)
	}
	if !strings.Contains(p.Test.Name, "McNemar") || p.Test.P != 1 || p.Verdict != VerdictInconclusive {
		t.Errorf("test %+v verdict %s: one flip each way is McNemar's p = 1, inconclusive", p.Test, p.Verdict)
	}
}

// TestManyScenariosBreakingIsARegression checks the verdict: eight
// scenarios pass→fail and none back is McNemar's exact p = 2/2^8, below
// alpha, so the paired comparison regressed and fails "no regressed".
func TestManyScenariosBreakingIsARegression(t *testing.T) {
	base := &results.Results{}
	cand := &results.Results{}
	for i := range 10 {
		n := string(rune('a' + i))
		base.Scenarios = append(base.Scenarios, results.ScenarioResult{Name: n, Verdict: results.VerdictPass})
		v := results.VerdictFail
		if i >= 8 {
			v = results.VerdictPass
		}
		cand.Scenarios = append(cand.Scenarios, results.ScenarioResult{Name: n, Verdict: v})
	}
	p := pair(base, cand, 0.05)
	if p.PassFail != 8 || p.Verdict != VerdictRegressed || p.Test.P > 0.01 {
		t.Errorf("paired %+v", p)
	}
}

func mustGate(t *testing.T, src string) *Gate {
	t.Helper()
	g, err := ParseGate(src)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
