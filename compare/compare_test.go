package compare

import (
	"regexp"
	"slices"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

func TestCompareIdenticalAfterNormalisation(t *testing.T) {
	for _, name := range []string{"abort.jsonl", "basic.jsonl", "defenses.jsonl", "hook_block.jsonl",
		"parallel_batch.jsonl", "permission_denial.jsonl", "torn_last_line.jsonl"} {
		t.Run("a replay of "+name+" that differs only in ts, seq, session and durations is identical", func(t *testing.T) {
			r := Sessions(load(t, name), revolatile(load(t, name)), Options{})
			if !r.Identical() {
				t.Fatalf("want identical, got %+v", r.Divergences)
			}
		})
	}
}

func TestCompareClassifiesEachDivergence(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		edit  func(t *testing.T, evs []trajectory.Event) []trajectory.Event
		want  Class
		id    string
		field string
	}{
		{
			name: "a changed tool_result text is tool_output_changed",
			file: "basic.jsonl", want: ClassToolOutput, id: "toolu_01", field: "text",
			edit: func(t *testing.T, evs []trajectory.Event) []trajectory.Event {
				return edit(evs, func(p *trajectory.ToolResult) { p.Text += "\nextra line" })
			},
		},
		{
			name: "a tool_result that became an error is tool_output_changed on is_error",
			file: "basic.jsonl", want: ClassToolOutput, id: "toolu_01", field: "is_error",
			edit: func(t *testing.T, evs []trajectory.Event) []trajectory.Event {
				return edit(evs, func(p *trajectory.ToolResult) { p.IsError = true })
			},
		},
		{
			name: "an allow that became a deny by rule is permission_changed",
			file: "basic.jsonl", want: ClassPermission, id: "toolu_01", field: "decision",
			edit: func(t *testing.T, evs []trajectory.Event) []trajectory.Event {
				return denyByRule(evs, "toolu_01", "Bash(rm:*)")
			},
		},
		{
			name: "a hook that no longer blocks is hook_changed",
			file: "hook_block.jsonl", want: ClassHook, id: "toolu_31", field: "hook pre no-secrets",
			edit: func(t *testing.T, evs []trajectory.Event) []trajectory.Event {
				return edit(evs, func(p *trajectory.HookRun) {
					if p.ToolUseID == "toolu_31" {
						p.Outcome = trajectory.HookError
					}
				})
			},
		},
		{
			name: "a failure with another kind is failure_kind_changed",
			file: "abort.jsonl", want: ClassFailureKind, id: "toolu_41", field: "outcome",
			edit: func(t *testing.T, evs []trajectory.Event) []trajectory.Event {
				return edit(evs, func(p *trajectory.ToolFailure) {
					if p.ToolUseID == "toolu_41" {
						p.FailureKind, p.ErrorCode = trajectory.FailureTimeout, ""
					}
				})
			},
		},
		{
			name: "a failure with another error code is failure_kind_changed",
			file: "abort.jsonl", want: ClassFailureKind, id: "toolu_42", field: "outcome",
			edit: func(t *testing.T, evs []trajectory.Event) []trajectory.Event {
				return edit(evs, func(p *trajectory.ToolFailure) {
					if p.ToolUseID == "toolu_42" {
						p.ErrorCode = "exit:2"
					}
				})
			},
		},
		{
			name: "a defense that acts only in the replay is defense_fired",
			file: "basic.jsonl", want: ClassDefenseFired, id: "toolu_01", field: "repeated_readonly",
			edit: func(t *testing.T, evs []trajectory.Event) []trajectory.Event {
				return insertAfter(t, evs, trajectory.TypeToolResult, trajectory.Event{Payload: &trajectory.DefenseTrigger{
					Defense: trajectory.DefenseRepeatedReadOnly, Action: trajectory.ActionRemind, ToolUseID: "toolu_01", Count: 1}})
			},
		},
		{
			name: "a defense whose action changed is defense_fired",
			file: "defenses.jsonl", want: ClassDefenseFired, id: "toolu_52", field: "end_turn_fallthrough",
			edit: func(t *testing.T, evs []trajectory.Event) []trajectory.Event {
				return edit(evs, func(p *trajectory.DefenseTrigger) {
					if p.ToolUseID == "toolu_52" {
						p.Action = trajectory.ActionSkip
					}
				})
			},
		},
		{
			name: "a defense that no longer acts is defense_stopped",
			file: "defenses.jsonl", want: ClassDefenseStopped, id: "toolu_51", field: "empty_input_retry",
			edit: func(t *testing.T, evs []trajectory.Event) []trajectory.Event {
				return without(evs, func(ev trajectory.Event) bool { return ev.Type() == trajectory.TypeDefenseTrigger && ev.Turn == 1 })
			},
		},
		{
			name: "a changed system prompt is request_prefix_changed",
			file: "basic.jsonl", want: ClassRequestPrefix, field: "system",
			edit: func(t *testing.T, evs []trajectory.Event) []trajectory.Event {
				return changeSystem(evs, "You are a reckless coding agent.", 1, 1)
			},
		},
		{
			name: "a changed model reply is response_changed",
			file: "basic.jsonl", want: ClassResponse, field: "content",
			edit: func(t *testing.T, evs []trajectory.Event) []trajectory.Event {
				for _, ev := range evs {
					if p, ok := ev.Payload.(*trajectory.ModelResponse); ok && ev.Turn == 2 {
						p.Content[0].Text = "Something else entirely."
					}
				}
				return evs
			},
		},
		{
			name: "a changed tool input is response_changed on the call",
			file: "basic.jsonl", want: ClassResponse, id: "toolu_01", field: "input",
			edit: func(t *testing.T, evs []trajectory.Event) []trajectory.Event {
				return edit(evs, func(p *trajectory.ToolCall) { p.Input = []byte(`{"file_path":"OTHER.md"}`) })
			},
		},
		{
			name: "a call the replay never made is call_missing",
			file: "parallel_batch.jsonl", want: ClassCallMissing, id: "toolu_14", field: "tool_call",
			edit: func(t *testing.T, evs []trajectory.Event) []trajectory.Event {
				return without(evs, func(ev trajectory.Event) bool { return trajectory.ToolUseIDOf(ev.Payload) == "toolu_14" })
			},
		},
		{
			name: "a call only the replay made is call_extra",
			file: "basic.jsonl", want: ClassCallExtra, id: "toolu_99", field: "tool_call",
			edit: func(t *testing.T, evs []trajectory.Event) []trajectory.Event {
				return insertAfter(t, evs, trajectory.TypeToolResult, trajectory.Event{Payload: &trajectory.ToolCall{
					ToolRef: trajectory.ToolRef{ToolUseID: "toolu_99", Tool: "read"}, Input: []byte(`{}`)}})
			},
		},
		{
			name: "a session that ends for another reason is end_changed",
			file: "basic.jsonl", want: ClassEnd, field: "reason",
			edit: func(t *testing.T, evs []trajectory.Event) []trajectory.Event {
				return edit(evs, func(p *trajectory.SessionEnd) { p.Reason = trajectory.EndMaxTurns })
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := load(t, tc.file)
			rep := tc.edit(t, revolatile(load(t, tc.file)))
			r := Sessions(rec, rep, Options{})
			if got := classes(r); len(got) != 1 || got[0] != tc.want {
				t.Fatalf("want exactly one %s, got %v: %+v", tc.want, got, r.Divergences)
			}
			d, _ := r.First()
			if d.ToolUseID != tc.id || d.Field != tc.field {
				t.Errorf("got tool_use_id %q field %q, want %q %q", d.ToolUseID, d.Field, tc.id, tc.field)
			}
			if d.Recorded == d.Replayed {
				t.Errorf("a divergence shows equal values %q", d.Recorded)
			}
			if r.Counts[tc.want] != 1 || r.Identical() {
				t.Errorf("counts %v, identical %v", r.Counts, r.Identical())
			}
		})
	}
}

