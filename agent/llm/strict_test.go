package llm

import (
	"encoding/json"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

func TestStrictModeNullsForOmittedParametersBecomeAbsent(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"},"offset":{"type":"integer"}},"required":["file_path"]}`)
	tools := []ToolDef{{Name: "read", Schema: schema}}
	block := trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: "call_1", Name: "read", Input: json.RawMessage(`{"file_path":"a.go","offset":null}`)}

	var streamed *trajectory.ContentBlock
	events, finish := neutralize(Options{StrictTools: true}.strictInputs(tools, map[string]bool{"read": true}), func(ev StreamEvent) { streamed = ev.ToolUse })
	events(StreamEvent{ToolUse: &block})
	resp, _ := finish(Response{Content: []trajectory.ContentBlock{block}}, nil)
	for _, got := range []json.RawMessage{streamed.Input, resp.Content[0].Input} {
		var m map[string]any
		if err := json.Unmarshal(got, &m); err != nil {
			t.Fatal(err)
		}
		if _, present := m["offset"]; present || m["file_path"] != "a.go" {
			t.Fatalf("input %s: the null optional parameter must be removed, the rest kept", got)
		}
	}
	if string(block.Input) != `{"file_path":"a.go","offset":null}` {
		t.Fatalf("the caller's block was changed: %s", block.Input)
	}

	events, finish = neutralize(Options{}.strictInputs(tools, nil), nil)
	events(StreamEvent{ToolUse: &block}) // a nil onEvent must be fine
	if resp, _ := finish(Response{Content: []trajectory.ContentBlock{block}}, nil); string(resp.Content[0].Input) != string(block.Input) {
		t.Fatalf("without strict tools the input must be untouched: %s", resp.Content[0].Input)
	}
}

// A tool sent with strict off never had its optional fields made nullable,
// so a null the model sends for it is its own and must reach validation.
func TestNullsOfAToolSentNonStrictAreLeftAlone(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"offset":{"type":"integer"}}}`)
	tools := []ToolDef{{Name: "mcp__x__y", Schema: schema}}
	block := trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: "call_1", Name: "mcp__x__y", Input: json.RawMessage(`{"offset":null}`)}
	_, finish := neutralize(Options{StrictTools: true}.strictInputs(tools, map[string]bool{"mcp__x__y": false}), nil)
	if resp, _ := finish(Response{Content: []trajectory.ContentBlock{block}}, nil); string(resp.Content[0].Input) != `{"offset":null}` {
		t.Fatalf("input of a non-strict tool was rewritten: %s", resp.Content[0].Input)
	}
}
