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

// session builds a Session from payloads, one event a line, with turns
// given by the model_requests: a model_request opens the next turn.
func session(id string, payloads ...trajectory.Payload) *Session {
	s := &Session{ID: id, File: id + trajectory.Ext}
	turn := 0
	for i, p := range payloads {
		if p.EventType() == trajectory.TypeModelRequest {
			turn++
		}
		s.Events = append(s.Events, Located{Event: trajectory.Event{V: 1, Session: id, Seq: int64(i + 1), Turn: turn, Payload: p}, Line: i + 1})
	}
	return s
}

// check runs the catalog's detector id over s with settings.
func check(t *testing.T, id string, s *Session, settings Settings) []Finding {
	t.Helper()
	ds, err := Select([]string{id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ds[0].Session(s, settings.params(ds[0]))
}

func start(tools ...trajectory.ToolInfo) *trajectory.SessionStart {
	return &trajectory.SessionStart{HarnessVersion: "test", Provider: "mock", Model: "m", Mode: trajectory.ModeHeadless,
		PermissionMode: trajectory.PermDefault, Tools: tools, Defenses: []trajectory.DefenseName{}}
}

func bashCall(id, cmd string) *trajectory.ToolCall {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return &trajectory.ToolCall{ToolRef: trajectory.ToolRef{ToolUseID: id, Tool: "bash"}, Input: in}
}

// A spilled output whose call is run again, truncated each time to the
// same spill, is a warning from min_repeats re-runs on; paging through
// the spill with different offsets is not a loop.
func TestSpillReadLoopCountsRerunsAndNotPaging(t *testing.T) {
	const ref = "sha256:f6351f5ead9a700e34275480b3856ea738122a7c57bdeb744a631251c069587a"
	spilled := func(id string) []trajectory.Payload {
		return []trajectory.Payload{&trajectory.ModelRequest{}, bashCall(id, "npm test"),
			&trajectory.ToolEnd{ToolRef: trajectory.ToolRef{ToolUseID: id, Tool: "bash"}, OutputBytes: 90000, Truncated: true, Spill: ref}}
	}
	page := func(id string, offset int) []trajectory.Payload {
		in, _ := json.Marshal(map[string]any{"file_path": "runs/s.blobs/" + spillHex(ref), "offset": offset, "limit": 500})
		return []trajectory.Payload{&trajectory.ModelRequest{}, &trajectory.ToolCall{ToolRef: trajectory.ToolRef{ToolUseID: id, Tool: "read"}, Input: in},
			&trajectory.ToolEnd{ToolRef: trajectory.ToolRef{ToolUseID: id, Tool: "read"}, OutputBytes: 4000}}
	}
	reruns := slices.Concat(spilled("c0"), spilled("c1"), spilled("c2"), spilled("c3"))
	paging := slices.Concat(spilled("c0"), page("p1", 1), page("p2", 501), page("p3", 1001), page("p4", 1501))
	for _, tc := range []struct {
		name     string
		events   []trajectory.Payload
		settings Settings
		want     []int
	}{
		{"Three re-runs of a spilled call, each truncated again, are a loop at the default.", reruns, nil, []int{4, 6, 9, 12}},
		{"Three re-runs are not a loop with min_repeats 4.", reruns, Settings{"spill_read_loop": {"min_repeats": 4}}, nil},
		{"Four reads of the spill at different offsets are paging, not a loop.", paging, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := check(t, "spill_read_loop", session("s", slices.Concat([]trajectory.Payload{start()}, tc.events)...), tc.settings)
			if tc.want == nil {
				if len(got) != 0 {
					t.Fatalf("findings %+v, want none", got)
				}
				return
			}
			// The evidence starts at the spilling tool_end, then the
			// follow-ups' tool_calls.
			if len(got) != 1 || got[0].Severity != SeverityWarning || !slices.Equal(lines(got[0]), tc.want) {
				t.Fatalf("findings %+v, want one warning at %v", got, tc.want)
			}
		})
	}
}

// A call of the resident tool right after its deferred, not loaded,
// neighbour was named in the reply is a warning at the reply and the
// call; a deferred name listed without a label and without a neighbour is
// only worth knowing.
func TestPrefixCollapseRiskFindsTheCallAfterTheNeighbourWasNamed(t *testing.T) {
	tools := []trajectory.ToolInfo{{Name: "enter_plan_mode"}, {Name: "enter_worktree", Deferred: true}}
	reply := &trajectory.ModelResponse{Content: []trajectory.ContentBlock{
		{Type: trajectory.BlockText, Text: "I will isolate the change with enter_worktree."},
		{Type: trajectory.BlockToolUse, ID: "toolu_plan", Name: "enter_plan_mode", Input: json.RawMessage(`{}`)}}}
	call := &trajectory.ToolCall{ToolRef: trajectory.ToolRef{ToolUseID: "toolu_plan", Tool: "enter_plan_mode"}, Input: json.RawMessage(`{}`)}
	labelled := "Tools:\n- enter_worktree (not loaded; activate with tool_search)"
	got := check(t, "prefix_collapse_risk", session("s", start(tools...),
		&trajectory.ModelRequest{System: labelled, ToolNames: []string{"enter_plan_mode"}}, reply, call), nil)
	if len(got) != 2 {
		t.Fatalf("findings %+v, want the pair at info and the call at warning", got)
	}
	if got[0].Severity != SeverityInfo || !strings.Contains(got[0].Message, "enter_plan_mode × enter_worktree (6)") {
		t.Errorf("the pair: %+v", got[0])
	}
	if got[1].Severity != SeverityWarning || got[1].ToolUseID != "toolu_plan" || !slices.Equal(lines(got[1]), []int{3, 4}) {
		t.Errorf("the call: %+v", got[1])
	}

	// The same call with enter_worktree loaded (offered) is no collapse.
	got = check(t, "prefix_collapse_risk", session("s", start(tools...),
		&trajectory.ModelRequest{System: labelled, ToolNames: []string{"enter_plan_mode", "enter_worktree"}}, reply, call), nil)
	if len(got) != 1 || got[0].Severity != SeverityInfo {
		t.Errorf("with the neighbour loaded: %+v, want the pair alone", got)
	}

	// An unlabelled deferred name with no neighbour at min_prefix 5: info.
	fx := filepath.Join("testdata", "fire", "prefix_collapse_risk.jsonl")
	ds, _ := Select([]string{"prefix_collapse_risk"}, nil)
	rep, err := Run(context.Background(), loaded(t, fx), ds, Options{Settings: Settings{"prefix_collapse_risk": {"min_prefix": 5}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Severity != SeverityInfo || strings.Contains(rep.Findings[0].Message, "pair") {
		t.Errorf("at min_prefix 5: %+v, want one info finding about the label alone", rep.Findings)
	}
}

// A corpus of the headless session (half of bash's calls denied) and the
// bypass one (all run) is one finding for bash that counts both permission
// modes and cites the headless session.
func TestDenominatorShiftCountsTheModesACorpusMixes(t *testing.T) {
	rep := detect(t, Catalog(), filepath.Join("testdata", "fire", "denominator_shift.jsonl"), filepath.Join("testdata", "clean", "denominator_shift.jsonl"))
	var got []Finding
	for _, f := range rep.Findings {
		if f.Detector == "denominator_shift" {
			got = append(got, f)
		}
	}
	if len(got) != 1 {
		t.Fatalf("findings %+v, want one", got)
	}
	f := got[0]
	for _, want := range []string{"75.0% of its 40 requested calls", "100.0% of its 30 executed", "2 permission mode(s)", "bypass 100.0% of 20 requested", "default 50.0% of 20 requested"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q does not say %q", f.Message, want)
		}
	}
	if len(f.Sessions) != 1 || f.Sessions[0] != f.Session {
		t.Errorf("sessions %v (session %s), want the headless session alone: the one with calls that did not run", f.Sessions, f.Session)
	}
}

// The liveness table recomputes the low-yield spin condition: live where
// the runtime's defense reminded, never_needed in a session without a
// repeated count.
func TestLivenessRecomputesTheLowYieldSpinCondition(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		verdict    Verdict
	}{
		{"The runtime's recording of four identical counts, reminded twice, is a live low_yield_spin.", "clean/low_yield_spin.jsonl", VerdictLive},
		{"A session without a repeated count never needs it.", "clean/dead_defense.jsonl", VerdictNeverNeeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := row(liveness(t, filepath.Join("testdata", tc.file)), trajectory.DefenseLowYieldSpin)
			if !ok || r.Verdict != tc.verdict || !r.Observable || r.Checked == 0 {
				t.Errorf("row %+v, want observable and %s", r, tc.verdict)
			}
			if tc.verdict == VerdictLive && r.Held != 3 {
				t.Errorf("held %d times, want 3 (turns 2 to 4 repeat the turn before)", r.Held)
			}
		})
	}
}

// A defense_trigger whose action the events after it do not show is a
// decision recorded as a trigger; one whose effect follows is not.
func TestDecisionCountedAsTriggerFindsTriggersThatDidNothing(t *testing.T) {
	trig := func(d trajectory.DefenseName, a trajectory.DefenseAction, id string) *trajectory.DefenseTrigger {
		return &trajectory.DefenseTrigger{Defense: d, Action: a, ToolUseID: id, Count: 1}
	}
	reply := &trajectory.ModelResponse{}
	reminder := &trajectory.Reminder{Kind: "repeated_readonly", Role: trajectory.RoleUser, Text: "You ran it three times."}
	for _, tc := range []struct {
		name   string
		events []trajectory.Payload
		want   []int
	}{
		{"A remind followed by its reminder did what it says.", []trajectory.Payload{start(), &trajectory.ModelRequest{}, reply, trig(trajectory.DefenseRepeatedReadOnly, trajectory.ActionRemind, "c1"), reminder, &trajectory.ModelRequest{}, reply}, nil},
		{"A remind with no reminder before the next reply did nothing.", []trajectory.Payload{start(), &trajectory.ModelRequest{}, reply, trig(trajectory.DefenseRepeatedReadOnly, trajectory.ActionRemind, "c1"), &trajectory.ModelRequest{}, reply}, []int{4}},
		{"A stop with the session going on did nothing.", []trajectory.Payload{start(), &trajectory.ModelRequest{}, reply, trig(trajectory.DefenseEmptyInputRetry, trajectory.ActionStop, ""), &trajectory.ModelRequest{}, reply}, []int{4}},
		{"A stop followed by the end stopped.", []trajectory.Payload{start(), &trajectory.ModelRequest{}, reply, trig(trajectory.DefenseEmptyInputRetry, trajectory.ActionStop, ""), &trajectory.SessionEnd{Reason: trajectory.EndStuck}}, nil},
		{"A skip whose call ran did not skip.", []trajectory.Payload{start(), &trajectory.ModelRequest{}, reply, trig(trajectory.DefenseTruncatedToolUse, trajectory.ActionSkip, "c1"), bashCall("c1", "ls")}, []int{4}},
		{"An execute whose call ran executed.", []trajectory.Payload{start(), &trajectory.ModelRequest{}, reply, trig(trajectory.DefenseEndTurnFallthrough, trajectory.ActionExecute, "c1"), bashCall("c1", "ls")}, nil},
		{"An execute with no call did nothing.", []trajectory.Payload{start(), &trajectory.ModelRequest{}, reply, trig(trajectory.DefenseEndTurnFallthrough, trajectory.ActionExecute, "c1")}, []int{4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := check(t, "decision_counted_as_trigger", session("s", tc.events...), nil)
			if tc.want == nil {
				if len(got) != 0 {
					t.Fatalf("findings %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || !slices.Equal(lines(got[0]), tc.want) || !strings.Contains(got[0].Message, "did nothing the events show") {
				t.Fatalf("findings %+v, want one at lines %v", got, tc.want)
			}
		})
	}
}

// Running a spilled call again after a change, with another output
// spilled each time, is work, not a loop.
func TestSpillReadLoopLeavesReRunsWithNewOutputsAlone(t *testing.T) {
	events := []trajectory.Payload{start()}
	for i, ref := range []string{"sha256:" + strings.Repeat("a", 64), "sha256:" + strings.Repeat("b", 64), "sha256:" + strings.Repeat("c", 64), "sha256:" + strings.Repeat("d", 64)} {
		id := string(rune('a' + i))
		events = append(events, &trajectory.ModelRequest{}, bashCall(id, "npm test"),
			&trajectory.ToolEnd{ToolRef: trajectory.ToolRef{ToolUseID: id, Tool: "bash"}, OutputBytes: 90000, Truncated: true, Spill: ref})
	}
	if got := check(t, "spill_read_loop", session("s", events...), nil); len(got) != 0 {
		t.Fatalf("findings %+v, want none", got)
	}
}

// The classic spin: one count run again and again, its number changing
// now and then; one finding for the whole run, with the numbers as runs.
// A count that changes every turn never repeats and is no spin.
func TestLowYieldSpinFollowsACountThroughItsChanges(t *testing.T) {
	turns := func(outs ...string) *Session {
		events := []trajectory.Payload{start()}
		for i, out := range outs {
			id := fmt.Sprintf("c%d", i+1)
			events = append(events, &trajectory.ModelRequest{},
				&trajectory.ModelResponse{Content: []trajectory.ContentBlock{{Type: trajectory.BlockToolUse, ID: id, Name: "bash", Input: json.RawMessage(`{"command":"tsc | grep -c error"}`)}}},
				bashCall(id, "tsc | grep -c error"), &trajectory.ToolResult{ToolRef: trajectory.ToolRef{ToolUseID: id, Tool: "bash"}, Text: out + "\n"})
		}
		return session("s", events...)
	}
	for _, tc := range []struct {
		name string
		s    *Session
		want string
	}{
		{"139 twice, then 136 three times, is one spin of five turns.", turns("139", "139", "136", "136", "136"), "139 ×2, 136 ×3"},
		{"A count that changes every turn is progress, not a spin.", turns("139", "136", "113", "90"), ""},
		{"A count repeated once is below min_turns 3.", turns("7", "7"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := check(t, "low_yield_spin", tc.s, nil)
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("findings %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].Message, tc.want) || got[0].ToolUseID != "c1" {
				t.Fatalf("findings %+v, want one from c1 saying %q", got, tc.want)
			}
		})
	}
}