func denyByRule(evs []trajectory.Event, id, rule string) []trajectory.Event {
	for i, ev := range evs {
		if p, ok := ev.Payload.(*trajectory.PermissionAllow); ok && p.ToolUseID == id {
			d := p.PermissionDecision
			d.Source, d.Step, d.Rule = trajectory.SourceRule, trajectory.StepDenyRule, rule
			evs[i].Payload = &trajectory.PermissionDeny{PermissionDecision: d}
		}
	}
	return evs
}

// changeSystem gives the requests of turns from..to a new system prompt,
// as a what-if with another system prompt would.
func changeSystem(evs []trajectory.Event, system string, from, to int) []trajectory.Event {
	h := trajectory.Hash([]byte(system))
	first := true
	for _, ev := range evs {
		if p, ok := ev.Payload.(*trajectory.ModelRequest); ok && ev.Turn >= from && ev.Turn <= to {
			p.SystemHash, p.System = h, ""
			if first {
				p.System = system
				first = false
			}
		}
	}
	return evs
}

func TestWhatIfLineNamesTheChangedDecision(t *testing.T) {
	tests := []struct {
		name string
		file string
		edit func([]trajectory.Event) []trajectory.Event
		want []string
	}{
		{
			name: "an allowed call denied by a new rule reads allowed → denied by rule",
			file: "basic.jsonl",
			edit: func(evs []trajectory.Event) []trajectory.Event { return denyByRule(evs, "toolu_01", "Bash(rm:*)") },
			want: []string{"turn 1, toolu_01: allowed → denied by rule Bash(rm:*)"},
		},
		{
			name: "a denied call now allowed reads denied by rule → allowed by its source",
			file: "permission_denial.jsonl",
			edit: func(evs []trajectory.Event) []trajectory.Event {
				for i, ev := range evs {
					if p, ok := ev.Payload.(*trajectory.PermissionDeny); ok && p.ToolUseID == "toolu_22" {
						d := p.PermissionDecision
						d.Source, d.Step, d.Rule = trajectory.SourceRule, trajectory.StepDenyRule, ""
						d.Source = trajectory.SourceMode
						evs[i].Payload = &trajectory.PermissionAllow{PermissionDecision: d}
					}
				}
				return evs
			},
			want: []string{"turn 1, toolu_22: denied → allowed by mode"},
		},
		{
			name: "a deny by another rule names both rules",
			file: "permission_denial.jsonl",
			edit: func(evs []trajectory.Event) []trajectory.Event {
				return edit(evs, func(p *trajectory.PermissionDeny) {
					if p.ToolUseID == "toolu_22" {
						p.Rule = "Bash(git:*)"
					}
				})
			},
			want: []string{"turn 1, toolu_22: denied by rule Bash(git push:*) → denied by rule Bash(git:*)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Sessions(load(t, tc.file), tc.edit(load(t, tc.file)), Options{})
			if !slices.Equal(r.WhatIf, tc.want) {
				t.Fatalf("what-if %q, want %q", r.WhatIf, tc.want)
			}
		})
	}
}

