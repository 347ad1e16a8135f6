package results

import (
	"errors"
	"strings"
	"testing"
)

// runs makes a scenario result of n runs of which passed passed, with
// its verdict decided as the runner decides it.
func runs(name string, passed, n int, live bool) ScenarioResult {
	s := ScenarioResult{Name: name, File: name + ".txtar", Live: live}
	for i := range n {
		r := RunResult{Repeat: i + 1}
		if i >= passed {
			r.Failures = []Failure{{Expect: "x", Got: "y"}}
		}
		s.Runs = append(s.Runs, r)
	}
	s.Decide()
	return s
}

func TestAScriptedScenarioRegressesOnOneFailedRunAndALiveOneOnlyBeyondChance(t *testing.T) {
	base := &Results{Version: Version, Scenarios: []ScenarioResult{
		runs("scripted", 5, 5, false), runs("live_few", 5, 5, true), runs("live_many", 20, 20, true),
	}}
	cur := &Results{Version: Version, Scenarios: []ScenarioResult{
		runs("scripted", 4, 5, false), runs("live_few", 4, 5, true), runs("live_many", 5, 20, true),
	}}
	c := Compare(base, cur, "base", 0)
	got := map[string]ScenarioChange{}
	for _, ch := range c.Changes {
		got[ch.Name] = ch
	}
	if got["scripted"].Change != ChangeRegressed || got["scripted"].Detail != "" {
		t.Errorf("a scripted scenario 5/5 -> 4/5: %+v, want regressed with no test", got["scripted"])
	}
	if ch := got["live_few"]; ch.Change != ChangeInconclusive || !strings.Contains(ch.Detail, "live: 5/5 runs passed, now 4/5") {
		t.Errorf("a live scenario 5/5 -> 4/5: %+v, want inconclusive with its counts", ch)
	}
	if ch := got["live_many"]; ch.Change != ChangeRegressed || !strings.Contains(ch.Detail, "fisher") && !strings.Contains(ch.Detail, "Fisher") {
		t.Errorf("a live scenario 20/20 -> 5/20: %+v, want regressed by Fisher's test", ch)
	}
	if r := c.Regressed(); strings.Join(r, ",") != "live_many,scripted" {
		t.Errorf("Regressed() = %v", r)
	}
	// Regressions, then the undecided, before anything else.
	if c.Changes[0].Change != ChangeRegressed || c.Changes[2].Change != ChangeInconclusive {
		t.Errorf("order: %+v", c.Changes)
	}
}

// shard is the results of shard i/n of one suite.
func shard(i, n int, hash, version string) *Results {
	return &Results{Version: Version, Shard: strings.Join([]string{string(rune('0' + i)), string(rune('0' + n))}, "/"),
		SuiteHash: hash, RetraceVersion: version,
		Scenarios: []ScenarioResult{runs("s"+string(rune('0'+i)), 1, 1, false)}}
}

func TestMergeRefusesAnIncompleteOrInconsistentShardSet(t *testing.T) {
	_, err := Merge(MergeOptions{}, shard(1, 3, "h", "v1"))
	var se *ShardSetError
	if !errors.As(err, &se) || !errors.Is(err, ErrShardSet) || !errors.Is(err, ErrResults) {
		t.Fatalf("1 of 3 shards: %v, want a ShardSetError", err)
	}
	if got := err.Error(); got != "missing shards 2/3 and 3/3" {
		t.Errorf("1 of 3 shards: %q", got)
	}
	for _, c := range []struct {
		name  string
		parts []*Results
		want  string
	}{
		{"duplicate", []*Results{shard(1, 2, "h", "v1"), shard(1, 2, "h", "v1")}, "shard 1/2 is given twice"},
		{"suite", []*Results{shard(1, 2, "h", "v1"), shard(2, 2, "other", "v1")}, "the shards differ in suite hash (h in 1/2; other in 2/2)"},
		{"version", []*Results{shard(1, 2, "h", "v1"), shard(2, 2, "h", "v2")}, "the shards differ in retrace version (v1 in 1/2; v2 in 2/2)"},
		{"totals", []*Results{shard(1, 2, "h", "v1"), shard(2, 3, "h", "v1")}, "shard 2/3 is of 3 shards, another of 2"},
		{"no shard", []*Results{shard(1, 2, "h", "v1"), {Version: Version}}, "is no shard's"},
	} {
		_, err := Merge(MergeOptions{AllowPartial: true}, c.parts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to say %q (even with AllowPartial)", c.name, err, c.want)
		}
	}
	// --allow-partial merges what there is, and says what is not.
	res, err := Merge(MergeOptions{AllowPartial: true}, shard(1, 3, "h", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Partial || strings.Join(res.Missing, ",") != "2/3,3/3" || res.SuiteHash != "h" || res.RetraceVersion != "v1" {
		t.Errorf("partial merge: %+v", res)
	}
	// The whole set merges, unmarked; one unsharded run stands alone.
	res, err = Merge(MergeOptions{}, shard(2, 2, "h", "v1"), shard(1, 2, "h", "v1"))
	if err != nil || res.Partial || len(res.Scenarios) != 2 {
		t.Errorf("whole set: %+v, %v", res, err)
	}
	if _, err := Merge(MergeOptions{}, &Results{Version: Version}); err != nil {
		t.Errorf("one unsharded run: %v", err)
	}
}
