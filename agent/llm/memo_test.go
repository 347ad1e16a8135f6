package llm

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// TestRequestMemoIsRequestEvent follows a session whose requests grow,
// change their last message, change a block in place, compact and shrink,
// and checks every event the memo builds against RequestEvent measuring
// the whole request with json.Marshal.
func TestRequestMemoIsRequestEvent(t *testing.T) {
	text := func(role trajectory.Role, s string) trajectory.Message {
		return trajectory.Message{Role: role, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: s}}}
	}
	use := trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: "toolu_1", Name: "read", Input: json.RawMessage(`{"file_path":"<a>&b"}`)}
	result := trajectory.ContentBlock{Type: trajectory.BlockToolResult, ToolUseID: "toolu_1", Content: "line\n\"quoted\" \u2028", IsError: true}
	tools := []ToolDef{{Name: "read", Description: "Read a file.", Schema: json.RawMessage(`{"type":"object"}`)}}
	history := []trajectory.Message{text(trajectory.RoleUser, "Read the README.")}
	steps := []struct {
		name   string
		change func()
	}{
		{"first request", func() {}},
		{"a tool call and its result appended", func() {
			history = append(history, trajectory.Message{Role: trajectory.RoleAssistant, Content: []trajectory.ContentBlock{use}},
				trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{result}})
		}},
		{"a reminder added to a clone of the last message", func() {
			last := &history[len(history)-1]
			last.Content = append(slices.Clone(last.Content), trajectory.ContentBlock{Type: trajectory.BlockText, Text: "<reminder>"})
		}},
		{"a block changed in place", func() { history[0].Content[0].Text = "Read the README, then stop." }},
		{"an input changed in place", func() {
			history[1].Content[0].Input = json.RawMessage(`{"file_path":"README.md"}`)
		}},
		{"a message without content and one with an empty list", func() {
			history = append(history, trajectory.Message{Role: trajectory.RoleAssistant}, trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{}})
		}},
		{"compacted: a summary replaces the first messages", func() {
			history = append([]trajectory.Message{text(trajectory.RoleUser, "Summary: read it.")}, history[2:]...)
		}},
		{"the same request again", func() {}},
		{"no messages", func() { history = nil }},
		{"an empty message list", func() { history = []trajectory.Message{} }},
		{"one message again", func() { history = []trajectory.Message{text(trajectory.RoleUser, "again")} }},
	}
	var memo, wireMemo RequestMemo
	var convMemo, convRef, convWire, convWireRef trajectory.Conversation
	var prev, prevWire *Request
	for _, st := range steps {
		st.change()
		req := Request{Model: "m", System: "be careful", Tools: tools, MaxTokens: 100, Messages: slices.Clone(history)}
		if history == nil {
			req.Messages = nil
		}
		body, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		want := RequestEvent(req, prev, &convRef, len(body), true)
		got := memo.Event(req, prev, &convMemo, true)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", st.name, got, want)
		}
		// A request decoded from the wire shares no memory with the
		// last: it is compared by value.
		wire := Request{}
		if err := json.Unmarshal(body, &wire); err != nil {
			t.Fatal(err)
		}
		want = RequestEvent(wire, prevWire, &convWireRef, 77, false)
		if got := wireMemo.EventOfSize(wire, prevWire, &convWire, 77, false); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s, decoded:\n got %+v\nwant %+v", st.name, got, want)
		}
		prevWire = &wire
		prev = &req
	}
}

// TestRequestMemoComparesEveryBlockField fails when ContentBlock gains a
// field, so that the memo's comparison (memoMessage.same) is extended with
// it instead of reusing a stale hash.
func TestRequestMemoComparesEveryBlockField(t *testing.T) {
	var fields []string
	for f := range reflect.TypeFor[trajectory.ContentBlock]().Fields() {
		fields = append(fields, f.Name)
	}
	compared := []string{"Type", "Text", "ID", "Name", "Input", "PartialInput", "ToolUseID", "Content", "IsError"}
	if !slices.Equal(fields, compared) {
		t.Fatalf("trajectory.ContentBlock has fields %v; memoMessage.same compares %v: compare the new ones too", fields, compared)
	}
}
