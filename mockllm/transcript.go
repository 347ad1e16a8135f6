package mockllm

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/tooloutcome"
	"github.com/retrace-dev/retrace/trajectory"
)

// Transcript turns the model calls an agent makes through the Server into
// trajectories, so an external agent's session is recorded even though
// its tools run out of sight. Feed it from Options.OnAccept,
// Options.OnAnswer and Options.OnRequest (Accept, Answer, Done).
//
// Each accepted call becomes a model_request and each complete reply a
// model_response with its measured duration_ms (and ttft_ms when
// streamed). The tool calls are known from the wire: a tool_use of a reply
// answered by a tool_result in the next request becomes, before that
// request, a tool_call, its outcome, a tool_end and the tool_result, all
// marked observed "wire". The outcome is read by the classifier of the
// client the requests come from (tooloutcome.ForUserAgent: Claude Code,
// Codex, opencode, else the wire format's generic one), the same one
// retrace import uses, so a recording and the client's imported
// transcript agree on every call; a result no rule recognises is a
// tool_failure of kind unknown, never a success. The call's own run time
// is on the wire only when the client states it (Codex's wall time);
// otherwise tool_end's duration_ms is 0 with duration_unknown, and the
// next model_request carries the batch's wall time as batch_ms, never
// split among the calls. A tool_use that never got a result
// has no tool_call.
//
// Every failed attempt is a model_error: an injected status, a request
// the server refused (invalid, out of turns, a failed expectation; its
// model_request and the tool results it carried are recorded first), a
// reply that broke (malformed_sse: invalid_response) and one the client
// hung up on (aborted, undelivered). A client that sends the same request
// again after its attempt failed is retrying: it adds an attempt, not a
// model_request.
//
// Several clients may share one conversation (parallel requests of one
// agent, many agents routed alike), so several of its requests may wait
// for their replies at once. A trajectory holds one request at a time, so
// with NewTranscriptSessions a request that arrives while every session
// of its conversation waits for a reply starts another session of the
// conversation, a lane (tagged lane: 2, 3, …); a request goes to the
// idle lane whose failed request it retries, else the one whose tool_uses
// it answers, else the first idle one. Each HTTP request is matched to
// its own model_request by Logged.ID, never by "the latest request": each
// is recorded exactly once, and its reply or failure against it. A request
// the same as one still waiting is a request of its own (another client
// asks the same), not a retry. With one sink (NewTranscript) there are no
// lanes: overlapping requests are each recorded once, interleaved in the
// one session.
//
// Every event is emitted when it happens and, when the sink has a Flush
// method (a *recorder.Recorder does), flushed at once, so a killed server
// leaves on disk every reply a client received. When that flush fails
// (the disk is full), Accept and Answer return the error, and the server
// answers the client with an error instead of a reply that is not
// recorded. It is safe for concurrent use.
type Transcript struct {
	mu sync.Mutex
	// open returns the sink of a conversation's session; nil: one sink
	// for every conversation.
	open func(conversation string) trajectory.Sink
	one  trajectory.Sink
	// sessions are the lanes of each conversation, first lane first.
	sessions map[string][]*tsession
	order    []*tsession
	// byID is the lane of each request waiting for its outcome, by
	// Logged.ID.
	byID map[uint64]*tsession
	// answeredSeq counts answered calls across sessions, to find the
	// most recent one (see link).
	answeredSeq int
}

