package detectors

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// liveness loads paths into a new database, strictly, and builds their
// liveness table.
func liveness(t *testing.T, paths ...string) Liveness {
	t.Helper()
	lv, err := ComputeLiveness(context.Background(), loaded(t, paths...))
	if err != nil {
		t.Fatal(err)
	}
	return lv
}

func row(lv Liveness, d trajectory.DefenseName) (DefenseLiveness, bool) {
	i := slices.IndexFunc(lv.Defenses, func(r DefenseLiveness) bool { return r.Defense == d })
	if i < 0 {
		return DefenseLiveness{}, false
	}
	return lv.Defenses[i], true
}

// The liveness table tells the three cases of the empty-input retry apart:
// the runtime's recording where it fired (live), the runtime's clean
// recording where no reply had an empty input (never_needed), and the
// fired recording with its defense_triggers removed, where the condition
// held three times and nothing acted (dead).
func TestLivenessTellsLiveNeverNeededAndDeadApart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		file      string
		verdict   Verdict
		triggers  int
		held      int
		missed    int
		evidence  []int
		minCheckd int
	}{
		{"The runtime's recording of three empty-input replies, each retried or stopped, is live.",
			"liveness/live.jsonl", VerdictLive, 3, 3, 0, nil, 3},
		{"The runtime's clean recording, where no reply had an empty input, is never_needed and its check still ran.",
			"clean/dead_defense.jsonl", VerdictNeverNeeded, 0, 0, 0, nil, 1},
		{"The same three empty-input replies with no defense_trigger are dead, with the three replies as evidence.",
			"fire/dead_defense.jsonl", VerdictDead, 0, 3, 1, []int{4, 7, 10}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lv := liveness(t, filepath.Join("testdata", tc.file))
			if lv.Sessions != 1 {
				t.Fatalf("read %d sessions, want 1", lv.Sessions)
			}
			r, ok := row(lv, trajectory.DefenseEmptyInputRetry)
			if !ok {
				t.Fatalf("no empty_input_retry row: %+v", lv.Defenses)
			}
			var lines []int
			for _, e := range r.Evidence {
				lines = append(lines, e.Line)
			}
			if r.Verdict != tc.verdict || r.Triggers != tc.triggers || r.Held != tc.held || len(r.Missed) != tc.missed ||
				!slices.Equal(lines, tc.evidence) || r.Sessions != 1 || !r.Observable || r.Checked < tc.minCheckd {
				t.Errorf("row %+v; want verdict %s, %d triggers, %d held, %d missed, evidence lines %v, checked >= %d",
					r, tc.verdict, tc.triggers, tc.held, tc.missed, tc.evidence, tc.minCheckd)
			}
		})
	}
}

// A defense whose condition the contract does not carry is never called
// dead or never_needed: with no trigger it is not_observable, and the
// table says why.
func TestLivenessDoesNotInventAnUnobservableCondition(t *testing.T) {
	lv := liveness(t, filepath.Join("testdata", "clean", "dead_defense.jsonl"))
	for _, d := range []trajectory.DefenseName{trajectory.DefenseReminderCap} {
		r, ok := row(lv, d)
		if !ok {
			t.Fatalf("no %s row: %+v", d, lv.Defenses)
		}
		if r.Verdict != VerdictNotObservable || r.Observable || r.Held != 0 || r.Condition == "" {
			t.Errorf("%s: %+v; want not_observable with a reason", d, r)
		}
	}
	if _, ok := row(lv, trajectory.DefenseLoopDetection); ok {
		t.Errorf("loop_detection has a row, but the session did not enable it")
	}
}

