package trajectory

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAStreamedToolCallMayPrecedeItsModelResponse(t *testing.T) {
	offset := 12.5
	use := ContentBlock{Type: BlockToolUse, ID: "toolu_1", Name: "read", Input: json.RawMessage(`{"file_path":"a"}`)}
	req := func() Payload {
		return &ModelRequest{SystemHash: Hash(nil), ToolsHash: Hash(nil), ToolNames: []string{}, MessageHashes: []string{Hash([]byte("m"))}, PrefixHash: PrefixHashOf([]string{Hash([]byte("m"))}), NewMessages: []Message{}, Stream: true}
	}
	resp := func(blocks ...ContentBlock) Payload {
		return &ModelResponse{Content: blocks, StopReason: StopToolUse, Usage: Usage{}}
	}
	call := func(id string, off *float64) Payload {
		return &ToolCall{ToolRef: ToolRef{ToolUseID: id, Tool: "read"}, Input: use.Input, StreamOffsetMs: off}
	}
	ran := func(id string) []Payload {
		return []Payload{&ToolSuccess{ToolRef: ToolRef{ToolUseID: id, Tool: "read"}}, &ToolEnd{ToolRef: ToolRef{ToolUseID: id, Tool: "read"}}}
	}
	result := &ToolResult{ToolRef: ToolRef{ToolUseID: "toolu_1", Tool: "read"}, Text: "a", Display: DisplayFull}
	end := &SessionEnd{Reason: EndTurn, Turns: 1, ToolCalls: 1}
	seq := func(parts ...any) []Payload {
		var out []Payload
		for _, p := range parts {
			switch v := p.(type) {
			case Payload:
				out = append(out, v)
			case []Payload:
				out = append(out, v...)
			}
		}
		return out
	}
	cases := []struct {
		name     string
		payloads []Payload
		want     string
	}{
		{"a call started while the reply streamed, then the response holding it, is valid",
			seq(req(), call("toolu_1", &offset), ran("toolu_1"), resp(use), result, end), ""},
		{"a streamed call of a reply that failed needs no tool_result",
			seq(req(), call("toolu_1", &offset), ran("toolu_1"), &ModelError{ErrorKind: ModelConnection, Attempt: 1}, &SessionEnd{Reason: EndError, ErrorCode: "model_connection", Turns: 1, ToolCalls: 1}), ""},
		{"a streamed call whose tool_use the response does not hold is a violation",
			seq(req(), call("toolu_9", &offset), ran("toolu_9"), resp(use), result, end), "the model_response holds no tool_use toolu_9"},
		{"a tool_call before its response without stream_offset_ms is a violation",
			seq(req(), call("toolu_1", nil), ran("toolu_1"), resp(use), result, end), "matches no tool_use of the preceding model_response"},
		{"stream_offset_ms on a call after its response is a violation",
			seq(req(), resp(use), call("toolu_1", &offset), ran("toolu_1"), result, end), "has stream_offset_ms but follows its model_response"},
		{"a streamed call still needs its tool_result once the response holds it",
			seq(req(), call("toolu_1", &offset), ran("toolu_1"), resp(use), end), "got no tool_result"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sample := sampleSession("20261130-090000.000-0000abcd", 1)
			wantViolation(t, sample[0], append([]Payload{sample[0].Payload}, c.payloads...), c.want)
		})
	}
}

func TestANegativeStreamOffsetIsMalformed(t *testing.T) {
	off := -1.0
	p := &ToolCall{ToolRef: ToolRef{ToolUseID: "toolu_1", Tool: "read"}, Input: json.RawMessage(`{}`), StreamOffsetMs: &off}
	sample := sampleSession("20261130-090000.000-0000abcd", 1)
	if err := NewEvent(sample[0].Session, 3, sample[0].TS, 1, p).Validate(); err == nil || !strings.Contains(err.Error(), "stream_offset_ms") {
		t.Fatalf("Validate = %v, want an error naming stream_offset_ms", err)
	}
}
