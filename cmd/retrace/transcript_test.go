package main

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// nothingToShow are the hidden tools after which nothing happened from
// the user's view: tool_search only loads definitions, and
// the call it enables gets its own card.
var nothingToShow = []string{"tool_search"}

// TestEveryHiddenToolHasAPanelOrNothingToShow holds the tools' own
// display declarations and the renderer together in both directions: a hidden tool must have a panel that shows its effect or
// be one with nothing to show, and a panel must belong to a hidden tool.
func TestEveryHiddenToolHasAPanelOrNothingToShow(t *testing.T) {
	hidden := map[string]bool{}
	for _, tool := range tools.Builtins() {
		s := tool.Spec()
		if s.Display != trajectory.DisplayHidden {
			continue
		}
		hidden[s.Name] = true
		_, panel := panels[s.Name]
		if panel == slices.Contains(nothingToShow, s.Name) {
			t.Errorf("%s is hidden: it needs exactly one of a panel in the live transcript (its effect is shown there) or a place in nothingToShow (nothing happened for the user); it has panel %t", s.Name, panel)
		}
	}
	for name := range panels {
		if !hidden[name] {
			t.Errorf("the live transcript has a panel for %s, which is not a hidden built-in tool", name)
		}
	}
	for _, name := range nothingToShow {
		if !hidden[name] {
			t.Errorf("nothingToShow lists %s, which is not a hidden built-in tool", name)
		}
	}
}

// callEvents are the events of one call through the executor; between
// are the events after its tool_call (permission decisions).
func callEvents(id, tool, input string, failure trajectory.FailureKind, result string, display trajectory.DisplayMode, between ...trajectory.Payload) []trajectory.Payload {
	ref := trajectory.ToolRef{ToolUseID: id, Tool: tool}
	evs := append([]trajectory.Payload{&trajectory.ToolCall{ToolRef: ref, Input: json.RawMessage(input)}}, between...)
	if failure != "" {
		evs = append(evs, &trajectory.ToolFailure{ToolRef: ref, FailureKind: failure})
	} else {
		evs = append(evs, &trajectory.ToolSuccess{ToolRef: ref})
	}
	return append(evs, &trajectory.ToolEnd{ToolRef: ref, DurationMs: 1.5},
		&trajectory.ToolResult{ToolRef: ref, Text: result, IsError: failure != "", Display: display})
}

func TestTheLiveTranscriptRendersByDisplayMode(t *testing.T) {
	todos := `{"todos":[{"content":"Read the code","status":"completed","active_form":"Reading the code"},` +
		`{"content":"Run the tests","status":"in_progress","active_form":"Running the tests"},` +
		`{"content":"Fix the bug","status":"pending","active_form":"Fixing the bug"}]}`
	cases := []struct {
		name    string
		events  []trajectory.Payload
		want    []string
		notWant []string
	}{
		{"a full result shows its card and the first line of its output",
			callEvents("t1", "read", `{"file_path":"a.go"}`, "", "     1\tpackage a\n     2\t\n     3\tfunc A() {}\n", trajectory.DisplayFull),
			[]string{"  ⏺ read a.go · ok · 1.5 ms\n", "    ⎿ 1 package a (+2 lines)\n"}, nil},
		{"a summary result shows its card without the output",
			callEvents("t1", "task_create", `{"query":"x"}`, "", "Created task 7. Tell the user.", trajectory.DisplaySummary),
			[]string{"  ⏺ task_create x · ok · 1.5 ms\n"}, []string{"Tell the user", "⎿"}},
		{"a hidden todo_write shows the todo panel and no card, and none of the model's nudge",
			callEvents("t1", "todo_write", todos, "", "Todo list updated: 3 items. Keep one in progress.", trajectory.DisplayHidden),
			[]string{"  ☰ todos: 1 of 3 done\n    ✓ Read the code\n    ▶ Running the tests\n    ○ Fix the bug\n"},
			[]string{"⏺", "Keep one in progress"}},
		{"an emptied todo list says so",
			callEvents("t1", "todo_write", `{"todos":[]}`, "", "The todo list is now empty.", trajectory.DisplayHidden),
			[]string{"  ☰ todos: cleared\n"}, []string{"⏺"}},
		{"a hidden tool_search shows nothing",
			callEvents("t1", "tool_search", `{"query":"issue"}`, "", "Loaded: create_issue", trajectory.DisplayHidden),
			nil, []string{"tool_search", "Loaded"}},
		{"a failed hidden tool still shows its card and its error",
			callEvents("t1", "todo_write", `{"todos":[{"content":"","status":"pending"}]}`, trajectory.FailureToolError, "todos[0].content is empty; say what is to be done.", trajectory.DisplayFull),
			[]string{"  ⏺ todo_write · tool_error · 1.5 ms\n", "    ⎿ todos[0].content is empty; say what is to be done.\n"}, []string{"☰"}},
		{"a denied call shows its card, who denied it and the reason the model got",
			callEvents("t1", "bash", `{"command":"rm -rf build"}`, trajectory.FailurePermissionDenied, "Permission denied: no one is there to approve bash.", trajectory.DisplayFull,
				&trajectory.PermissionDeny{PermissionDecision: trajectory.PermissionDecision{ToolRef: trajectory.ToolRef{ToolUseID: "t1", Tool: "bash"}, Source: trajectory.SourceNonInteractive, Step: "default"}}),
			[]string{"  ⏺ bash rm -rf build · permission_denied · 1.5 ms\n      denied by non_interactive at default\n    ⎿ Permission denied: no one is there to approve bash.\n"}, nil},
		{"a call that never ran shows as not run, with the reason, even when its result says hidden",
			[]trajectory.Payload{&trajectory.ToolResult{ToolRef: trajectory.ToolRef{ToolUseID: "t9", Tool: "write"}, Text: "Not run: the reply was refused.", IsError: true, Display: trajectory.DisplayHidden}},
			[]string{"  ⏺ write · not run\n    ⎿ Not run: the reply was refused.\n"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			live := newLiveTranscript(&out, recorder.New(io.Discard, recorder.Options{}))
			for _, e := range c.events {
				live.Emit(1, e)
			}
			got := out.String()
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("the transcript lacks %q:\n%s", w, got)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(got, w) {
					t.Errorf("the transcript shows %q, which it must not:\n%s", w, got)
				}
			}
		})
	}
}

func TestTheTurnLineCountsAllInputAndShowsTheCache(t *testing.T) {
	cases := []struct {
		name string
		u    trajectory.Usage
		want string
	}{
		{"without a cache the input is the input", trajectory.Usage{InputTokens: 900, OutputTokens: 12}, "900 in / 12 out tokens"},
		{"with a cache the input counts what was read and written, and says how much",
			trajectory.Usage{InputTokens: 5, CacheReadTokens: 2000, CacheCreationTokens: 95, OutputTokens: 12},
			"2100 in / 12 out tokens (cache: 2000 read, 95 written)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := usageLine(c.u); got != c.want {
				t.Errorf("usageLine = %q, want %q", got, c.want)
			}
		})
	}
}