// Each recomputed condition holds on the runtime's recording of the mode
// it guards: the cut-off tool_use, the end_turn reply with a call, and
// the same call denied three times (there, with the fuse acting, live).
func TestLivenessRecomputesEachConditionFromTheRuntimesRecordings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    string
		defense trajectory.DefenseName
		verdict Verdict
	}{
		{"A max_tokens reply with a cut-off read and the skip recorded is a live truncated_tool_use.", "clean/truncated_tool_use_executed.jsonl", trajectory.DefenseTruncatedToolUse, VerdictLive},
		{"The cut-off read that ran with no skip recorded is a dead truncated_tool_use.", "fire/truncated_tool_use_executed.jsonl", trajectory.DefenseTruncatedToolUse, VerdictDead},
		{"An end_turn reply with a read, fallen through, is a live end_turn_fallthrough.", "clean/end_turn_with_tool_use.jsonl", trajectory.DefenseEndTurnFallthrough, VerdictLive},
		{"The end_turn reply whose read never ran and no fallthrough recorded is a dead end_turn_fallthrough.", "fire/end_turn_with_tool_use.jsonl", trajectory.DefenseEndTurnFallthrough, VerdictDead},
		{"Three denials of the same bash call with the fuse acting are a live denial_fuse.", "clean/denial_loop.jsonl", trajectory.DefenseDenialFuse, VerdictLive},
		{"Three denials of the same bash call without the fuse are a dead denial_fuse.", "fire/denial_loop.jsonl", trajectory.DefenseDenialFuse, VerdictDead},
		{"A parallel batch of distinct read-only calls never needs the repeated-readonly guard.", "clean/latency_flattened.jsonl", trajectory.DefenseRepeatedReadOnly, VerdictNeverNeeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lv := liveness(t, filepath.Join("testdata", tc.file))
			r, ok := row(lv, tc.defense)
			if !ok {
				t.Fatalf("no %s row: %+v", tc.defense, lv.Defenses)
			}
			if r.Verdict != tc.verdict {
				t.Errorf("%s is %s, want %s: %+v", tc.defense, r.Verdict, tc.verdict, r)
			}
			if tc.verdict != VerdictNeverNeeded && r.Held == 0 {
				t.Errorf("the condition never held: %+v", r)
			}
		})
	}
}

// Run feeds dead_defense from its one pass over the sessions; the finding
// is the one Corpus computes reading the files itself, over a corpus
// where one defense is dead and the others live or never needed.
func TestDeadDefenseFromRunsPassIsTheOneCorpusComputes(t *testing.T) {
	paths := []string{filepath.Join("testdata", "fire", "dead_defense.jsonl"), filepath.Join("testdata", "fire", "denial_loop.jsonl"),
		filepath.Join("testdata", "clean", "dead_defense.jsonl")}
	ctx := context.Background()
	db := loaded(t, paths...)
	ds, err := Select([]string{"dead_defense"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, db, ds, Options{})
	if err != nil {
		t.Fatal(err)
	}
	direct, err := ds[0].Corpus(ctx, db, Params{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 2 || len(direct) != 2 {
		t.Fatalf("Run found %d, Corpus %d; want 2 each (empty_input_retry and denial_fuse dead): %+v", len(rep.Findings), len(direct), rep.Findings)
	}
	for _, want := range direct {
		i := slices.IndexFunc(rep.Findings, func(f Finding) bool { return f.Message == want.Message })
		if i < 0 {
			t.Errorf("Run lacks %q", want.Message)
			continue
		}
		got := rep.Findings[i]
		if !slices.Equal(got.Evidence, want.Evidence) || !slices.Equal(got.Sessions, want.Sessions) || got.Turn != want.Turn {
			t.Errorf("Run's finding %+v differs from Corpus's %+v", got, want)
		}
	}
}

// The loop-by-shape condition holds on the fifth call in a row of one tool
// with the same keys and different values, and not on four, nor when an
// identical call or another tool breaks the row.
func TestLoopShapeConditionCountsCallsInARowWithDifferentValues(t *testing.T) {
	session := func(calls ...string) *Session {
		s := &Session{ID: "s", File: "f.jsonl"}
		for i, c := range calls {
			tool, input, _ := strings.Cut(c, " ")
			s.Events = append(s.Events, Located{Line: i + 1, Event: trajectory.Event{Seq: int64(i + 1),
				Payload: &trajectory.ToolCall{ToolRef: trajectory.ToolRef{ToolUseID: fmt.Sprint("toolu_", i), Tool: tool}, Input: json.RawMessage(input)}}})
		}
		return s
	}
	grep := func(p string) string { return `grep {"pattern":"` + p + `"}` }
	for _, tc := range []struct {
		name  string
		calls []string
		held  []int
	}{
		{"Five greps for five patterns hold the condition at the fifth.", []string{grep("a"), grep("b"), grep("c"), grep("d"), grep("e")}, []int{5}},
		{"Four greps do not.", []string{grep("a"), grep("b"), grep("c"), grep("d")}, nil},
		{"A read between the greps starts the row again.", []string{grep("a"), grep("b"), `read {"file_path":"x"}`, grep("c"), grep("d"), grep("e")}, nil},
		{"A repeated identical grep neither counts nor breaks the row.", []string{grep("a"), grep("b"), grep("b"), grep("c"), grep("d"), grep("e")}, []int{6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checked, held := loopShapeHeld(session(tc.calls...), nil)
			var lines []int
			for _, e := range held {
				lines = append(lines, e.Line)
			}
			if checked != len(tc.calls) || !slices.Equal(lines, tc.held) {
				t.Errorf("checked %d, held at %v; want %d, %v", checked, lines, len(tc.calls), tc.held)
			}
		})
	}
}
