package mockllm

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

// Transcript turns the model calls an agent makes through the Server into
// a trajectory, so an external agent's session is recorded even though its
// tools run out of sight: each accepted call becomes a model_request (the
// tool_result blocks it carries for the previous reply become tool_result
// events before it), each injected error status a model_error, and each
// complete reply a model_response. Feed it from Options.OnAccept and
// Options.OnAnswer: every event is emitted when it happens and, when the
// sink has a Flush method (a *recorder.Recorder does), flushed at once, so
// a killed server leaves on disk every reply a client received. A client
// that sends the same request again before getting a reply is retrying:
// it adds an attempt, not a model_request. It is safe for concurrent use.
type Transcript struct {
	mu       sync.Mutex
	sink     trajectory.Sink
	started  bool
	turn     int
	prev     *llm.Request
	prevEv   *trajectory.ModelRequest
	awaiting bool // a model_request waits for its response
	attempt  int
	pending  map[string]string // tool_use id → tool name, awaiting a result
	last     trajectory.StopReason
	usage    trajectory.Usage
}

// NewTranscript returns a Transcript that emits into sink.
func NewTranscript(sink trajectory.Sink) *Transcript {
	return &Transcript{sink: sink, pending: map[string]string{}}
}

// Accept records a model call the server accepted (Options.OnAccept):
// its request and, when the reply is an injected error status, the failed
// attempt. Requests that are not model calls or that were rejected before
// the source answered are not part of the conversation and are skipped.
func (t *Transcript) Accept(l Logged) {
	if l.Request == nil || (l.Status != 200 && l.Status < 400) || (l.Status == 200 && l.Response == nil) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.request(l)
	if l.Status != 200 {
		t.sink.Emit(t.turn, &trajectory.ModelError{ErrorKind: kindForStatus(l.Status), StatusCode: l.Status, Attempt: t.attempt})
	}
	t.flush()
}

// Answer records a complete reply (Options.OnAnswer).
func (t *Transcript) Answer(l Logged) {
	if l.Status != 200 || l.Request == nil || l.Response == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.awaiting {
		t.request(l) // fed without Accept: the request comes first all the same
	}
	t.awaiting = false
	t.sink.Emit(t.turn, llm.ResponseEvent(*l.Response))
	t.last = l.Response.StopReason
	u := l.Response.Usage
	t.usage.InputTokens += u.InputTokens
	t.usage.OutputTokens += u.OutputTokens
	t.usage.CacheReadTokens += u.CacheReadTokens
	t.usage.CacheCreationTokens += u.CacheCreationTokens
	for _, b := range l.Response.ToolUses() {
		t.pending[b.ID] = b.Name
	}
	t.flush()
}

// request emits the model_request of l, unless l retries the request
// that waits for its response.
func (t *Transcript) request(l Logged) {
	req := l.Request
	if !t.started {
		t.start(req)
	}
	ev := llm.RequestEvent(*req, t.prev, l.BodyBytes, l.Stream)
	if t.awaiting && sameRequest(ev, t.prevEv) {
		t.attempt++
		return
	}
	t.results(req)
	t.turn++
	t.sink.Emit(t.turn, ev)
	t.prev, t.prevEv, t.awaiting, t.attempt = req, ev, true, 1
}

// sameRequest reports whether two requests ask the same: same system
// prompt, tools and messages.
func sameRequest(a, b *trajectory.ModelRequest) bool {
	return b != nil && a.SystemHash == b.SystemHash && a.ToolsHash == b.ToolsHash && slices.Equal(a.MessageHashes, b.MessageHashes)
}

// flush writes what was emitted to the sink's file, when it has one.
func (t *Transcript) flush() {
	if f, ok := t.sink.(interface{ Flush() error }); ok {
		_ = f.Flush() // a failure is counted by the sink and reported when it closes
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
	if !t.started || t.awaiting || len(t.pending) > 0 || t.last != trajectory.StopEndTurn {
		return false
	}
	t.sink.Emit(t.turn, &trajectory.SessionEnd{Reason: trajectory.EndTurn, Turns: t.turn, Usage: t.usage})
	t.flush()
	return true
}
