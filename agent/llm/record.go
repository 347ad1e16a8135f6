package llm

import (
	"bytes"
	"encoding/json"
	"slices"

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
	return requestEvent(req, prev, conv, requestBytes, stream, MessageHashes(req.Messages))
}

// requestEvent is RequestEvent with the messages' hashes already known.
func requestEvent(req Request, prev *Request, conv *trajectory.Conversation, requestBytes int, stream bool, hashes []string) *trajectory.ModelRequest {
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
	kept := conv.Encode(ev, hashes)
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
// a reordering changes it, as it breaks the prompt cache.
func ToolsHash(tools []ToolDef) string {
	b, _ := json.Marshal(tools) // a ToolDef always marshals
	return trajectory.Hash(b)
}

// MessageHash is the hash of one message's canonical JSON.
func MessageHash(m trajectory.Message) string {
	b, _ := json.Marshal(m) // a Message always marshals
	return trajectory.Hash(b)
}

// RequestMemo builds the model_request events of one session's requests,
// whose messages are mostly the previous request's again: it keeps each
// message's hash and encoded size, so a request is measured for the
// messages it changed or added, and recording a session costs time linear
// in its turns instead of re-encoding the whole conversation every turn.
// The zero value is ready; a RequestMemo is not safe for concurrent use.
type RequestMemo struct {
	msgs []memoMessage
}

// memoMessage is a message as last measured: its role, a copy of its
// blocks (sharing their strings and inputs), its hash and the length of
// its JSON form.
type memoMessage struct {
	role   trajectory.Role
	blocks []trajectory.ContentBlock
	hash   string
	size   int
}

// Event builds the model_request event of req as RequestEvent does, with
// request_bytes the length of req's JSON form (json.Marshal(req)).
func (m *RequestMemo) Event(req Request, prev *Request, conv *trajectory.Conversation, stream bool) *trajectory.ModelRequest {
	hashes, size := m.messages(req.Messages)
	msgs := req.Messages
	req.Messages = nil
	head, _ := json.Marshal(req) // a Request always marshals
	size += len(head)
	if msgs != nil {
		size += len("[]") - len("null") + max(len(msgs)-1, 0) // the brackets and commas around the messages
	}
	req.Messages = msgs
	return requestEvent(req, prev, conv, size, stream, hashes)
}

// EventOfSize is Event for a request whose body was measured where it
// was sent or received (requestBytes), such as the mock server's.
func (m *RequestMemo) EventOfSize(req Request, prev *Request, conv *trajectory.Conversation, requestBytes int, stream bool) *trajectory.ModelRequest {
	hashes, _ := m.messages(req.Messages)
	return requestEvent(req, prev, conv, requestBytes, stream, hashes)
}

// messages returns the hash of each message and the sum of their JSON
// forms' lengths. A message is measured again only when it differs from
// the one last seen at its index; the comparison is cheap for the
// messages a session carries over, whose strings share memory with the
// copy kept, and cheaper than encoding and hashing for the others.
func (m *RequestMemo) messages(msgs []trajectory.Message) ([]string, int) {
	size := 0
	hashes := make([]string, len(msgs))
	for i := range msgs {
		if i == len(m.msgs) {
			m.msgs = append(m.msgs, memoMessage{})
		}
		e := &m.msgs[i]
		if !e.same(&msgs[i]) {
			b, _ := json.Marshal(msgs[i]) // a Message always marshals
			*e = memoMessage{role: msgs[i].Role, blocks: slices.Clone(msgs[i].Content), hash: trajectory.Hash(b), size: len(b)}
			if msgs[i].Content == nil {
				e.blocks = nil // encodes as null, unlike an empty list
			}
		}
		hashes[i], size = e.hash, size+e.size
	}
	clear(m.msgs[len(msgs):])
	m.msgs = m.msgs[:len(msgs)]
	return hashes, size
}

// same reports whether msg is the message e was measured from.
func (e *memoMessage) same(msg *trajectory.Message) bool {
	if e.role != msg.Role || len(e.blocks) != len(msg.Content) || (e.blocks == nil) != (msg.Content == nil) || e.hash == "" {
		return false
	}
	for i := range e.blocks {
		a, b := &e.blocks[i], &msg.Content[i]
		if a.Type != b.Type || a.Text != b.Text || a.ID != b.ID || a.Name != b.Name || a.PartialInput != b.PartialInput ||
			a.ToolUseID != b.ToolUseID || a.Content != b.Content || a.IsError != b.IsError || !bytes.Equal(a.Input, b.Input) {
			return false
		}
	}
	return true
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
