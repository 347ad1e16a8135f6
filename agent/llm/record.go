package llm

import (
	"encoding/json"

	"github.com/retrace-dev/retrace/trajectory"
)

// RequestEvent builds the model_request event of req. prev is the previous
// request of the session, nil for the first, and conv follows the
// session's requests (nil: req is read on its own, every message new).
// The event carries the hash of every part (system, the tool definitions
// in order) and, for the messages, the change since prev: how many leading
// messages it keeps, the hashes and full content of the messages after
// them, and the prefix hash over all of them (trajectory.Conversation), so
// a trajectory grows linearly and any two requests can be compared part by
// part; the system prompt is carried when it changed.
func RequestEvent(req Request, prev *Request, conv *trajectory.Conversation, requestBytes int, stream bool) *trajectory.ModelRequest {
	ev := &trajectory.ModelRequest{
		RequestBytes: int64(requestBytes),
		SystemHash:   trajectory.Hash([]byte(req.System)),
		ToolsHash:    ToolsHash(req.Tools),
		ToolNames:    make([]string, len(req.Tools)),
		MaxTokens:    req.MaxTokens,
		Stream:       stream,
	}
	for i, t := range req.Tools {
		ev.ToolNames[i] = t.Name
	}
	if conv == nil {
		conv = &trajectory.Conversation{}
	}
	kept := conv.Encode(ev, MessageHashes(req.Messages))
	ev.NewMessages = append([]trajectory.Message{}, req.Messages[kept:]...)
	if prev == nil || prev.System != req.System {
		ev.System = req.System
	}
	return ev
}

// MessageHashes returns the MessageHash of every message, in order.
func MessageHashes(msgs []trajectory.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = MessageHash(m)
	}
	return out
}

// ToolsHash is the hash of the tool definitions in the order they are sent:
// a reordering changes it, as it breaks the prompt cache (seed §3.5).
func ToolsHash(tools []ToolDef) string {
	b, _ := json.Marshal(tools) // a ToolDef always marshals
	return trajectory.Hash(b)
}

// MessageHash is the hash of one message's canonical JSON.
func MessageHash(m trajectory.Message) string {
	b, _ := json.Marshal(m) // a Message always marshals
	return trajectory.Hash(b)
}

// ResponseEvent builds the model_response event of resp.
func ResponseEvent(resp Response) *trajectory.ModelResponse {
	content := resp.Content
	if content == nil {
		content = []trajectory.ContentBlock{}
	}
	return &trajectory.ModelResponse{
		Content:       content,
		StopReason:    resp.StopReason,
		StopReasonRaw: resp.StopReasonRaw,
		Usage:         resp.Usage,
		TTFTMs:        trajectory.Millis(resp.TTFT),
		DurationMs:    trajectory.Millis(resp.Duration),
	}
}
