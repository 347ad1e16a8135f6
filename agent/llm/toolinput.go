package llm

import (
	"encoding/json"

	"github.com/retrace-dev/retrace/trajectory"
)

// closedToolUse builds the tool_use block of a call whose input has fully
// arrived (Anthropic content_block_stop, an OpenAI call the stream moved
// past). Input that is not a JSON object is kept in PartialInput so the
// call is never executed; ok says whether it may be.
func closedToolUse(id, name, raw string) (b trajectory.ContentBlock, ok bool) {
	b = trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: id, Name: name}
	if raw == "" {
		// A tool without parameters may stream no input bytes at all.
		raw = "{}"
	}
	if isObject(raw) {
		b.Input = json.RawMessage(raw)
		return b, true
	}
	b.PartialInput = raw
	return b, false
}

// cutToolUse builds the block of a call the reply ended inside (max
// tokens, a dropped connection): whatever arrived is only PartialInput,
// even if it happens to parse, because nothing says it was complete. With
// no bytes at all there is nothing to keep and ok is false.
func cutToolUse(id, name, raw string) (b trajectory.ContentBlock, ok bool) {
	return trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: id, Name: name, PartialInput: raw}, raw != ""
}

func isObject(raw string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(raw), &m) == nil && m != nil
}

// inputForWire is the input of a tool_use block being sent back to the
// API, which demands an object even for a call that was cut off.
func inputForWire(b trajectory.ContentBlock) json.RawMessage {
	if len(b.Input) > 0 {
		return b.Input
	}
	return json.RawMessage("{}")
}

// markCutToolUse distrusts the last tool_use of a whole (non-streamed)
// reply that stopped at max_tokens: the API returns whatever part of its
// input it could parse, often {}, with nothing saying the input is
// incomplete. Its bytes move to PartialInput, so the call is
// reported as truncated and never executed.
func markCutToolUse(r Response) Response {
	if r.StopReason != trajectory.StopMaxTokens || len(r.Content) == 0 {
		return r
	}
	last := &r.Content[len(r.Content)-1]
	if last.Type == trajectory.BlockToolUse && len(last.Input) > 0 {
		last.PartialInput, last.Input = string(last.Input), nil
	}
	return r
}
