package detectors

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// headlessCorpus are the trajectories of headless_prompt_denials' corpus
// fixture: three headless sessions whose make test was refused for want
// of a person, and one whose configuration allowed it.
func headlessCorpus() []string {
	return []string{filepath.Join("testdata", "fire", "headless_prompt_denials.jsonl"),
		filepath.Join("testdata", "corpus", "headless_prompt_denials")}
}

// headless_prompt_denials judges a corpus: the three sessions whose bash
// call was refused as needing a person are a policy gap at the defaults,
// cited with the first refusal of each; fewer sessions than min_sessions,
// or a share under min_share, are not.
func TestHeadlessPromptDenialsIsJudgedOverACorpus(t *testing.T) {
	sessions := []string{"20261201-224551.624-2b6578c6", "20261201-224551.672-38faad17", "20261201-224551.711-d068c823"}
	for _, tc := range []struct {
		name     string
		paths    []string
		settings Settings
		want     int
	}{
		{"Three headless sessions refusing make test for want of a person, 3 of 4 bash calls, are a policy gap.", headlessCorpus(), nil, 1},
		{"The same corpus with min_sessions 4 is not.", headlessCorpus(), Settings{"headless_prompt_denials": {"min_sessions": 4}}, 0},
		{"The same corpus with min_share 0.8 is not: a quarter of the calls were decided by an allow rule.", headlessCorpus(), Settings{"headless_prompt_denials": {"min_share": 0.8}}, 0},
		{"One headless session with three refusals of the same call is not a gap.", []string{filepath.Join("testdata", "clean", "denial_loop.jsonl")}, nil, 0},
		{"One headless session refusing make test is not a gap.", []string{filepath.Join("testdata", "clean", "headless_prompt_denials.jsonl")}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Run(context.Background(), loaded(t, tc.paths...), Catalog(), Options{Settings: tc.settings})
			if err != nil {
				t.Fatal(err)
			}
			var got []Finding
			for _, f := range rep.Findings {
				if f.Detector == "headless_prompt_denials" {
					got = append(got, f)
				} else if len(tc.paths) == 1 {
					t.Errorf("a clean session has a %s finding: %s", f.Detector, f.Message)
				}
			}
			if len(got) != tc.want {
				t.Fatalf("%d findings, want %d: %+v", len(got), tc.want, got)
			}
			if tc.want == 0 {
				return
			}
			f := got[0]
			if f.Severity != SeverityWarning || f.ToolUseID != "toolu_test" || !slices.Equal(f.Sessions, sessions) {
				t.Errorf("finding at %s, call %q, sessions %v; want warning, toolu_test, %v", f.Severity, f.ToolUseID, f.Sessions, sessions)
			}
			var files []string
			for _, e := range f.Evidence {
				files = append(files, filepath.Base(e.File))
				if e.Line != 14 || e.Type != "permission_deny" {
					t.Errorf("evidence %+v, want each session's refusal at line 14", e)
				}
			}
			if !slices.Equal(files, []string{"second.jsonl", "third.jsonl", "headless_prompt_denials.jsonl"}) {
				t.Errorf("evidence in %v, want the three refusing sessions, in file order", files)
			}
			for _, want := range []string{"3 headless sessions", "3 of its 4 calls", "75.0%", `{"command":"make test"}`} {
				if !strings.Contains(f.Message, want) {
					t.Errorf("message %q does not say %q", f.Message, want)
				}
			}
		})
	}
}

// A truncation notice states the full size when the number stands alone,
// written plainly or grouped; digits that run on are another number.
func TestContainsNumberFindsTheWholeNumberOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		n    int64
		want bool
	}{
		{"A plain number in a sentence is found.", "showing 30000 of 89808 characters", 89808, true},
		{"A number grouped with commas is found.", "89,808 characters in all", 89808, true},
		{"A number grouped with underscores is found.", "size 89_808", 89808, true},
		{"A number that is the head of a longer one is not.", "898080 characters", 89808, false},
		{"A number that is the tail of a longer one is not.", "189808 characters", 89808, false},
		{"A grouped number that runs on into another group is not.", "89,808,000 characters", 89808, false},
		{"A number at the very end of the text is found.", "of 89808", 89808, true},
		{"No number at all is not found.", "[output truncated]", 89808, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := containsNumber(tc.text, tc.n); got != tc.want {
				t.Errorf("containsNumber(%q, %d) = %v, want %v", tc.text, tc.n, got, tc.want)
			}
		})
	}
}