func TestNormalisationHidesVolatileValues(t *testing.T) {
	withPath := func(dir string) func(p *trajectory.ToolResult) {
		return func(p *trajectory.ToolResult) { p.Text = "read " + dir + "/README.md in 0.42s" }
	}
	tests := []struct {
		name      string
		opts      Options
		recDir    string
		repDir    string
		identical bool
	}{
		{"a temp dir difference without a rewrite or the default rules is a divergence", Options{NoDefaults: true}, "/tmp/retrace-ws-1", "/tmp/replay-123", false},
		{"the default temp_path rule makes a temp dir difference vanish", Options{}, "/tmp/retrace-ws-1", "/tmp/replay-123", true},
		{"a path rewrite makes a temp dir difference vanish",
			Options{NoDefaults: true, PathRewrites: []PathRewrite{{Old: "/tmp/replay-123", New: "/tmp/retrace-ws-1"}}}, "/tmp/retrace-ws-1", "/tmp/replay-123", true},
		{"the longest rewrite wins over a rewrite of its parent",
			Options{NoDefaults: true, PathRewrites: []PathRewrite{{Old: "/tmp", New: "/x"}, {Old: "/tmp/replay-123", New: "/tmp/retrace-ws-1"}}}, "/tmp/retrace-ws-1", "/tmp/replay-123", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := edit(load(t, "basic.jsonl"), withPath(tc.recDir))
			rep := edit(load(t, "basic.jsonl"), withPath(tc.repDir))
			if got := Sessions(rec, rep, tc.opts).Identical(); got != tc.identical {
				t.Fatalf("identical %v, want %v", got, tc.identical)
			}
		})
	}
	t.Run("a volatile pattern makes a timing difference vanish and only then", func(t *testing.T) {
		rec := edit(load(t, "basic.jsonl"), func(p *trajectory.ToolResult) { p.Text = "ok  pkg  0.42s" })
		rep := edit(load(t, "basic.jsonl"), func(p *trajectory.ToolResult) { p.Text = "ok  pkg  1.07s" })
		if Sessions(rec, rep, Options{NoDefaults: true}).Identical() {
			t.Fatal("a timing difference without a pattern must diverge")
		}
		rule := Rule{Name: "secs", Pattern: regexp.MustCompile(`\d+\.\d+s`), Replace: "<s>"}
		if r := Sessions(rec, rep, Options{NoDefaults: true, Rules: []Rule{rule}}); !r.Identical() {
			t.Fatalf("want identical, got %+v", r.Divergences)
		}
	})
	t.Run("a path inside a request message is rewritten too", func(t *testing.T) {
		rec := load(t, "basic.jsonl")
		rep := load(t, "basic.jsonl")
		for _, ev := range rep {
			if p, ok := ev.Payload.(*trajectory.ModelRequest); ok && ev.Turn == 2 {
				m := &p.NewMessages[len(p.NewMessages)-1]
				m.Content[0].Content = " /tmp/replay-123"
				p.MessageHashes[len(p.MessageHashes)-1] = trajectory.Hash([]byte("changed"))
			}
		}
		for _, ev := range rec {
			if p, ok := ev.Payload.(*trajectory.ModelRequest); ok && ev.Turn == 2 {
				m := &p.NewMessages[len(p.NewMessages)-1]
				m.Content[0].Content = " /tmp/retrace-ws-1"
				p.MessageHashes[len(p.MessageHashes)-1] = trajectory.Hash([]byte("original"))
			}
		}
		if Sessions(rec, rep, Options{NoDefaults: true}).Identical() {
			t.Fatal("a path difference in a message must diverge without a rewrite")
		}
		opts := Options{NoDefaults: true, PathRewrites: []PathRewrite{{Old: "/tmp/replay-123", New: "/tmp/retrace-ws-1"}}}
		if r := Sessions(rec, rep, opts); !r.Identical() {
			t.Fatalf("want identical, got %+v", r.Divergences)
		}
	})
}