// tsession is the recording of one conversation.
type tsession struct {
	sink         trajectory.Sink
	conversation string
	lane         int // 1 for a conversation's first session
	started      bool
	turn         int
	prev         *llm.Request
	conv         trajectory.Conversation // the messages prev sent
	memo         llm.RequestMemo         // the messages' hashes, so a request is hashed for what it changed
	// flights are the requests recorded and waiting for their reply or
	// failure, by Logged.ID.
	flights map[uint64]*flight
	// failed are the latest requests whose attempt failed, newest last:
	// the same request sent again is their next attempt.
	failed   []*flight
	pending  map[string]pendingUse // tool_use id → the block, awaiting a result
	answered []answeredUse         // the most recent answered calls, oldest first
	replyEnd time.Time             // when the last reply ended
	last     trajectory.StopReason
	usage    trajectory.Usage
	calls    int
	failures int
	// classify reads the outcome of the client's tool results; chosen by
	// the first request's User-Agent (tooloutcome.ForUserAgent).
	classify tooloutcome.Classifier
	// client names the agent CLI of that User-Agent
	// (tooloutcome.ClientOfUserAgent), "" for another.
	client string
}

// flight is one recorded model_request: its turn and its attempts.
type flight struct {
	turn    int
	ev      *trajectory.ModelRequest
	attempt int
}

// keepFailed bounds tsession.failed: a retry follows its failure closely.
const keepFailed = 16

// pendingUse is a tool_use of a reply, waiting for its tool_result.
type pendingUse struct {
	block trajectory.ContentBlock
	index int
}

// NewTranscript returns a Transcript that records every conversation into
// sink, as one session.
func NewTranscript(sink trajectory.Sink) *Transcript {
	return &Transcript{one: sink, sessions: map[string][]*tsession{}, byID: map[uint64]*tsession{}}
}

// NewTranscriptSessions returns a Transcript that records each
// conversation (Logged.Conversation, set when the source routes) as its
// own session, in the sink open returns for it. A conversation whose
// first user message holds the text of a tool_use's input (the prompt of
// an Agent or Task call; see StartedBy), pending or, for a background
// agent, recently answered, is a subagent: its session_start
// names the parent's session, when the parent's sink has a SessionID
// method, and the parent's tool_use id.
func NewTranscriptSessions(open func(conversation string) trajectory.Sink) *Transcript {
	return &Transcript{open: open, sessions: map[string][]*tsession{}, byID: map[uint64]*tsession{}}
}

// session returns the recording request l belongs to: the lane it was
// recorded in, else the lane it goes to now (see Transcript).
func (t *Transcript) session(l Logged) *tsession {
	if s := t.byID[l.ID]; s != nil {
		return s
	}
	key := ""
	if t.open != nil {
		key = l.Conversation
	}
	lanes := t.sessions[key]
	if t.open == nil && len(lanes) > 0 {
		return lanes[0] // one sink: one lane
	}
	var idle []*tsession
	for _, s := range lanes {
		if len(s.flights) == 0 {
			idle = append(idle, s)
		}
	}
	if len(idle) > 0 {
		if l.Request == nil {
			return idle[0]
		}
		if s := retried(idle, l.Request); s != nil {
			return s
		}
		if s := answering(idle, l.Request); s != nil {
			return s
		}
		return idle[0]
	}
	s := &tsession{conversation: l.Conversation, lane: len(lanes) + 1, pending: map[string]pendingUse{}, flights: map[uint64]*flight{}, sink: t.one}
	if t.open != nil {
		s.sink = t.open(key)
	}
	t.sessions[key] = append(lanes, s)
	t.order = append(t.order, s)
	return s
}

// retried returns the lane among idle whose failed request req sends
// again, or nil. It hashes req's messages only when a lane has a failed
// request, which is rare.
func retried(idle []*tsession, req *llm.Request) *tsession {
	var system, tools, prefix string
	for _, s := range idle {
		for _, f := range s.failed {
			if prefix == "" {
				system, tools = trajectory.Hash([]byte(req.System)), llm.ToolsHash(req.Tools)
				prefix = trajectory.PrefixHashOf(llm.MessageHashes(req.Messages))
			}
			if f.ev.SystemHash == system && f.ev.ToolsHash == tools && f.ev.PrefixHash == prefix {
				return s
			}
		}
	}
	return nil
}

