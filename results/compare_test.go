package results

import (
	"bytes"
	"strings"
	"testing"
)

func withVerdicts(verdicts map[string]Verdict) *Results {
	r := &Results{Version: Version}
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		if v, ok := verdicts[name]; ok {
			r.Scenarios = append(r.Scenarios, ScenarioResult{Name: name, File: "suite/" + name + ".txtar", Verdict: v})
		}
	}
	return r
}

func TestCompareSortsWhatBecameOfEachScenarioSinceTheBaseline(t *testing.T) {
	base := withVerdicts(map[string]Verdict{"a": VerdictPass, "b": VerdictFail, "c": VerdictPass, "d": VerdictPass, "e": VerdictFail, "f": VerdictPass})
	cur := withVerdicts(map[string]Verdict{"a": VerdictPass, "b": VerdictPass, "c": VerdictFail, "d": VerdictFlaky, "e": VerdictError, "g": VerdictPass})
	c := Compare(base, cur, "base.json", 0)
	var got []string
	for _, ch := range c.Changes {
		got = append(got, string(ch.Change)+" "+ch.Name+" "+string(ch.Before)+" -> "+string(ch.After))
	}
	want := []string{
		"regressed c pass -> fail",
		"regressed d pass -> flaky",
		"fixed b fail -> pass",
		"changed e fail -> error",
		"new g  -> pass",
		"removed f pass -> ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if c.Unchanged != 1 || c.Count(ChangeRegressed) != 2 {
		t.Errorf("unchanged %d, regressed %d; want 1 and 2", c.Unchanged, c.Count(ChangeRegressed))
	}
}

func TestAComparisonSurvivesTheResultsJSON(t *testing.T) {
	cur := withVerdicts(map[string]Verdict{"a": VerdictFail})
	cur.Baseline = Compare(withVerdicts(map[string]Verdict{"a": VerdictPass}), cur, "base.json", 0)
	var b bytes.Buffer
	if err := cur.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	back, err := Read(b.Bytes(), "r.json")
	if err != nil {
		t.Fatal(err)
	}
	if back.Baseline == nil || back.Baseline.Count(ChangeRegressed) != 1 {
		t.Errorf("the comparison did not read back: %+v", back.Baseline)
	}
}