// Kendall's tau of the per-turn increments tells a steady rise from
// noise, and a hook that re-serialises an input has not changed it.
func TestTheTrendAndTheInputComparison(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []int64
		want float64
	}{
		{"Increments that always rise have tau 1.", []int64{1, 2, 3, 4}, 1},
		{"Increments that always fall have tau -1.", []int64{4, 3, 2, 1}, -1},
		{"Equal increments, linear growth, have tau 0.", []int64{5, 5, 5, 5}, 0},
		{"One step is no trend.", []int64{7}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := kendallTau(tc.xs); got != tc.want {
				t.Errorf("kendallTau(%v) = %v, want %v", tc.xs, got, tc.want)
			}
		})
	}
	if !sameJSON([]byte(`{"a":1,"b":[2]}`), []byte(`{ "b":[2], "a":1.0 }`)) {
		t.Error("the same object with its keys in another order and other spacing is reported changed")
	}
	if sameJSON([]byte(`{"file_path":"README.md"}`), []byte(`{"file_path":"OTHER.md"}`)) {
		t.Error("a rewritten path is reported unchanged")
	}
}

// containsNumber reads text a tool or an imported trajectory wrote: it
// never panics, and a number standing between blanks is always found.
func FuzzContainsNumber(f *testing.F) {
	f.Add("showing 30000 of 89808 characters", int64(89808))
	f.Add("89,808,000", int64(89808))
	f.Add("", int64(0))
	f.Fuzz(func(t *testing.T, text string, n int64) {
		containsNumber(text, n)
		if n < 0 {
			return
		}
		if s := text + " " + strconv.FormatInt(n, 10) + " " + text; !containsNumber(s, n) {
			t.Errorf("containsNumber(%q, %d) = false", s, n)
		}
	})
}

// A request near the window is judged against the last compaction: one
// right before it means the harness acted; one long before it, or none,
// means the context climbed back unchecked.
func TestContextNearTheWindowIsJudgedAgainstTheLastCompaction(t *testing.T) {
	resp := func(tokens int64) trajectory.Payload {
		return &trajectory.ModelResponse{StopReason: trajectory.StopToolUse, Usage: trajectory.Usage{InputTokens: tokens / 2, CacheReadTokens: tokens - tokens/2}}
	}
	compaction := &trajectory.Compaction{Strategy: trajectory.CompactDrop, TokensBefore: 150000, TokensAfter: 60000}
	for _, tc := range []struct {
		name string
		evs  []trajectory.Payload
		want string
	}{
		{"A session that never compacted, at 85% of the window, is found.", []trajectory.Payload{resp(100000), resp(170000)}, "had not compacted its context before it"},
		{"A request right after a compaction is the harness acting, not a runaway.", []trajectory.Payload{resp(100000), compaction, resp(170000)}, ""},
		{"A context that climbed back after an earlier compaction is found, naming it.", []trajectory.Payload{resp(100000), compaction, resp(120000), resp(170000)}, "since turn 2"},
		{"A context under the share of the window is not found.", []trajectory.Payload{resp(100000), resp(150000)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Session{ID: "s", File: "s.jsonl"}
			turn := 1
			for i, p := range tc.evs {
				s.Events = append(s.Events, Located{Event: trajectory.Event{V: 1, Session: "s", Seq: int64(i + 1), Turn: turn, Payload: p}, Line: i + 1})
				if p.EventType() == trajectory.TypeModelResponse {
					turn++
				}
			}
			var d Detector
			for _, c := range Catalog() {
				if c.Info().ID == "context_runaway" {
					d = c
				}
			}
			fs := d.Session(s, Settings{}.params(d))
			switch {
			case tc.want == "" && len(fs) != 0:
				t.Errorf("findings %+v, want none", fs)
			case tc.want != "" && (len(fs) != 1 || !strings.Contains(fs[0].Message, tc.want)):
				t.Errorf("findings %+v, want one saying %q", fs, tc.want)
			}
		})
	}
}