// answering returns the lane among idle with a pending tool_use that req's
// last user messages answer, or nil: the lane whose conversation req
// carries on.
func answering(idle []*tsession, req *llm.Request) *tsession {
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == trajectory.RoleUser; i-- {
		for _, b := range req.Messages[i].Content {
			if b.Type != trajectory.BlockToolResult {
				continue
			}
			for _, s := range idle {
				if _, ok := s.pending[b.ToolUseID]; ok {
					return s
				}
			}
		}
	}
	return nil
}

// isModelCall reports whether l is a call to one of the model endpoints.
func isModelCall(l Logged) bool {
	switch l.Endpoint {
	case EndpointMessages, EndpointChatCompletions, EndpointResponses:
		return true
	}
	return false
}

// Accept records a model call the server accepted (Options.OnAccept):
// its request and, when the reply is an injected error status, the failed
// attempt. Whether a 200 reply reached the client whole is recorded by
// Answer and Done. The error is the sink's when it could not write them:
// the reply must then not be served.
func (t *Transcript) Accept(l Logged) error {
	if l.Request == nil || (l.Status != http.StatusOK && l.Status < 400) || (l.Status == http.StatusOK && l.Response == nil) {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.session(l)
	f := t.request(s, l)
	if l.Status != http.StatusOK {
		s.sink.Emit(f.turn, &trajectory.ModelError{ErrorKind: kindForStatus(l.Status), StatusCode: l.Status, Attempt: f.attempt,
			DurationMs: msBetween(l.Time, l.End)})
		t.fail(s, l.ID, f)
	}
	return s.flush()
}

// Answer records a complete reply (Options.OnAnswer), with its measured
// duration and time to first byte. The error is the sink's when it could
// not write it: the reply must then not be completed.
func (t *Transcript) Answer(l Logged) error {
	if l.Status != http.StatusOK || l.Request == nil || l.Response == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.session(l)
	f := s.flights[l.ID]
	if f == nil {
		f = t.request(s, l) // fed without Accept: the request comes first all the same
	}
	delete(s.flights, l.ID)
	delete(t.byID, l.ID)
	ev := llm.ResponseEvent(*l.Response)
	ev.DurationMs = msBetween(l.Time, l.End)
	if l.Stream {
		// A short stream is gathered and its first bytes leave with the
		// rest, after this call: its time to first byte is its duration.
		ev.TTFTMs = ev.DurationMs
		if !l.FirstByte.IsZero() {
			ev.TTFTMs = msBetween(l.Time, l.FirstByte)
		}
	}
	s.sink.Emit(f.turn, ev)
	s.replyEnd = l.End
	s.last = l.Response.StopReason
	u := l.Response.Usage
	s.usage.InputTokens += u.InputTokens
	s.usage.OutputTokens += u.OutputTokens
	s.usage.CacheReadTokens += u.CacheReadTokens
	s.usage.CacheCreationTokens += u.CacheCreationTokens
	for i, b := range l.Response.ToolUses() {
		s.pending[b.ID] = pendingUse{block: b, index: i}
	}
	return s.flush()
}

// Done records how a model call ended (Options.OnRequest): an attempt
// the server refused before the source answered, and a 200 reply that
// broke off, become a model_error (Accept records the injected statuses).
// Other requests are skipped.
func (t *Transcript) Done(l Logged) {
	if !isModelCall(l) || (l.Status >= 400 && l.Accepted) {
		return
	}
	me := &trajectory.ModelError{StatusCode: l.Status, DurationMs: msBetween(l.Time, l.End), Undelivered: l.ClientGone}
	switch {
	case l.Status >= 400:
		me.ErrorKind = kindForStatus(l.Status)
	case l.Status == http.StatusOK && l.Response != nil && !l.Complete:
		// The reply broke off: a malformed frame was sent, or the client
		// hung up before the end (during a stall) and never received it.
		me.ErrorKind = trajectory.ModelInvalidResponse
		if l.ClientGone {
			me.ErrorKind = trajectory.ModelAborted
		}
	default:
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.session(l)
	turn := s.turn
	me.Attempt = 1 // a body that did not decode retries nothing
	switch {
	case l.Request != nil:
		// A request refused before the source answered was sent all the
		// same, with the tool results it carried: it is recorded now.
		f := s.flights[l.ID]
		if f == nil {
			f = t.request(s, l)
		}
		turn, me.Attempt = f.turn, f.attempt
		t.fail(s, l.ID, f)
	case !s.started:
		return // nothing to open a session with: the body did not decode
	}
	s.sink.Emit(turn, me)
	_ = s.flush() // a failure is the sink's, reported when it closes
}

// fail ends the flight of request id in s as failed: the same request
// sent again is its next attempt.
func (t *Transcript) fail(s *tsession, id uint64, f *flight) {
	delete(s.flights, id)
	delete(t.byID, id)
	if len(s.failed) == keepFailed {
		s.failed = append(s.failed[:0], s.failed[1:]...)
	}
	s.failed = append(s.failed, f)
}

// msBetween is the time from a to b in milliseconds, 0 when unknown.
func msBetween(a, b time.Time) float64 {
	if a.IsZero() || b.IsZero() || b.Before(a) {
		return 0
	}
	return float64(b.Sub(a).Microseconds()) / 1000
}

// request emits the model_request of l and returns its flight, waiting
// for its reply under l.ID, unless l retries a request whose attempt
// failed: then it is that request's next attempt.
func (t *Transcript) request(s *tsession, l Logged) *flight {
	req := l.Request
	if !s.started {
		s.classify = tooloutcome.ForUserAgent(l.Header.Get("User-Agent"), l.Endpoint == EndpointMessages)
		s.client = tooloutcome.ClientOfUserAgent(l.Header.Get("User-Agent"))
		t.start(s, req)
	}
	ev := s.memo.EventOfSize(*req, s.prev, &s.conv, l.BodyBytes, l.Stream)
	for i := len(s.failed) - 1; i >= 0; i-- {
		if f := s.failed[i]; sameRequest(ev, f.ev) {
			s.failed = append(s.failed[:i], s.failed[i+1:]...)
			f.attempt++
			s.flights[l.ID] = f
			t.byID[l.ID] = s
			return f
		}
	}
	if s.results(t, req) > 0 && !s.replyEnd.IsZero() {
		ev.BatchMs = msBetween(s.replyEnd, l.Time)
	}
	s.turn++
	s.sink.Emit(s.turn, ev)
	s.prev = req
	f := &flight{turn: s.turn, ev: ev, attempt: 1}
	s.flights[l.ID] = f
	t.byID[l.ID] = s
	return f
}

// sameRequest reports whether two requests ask the same: same system
// prompt, tools and messages (the prefix hash covers every message).
func sameRequest(a, b *trajectory.ModelRequest) bool {
	return b != nil && a.SystemHash == b.SystemHash && a.ToolsHash == b.ToolsHash && a.PrefixHash == b.PrefixHash
}

// flush writes what was emitted to the sink's file, when it has one, and
// returns the sink's error when it cannot (a recorder's error is sticky:
// once a write failed, every flush reports it).
func (s *tsession) flush() error {
	if f, ok := s.sink.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

func (t *Transcript) start(s *tsession, req *llm.Request) {
	s.started = true
	tools := make([]trajectory.ToolInfo, 0, len(req.Tools))
	for _, d := range req.Tools {
		def, _ := json.Marshal(d) // a ToolDef always marshals
		tools = append(tools, trajectory.ToolInfo{Name: d.Name, DefinitionHash: trajectory.Hash(def),
			Source: trajectory.ToolBuiltin, Display: trajectory.DisplayFull})
	}
	tags := map[string]string{"source": "mock_serve"}
	if s.client != "" {
		// Which client it was: retrace scenario from runs it again.
		tags["client"] = s.client
	}
	if s.conversation != "" {
		tags["conversation"] = s.conversation
	}
	if s.lane > 1 {
		tags["lane"] = strconv.Itoa(s.lane)
	}
	start := &trajectory.SessionStart{
		HarnessVersion: "retrace mock serve", Provider: "mock", Model: req.Model, Mode: trajectory.ModeHeadless,
		PermissionMode: trajectory.PermDefault, ConfigHash: trajectory.Hash(nil),
		SystemPromptHash: trajectory.Hash([]byte(req.System)), Tools: tools, Defenses: []trajectory.DefenseName{},
		Tags: tags,
	}
	if t.open != nil {
		t.link(s, req, start)
	}
	s.sink.Emit(0, start)
}

// PromptLinkMin is the shortest tool input text that links a subagent to
// the call that started it, so that a short value ("ls", a file name)
// never links two unrelated conversations.
const PromptLinkMin = 16

// StartedBy reports whether the tool call with input started the
// subagent whose first user message is first: whether one of the input's
// top-level string values, at least PromptLinkMin bytes long, is part of
// first. Claude Code's Agent and Task calls pass their prompt this way.
// The wire recorder and retrace eval's merge both link with it, so that a
// recording and an eval agree on which call started which subagent.
func StartedBy(first string, input json.RawMessage) bool {
	if len(first) < PromptLinkMin {
		return false
	}
	var in map[string]any
	if json.Unmarshal(input, &in) != nil {
		return false
	}
	for _, v := range in {
		if text, ok := v.(string); ok && len(text) >= PromptLinkMin && strings.Contains(first, text) {
			return true
		}
	}
	return false
}

// recentAnswered bounds how many answered calls a session keeps for
// linking (tsession.answered): a background subagent starts right after
// the call that launched it, so the most recent calls are enough, and
// the memory a long session holds stays bounded.
const recentAnswered = 64

// link finds the call that started s: a pending tool_use of another
// session whose input holds a text the first user message of req
// contains; else the most recent such call already answered, because a
// subagent run in the background (Claude Code's Agent or Task with
// run_in_background) has its call answered at once, before the
// subagent's first request arrives.
func (t *Transcript) link(s *tsession, req *llm.Request, start *trajectory.SessionStart) {
	first := firstUserText(req)
	if first == "" {
		return
	}
	found := func(p *tsession, id string) {
		if sid, ok := p.sink.(interface{ SessionID() string }); ok && sid.SessionID() != "" {
			start.ParentSession, start.ParentToolUseID = sid.SessionID(), id
		}
	}
	for _, p := range t.order {
		if p == s || !p.started {
			continue
		}
		ids := make([]string, 0, len(p.pending))
		for id := range p.pending {
			ids = append(ids, id)
		}
		slices.SortFunc(ids, func(a, b string) int { return p.pending[a].index - p.pending[b].index })
		for _, id := range ids {
			if StartedBy(first, p.pending[id].block.Input) {
				found(p, id)
				return
			}
		}
	}
	var best *tsession
	var bestID string
	var bestSeq int
	for _, p := range t.order {
		if p == s || !p.started {
			continue
		}
		for i := len(p.answered) - 1; i >= 0; i-- {
			a := p.answered[i]
			if a.seq > bestSeq && StartedBy(first, a.input) {
				best, bestID, bestSeq = p, a.id, a.seq
				break
			}
		}
	}
	if best != nil {
		found(best, bestID)
	}
}

// answeredUse is a tool_use whose result the client sent, kept for
// linking a background subagent; seq orders calls across sessions.
type answeredUse struct {
	id    string
	input json.RawMessage
	seq   int
}

// remember keeps use among s's recent answered calls.
func (t *Transcript) remember(s *tsession, use trajectory.ContentBlock) {
	t.answeredSeq++
	if len(s.answered) == recentAnswered {
		s.answered = append(s.answered[:0], s.answered[1:]...)
	}
	s.answered = append(s.answered, answeredUse{id: use.ID, input: use.Input, seq: t.answeredSeq})
}

// results emits the calls the agent answers in req, in the order of
// their tool_result blocks, and returns how many: the tool_results of the
// user messages after the last assistant message that answer a pending
// tool_use of the previous reply.
func (s *tsession) results(t *Transcript, req *llm.Request) int {
	from := len(req.Messages)
	for from > 0 && req.Messages[from-1].Role == trajectory.RoleUser {
		from--
	}
	n := 0
	for _, m := range req.Messages[from:] {
		for _, b := range m.Content {
			use, ok := s.pending[b.ToolUseID]
			if b.Type != trajectory.BlockToolResult || !ok {
				continue
			}
			delete(s.pending, b.ToolUseID)
			t.remember(s, use.block)
			n++
			s.call(use, b)
		}
	}
	return n
}

// call emits one call observed on the wire: tool_call, outcome, tool_end
// and tool_result. The outcome is the client's classifier's
// (tooloutcome), the one the importers use too, and the tool_result's
// text is the result as the classifier reads it (Codex's output without
// its header).
func (s *tsession) call(use pendingUse, res trajectory.ContentBlock) {
	ref := trajectory.ToolRef{ToolUseID: use.block.ID, Tool: use.block.Name, Observed: trajectory.ObservedWire}
	classify := s.classify
	if classify == nil {
		classify = tooloutcome.Anthropic
	}
	o := classify(tooloutcome.Result{Tool: use.block.Name, Input: use.block.Input, Text: res.Content, IsError: res.IsError})
	input := use.block.Input
	if len(input) == 0 {
		input = json.RawMessage(`{}`) // a tool_use cut by max_tokens: its input never parsed
	}
	s.calls++
	s.sink.Emit(s.turn, &trajectory.ToolCall{ToolRef: ref, Input: input, Index: use.index})
	if o.Failed() {
		s.failures++
		s.sink.Emit(s.turn, &trajectory.ToolFailure{ToolRef: ref, FailureKind: o.Kind, ErrorCode: o.Code})
	} else {
		s.sink.Emit(s.turn, &trajectory.ToolSuccess{ToolRef: ref})
	}
	// The call's own run time is on the wire only when the client states
	// it in the result (Codex's wall time); otherwise the batch's wall
	// time goes on the next request as batch_ms, never split among its
	// calls.
	end := &trajectory.ToolEnd{ToolRef: ref, DurationUnknown: !o.DurationKnown, DurationMs: o.DurationMs,
		OutputBytes: int64(len(o.Text)), Truncated: o.Truncated}
	if o.FullBytes > end.OutputBytes {
		end.OutputBytes = o.FullBytes
	}
	s.sink.Emit(s.turn, end)
	s.sink.Emit(s.turn, &trajectory.ToolResult{ToolRef: ref, Text: o.Text, IsError: res.IsError || o.Failed(), Display: trajectory.DisplayFull})
}

// Close ends each session whose conversation ended cleanly: the last
// reply finished its turn and no tool_use waits for a result. Otherwise
// the agent stopped mid-turn, and that trajectory honestly has no
// session_end. It reports whether every session got a session_end.
func (t *Transcript) Close() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	all := true
	for _, s := range t.order {
		if !s.started {
			continue
		}
		if len(s.flights) > 0 || len(s.pending) > 0 || s.last != trajectory.StopEndTurn {
			all = false
			continue
		}
		s.sink.Emit(s.turn, &trajectory.SessionEnd{Reason: trajectory.EndTurn, Turns: s.turn, Usage: s.usage,
			ToolCalls: s.calls, ToolFailures: s.failures})
		_ = s.flush() // a failure is the sink's, reported when it closes
	}
	return all
}
