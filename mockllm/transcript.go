package mockllm

import (
	"encoding/json"
	"sync"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

// Transcript turns the model calls an agent makes through the Server into
// a trajectory, so an external agent's session is recorded even though its
// tools run out of sight: each answered call becomes a model_request and a
// model_response, and the tool_result blocks of the next request become
// tool_result events. Feed it from Options.OnRequest. It is safe for
// concurrent use.
type Transcript struct {
	mu      sync.Mutex
	sink    trajectory.Sink
	started bool
	turn    int
	prev    *llm.Request
	pending map[string]string // tool_use id → tool name, awaiting a result
	last    trajectory.StopReason
	usage   trajectory.Usage
}

// NewTranscript returns a Transcript that emits into sink.
func NewTranscript(sink trajectory.Sink) *Transcript {
	return &Transcript{sink: sink, pending: map[string]string{}}
}

// Add records one request the server answered; requests that failed or
// are not model calls are skipped (they are not part of the conversation).
func (t *Transcript) Add(l Logged) {
	if l.Status != 200 || l.Request == nil || l.Response == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	req := l.Request
	if !t.started {
		t.start(req)
	}
	t.results(req)
	t.turn++
	t.sink.Emit(t.turn, llm.RequestEvent(*req, t.prev, len(l.Body), l.Stream))
	t.sink.Emit(t.turn, llm.ResponseEvent(*l.Response))
	t.prev, t.last = req, l.Response.StopReason
	u := l.Response.Usage
	t.usage.InputTokens += u.InputTokens
	t.usage.OutputTokens += u.OutputTokens
	t.usage.CacheReadTokens += u.CacheReadTokens
	t.usage.CacheCreationTokens += u.CacheCreationTokens
	for _, b := range l.Response.ToolUses() {
		t.pending[b.ID] = b.Name
	}
}

func (t *Transcript) start(req *llm.Request) {
	t.started = true
	tools := make([]trajectory.ToolInfo, 0, len(req.Tools))
	for _, d := range req.Tools {
		def, _ := json.Marshal(d) // a ToolDef always marshals
		tools = append(tools, trajectory.ToolInfo{Name: d.Name, DefinitionHash: trajectory.Hash(def),
			Source: trajectory.ToolBuiltin, Display: trajectory.DisplayFull})
	}
	t.sink.Emit(0, &trajectory.SessionStart{
		HarnessVersion: "retrace mock serve", Provider: "mock", Model: req.Model, Mode: trajectory.ModeHeadless,
		PermissionMode: trajectory.PermDefault, ConfigHash: trajectory.Hash(nil),
		SystemPromptHash: trajectory.Hash([]byte(req.System)), Tools: tools, Defenses: []trajectory.DefenseName{},
		Tags: map[string]string{"source": "mock_serve"},
	})
}

// results emits the tool results the agent sends back for the pending
// tool_use blocks of the previous reply.
func (t *Transcript) results(req *llm.Request) {
	if len(req.Messages) == 0 {
		return
	}
	for _, b := range req.Messages[len(req.Messages)-1].Content {
		name, ok := t.pending[b.ToolUseID]
		if b.Type != trajectory.BlockToolResult || !ok {
			continue
		}
		delete(t.pending, b.ToolUseID)
		t.sink.Emit(t.turn, &trajectory.ToolResult{ToolRef: trajectory.ToolRef{ToolUseID: b.ToolUseID, Tool: name},
			Text: b.Content, IsError: b.IsError, Display: trajectory.DisplayFull})
	}
}

// Close ends the session when the conversation ended cleanly: the last
// reply finished its turn and no tool_use waits for a result. Otherwise
// the agent stopped mid-turn, and the trajectory honestly has no
// session_end. It reports whether a session_end was written.
func (t *Transcript) Close() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.started || len(t.pending) > 0 || t.last != trajectory.StopEndTurn {
		return false
	}
	t.sink.Emit(t.turn, &trajectory.SessionEnd{Reason: trajectory.EndTurn, Turns: t.turn, Usage: t.usage})
	return true
}
