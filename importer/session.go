package importer

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// session is one conversation read from a transcript, in the neutral form
// both parsers produce and write turns into trajectory events.
type session struct {
	client        string // "claude-code" or "codex"
	clientVersion string
	provider      string // a label: anthropic, openai, ...
	sourceID      string // the client's own session (or agent) id
	model         string
	cwd           string
	mode          trajectory.RunMode
	permMode      trajectory.PermissionMode
	system        string
	tools         []trajectory.ToolInfo
	start, end    time.Time
	// parentSource and parentToolUseID link a subagent to the session and
	// the tool call that started it.
	parentSource    string
	parentStart     time.Time
	parentToolUseID string
	agentType       string
	turns           []*turn
	// originFile is the client's file the session was read from; the
	// line fields below are lines of it (0: not from one line).
	originFile string
	// toolsUnknown: the transcript does not log the tool catalog.
	toolsUnknown bool
}

// turn is one model call: the messages sent since the previous one, and
// the response with the calls it asked for.
type turn struct {
	reqTime     time.Time
	maxTokens   int
	newMessages []trajectory.Message
	content     []trajectory.ContentBlock
	stopRaw     string
	stop        trajectory.StopReason
	usage       trajectory.Usage
	respTime    time.Time
	durationMs  float64
	calls       []*call
	// errors are the failed attempts of this call the transcript logs,
	// before the attempt that answered.
	errors []modelError
	// failed says no attempt answered: the turn is a model_request and
	// its model_errors, with no model_response.
	failed bool
	// reqLine and respLine are the transcript lines the request and the
	// response come from.
	reqLine, respLine int
}

// modelError is one failed model call attempt.
type modelError struct {
	ts           time.Time
	kind         trajectory.ModelErrorKind
	status       int
	attempt      int
	willRetry    bool
	retryAfterMs float64
	line         int
}

// call is one tool_use of a response and what the transcript says became of it.
type call struct {
	id, name string
	input    json.RawMessage
	index    int
	result   *result
	line     int
	// raw is the input as the transcript holds it, for the classifier
	// (input is made an object for the contract).
	raw json.RawMessage
}

// result is a tool call's outcome as the transcript shows it.
type result struct {
	text    string
	isError bool
	ts      time.Time
	// perm is the permission decision the transcript records, if any.
	perm        *permission
	failureKind trajectory.FailureKind // when isError or perm denies
	errorCode   string
	// notRun is set when the transcript shows the client never ran the
	// call (a command it refused).
	notRun bool
	// durationMs is the tool's own run time, when the transcript states it.
	durationMs    float64
	durationKnown bool
	// truncated says the client cut the output the model got; fullBytes
	// is the whole output's size when the transcript states it.
	truncated bool
	fullBytes int64
	line      int
}

// permission is a decision the transcript records for a call.
type permission struct {
	allow  bool
	source trajectory.PermissionSource
	step   trajectory.ChainStep
	rule   string
}

// sessionID returns the retrace session id of an imported session: the
// start time and four bytes of a hash of the client and its own id, so the
// same transcript always gets the same id (imports are idempotent).
func (s *session) sessionID() string {
	sum := sha256.Sum256([]byte(s.client + "\x00" + s.sourceID))
	return recorder.SessionID(s.start, [4]byte(sum[:4]))
}

// Outcome says what importing one session did to the runs directory.
type Outcome string

// The outcomes of writing one imported session.
const (
	// Imported: the session was not in the runs directory and now is.
	Imported Outcome = "imported"
	// Unchanged: the runs directory already held exactly this session.
	Unchanged Outcome = "unchanged"
	// Updated: the transcript grew (or this build maps it differently)
	// since it was imported; the session's file was replaced.
	Updated Outcome = "updated"
	// Kept: the runs directory holds a longer import of this session (the
	// transcript read now is a shorter copy: a backup taken earlier, a
	// copy that lost its end), and it was left as it is, since replacing
	// it would lose events.
	Kept Outcome = "kept"
)

// write records s into runsDir (WriteSession).
func (s *session) write(runsDir string) (string, Outcome, error) {
	return WriteSession(runsDir, s.sessionID(), s.emit)
}

// WriteSession records the session id into runsDir through the recorder,
// so redaction and the recorder's fsync hold; emit writes its events,
// calling at with each event's time from the source before the event
// (the recorder's clock never goes back). It writes into a staging
// directory beside runsDir first and then renames the file into place, so
// a reader never sees half an import, and importing the same source twice
// leaves one file: Unchanged when the bytes are the same, Updated when
// they differ, and Kept, the file left as it is, when the new session has
// fewer events than the one imported before. Every importer (transcripts,
// OTLP traces) writes through it.
func WriteSession(runsDir, id string, emit func(sink trajectory.Sink, at func(time.Time))) (string, Outcome, error) {
	if err := os.MkdirAll(runsDir, 0o700); err != nil {
		return "", "", fmt.Errorf("cannot create runs directory %s: %w", runsDir, err)
	}
	stage, err := os.MkdirTemp(filepath.Dir(filepath.Clean(runsDir)), ".retrace-import-")
	if err != nil {
		return "", "", fmt.Errorf("cannot create a staging directory beside %s: %w", runsDir, err)
	}
	defer os.RemoveAll(stage)
	var now time.Time
	rec, err := recorder.Create(stage, recorder.Options{SessionID: id, Clock: func() time.Time { return now }})
	if err != nil {
		return "", "", err
	}
	emit(rec, func(t time.Time) {
		if t.After(now) {
			now = t
		}
	})
	st, err := rec.Close()
	if err != nil {
		return "", "", err
	}
	if st.FirstError != nil {
		return "", "", st.FirstError
	}
	staged := rec.Path()
	target := filepath.Join(runsDir, id+trajectory.Ext)
	outcome := Imported
	if old, err := os.ReadFile(target); err == nil {
		fresh, err := os.ReadFile(staged)
		if err != nil {
			return "", "", err
		}
		if bytes.Equal(old, fresh) {
			return target, Unchanged, nil
		}
		if bytes.Count(fresh, []byte{'\n'}) < bytes.Count(old, []byte{'\n'}) {
			// Fewer events: a shorter copy of the source (an earlier
			// backup, one that lost its end, another file of the same
			// session read after the longer one), not a grown one.
			return target, Kept, nil
		}
		outcome = Updated
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", "", err
	}
	if err := os.Rename(staged, target); err != nil {
		return "", "", fmt.Errorf("cannot move the imported session into %s: %w", runsDir, err)
	}
	return target, outcome, nil
}

// emit writes the session's events; at sets the clock to an event's time
// from the transcript before the event is emitted (never backwards).
func (s *session) emit(sink trajectory.Sink, at func(time.Time)) {
	at(s.start)
	tags := map[string]string{
		"source":         "import",
		"client":         s.client,
		"client_version": s.clientVersion,
		"source_session": s.sourceID,
	}
	// A subagent is linked to its parent in session_start's own fields,
	// as mock serve --record links one.
	var parentSession, parentCall string
	if s.parentSource != "" {
		parent := session{client: s.client, sourceID: s.parentSource, start: s.parentStart}
		parentSession, parentCall = parent.sessionID(), s.parentToolUseID
	}
	if s.agentType != "" {
		tags["agent_type"] = s.agentType
	}
	for k, v := range tags {
		if v == "" {
			delete(tags, k)
		}
	}
	systemHash := trajectory.Hash([]byte(s.system))
	names := make([]string, 0, len(s.tools))
	for _, t := range s.tools {
		names = append(names, t.Name)
	}
	namesJSON, _ := json.Marshal(names)
	toolsHash := trajectory.Hash(namesJSON)
	cfg, _ := json.Marshal([]string{s.client, s.clientVersion, s.model, string(s.permMode), systemHash, toolsHash})
	tools := s.tools
	if tools == nil {
		tools = []trajectory.ToolInfo{}
	}
	model := s.model
	if model == "" {
		model = "unknown"
	}
	sink.Emit(0, &trajectory.SessionStart{
		HarnessVersion: s.client + " " + s.clientVersion, Provider: s.provider, Model: model,
		Mode: s.mode, PermissionMode: s.permMode, ConfigHash: trajectory.Hash(cfg),
		SystemPromptHash: systemHash, SystemPrompt: s.system, Tools: tools,
		Defenses: []trajectory.DefenseName{}, Workspace: s.cwd, Tags: tags,
		ParentSession: parentSession, ParentToolUseID: parentCall,
		OriginFile: s.originFile, ToolsUnknown: s.toolsUnknown,
	})
	var (
		hashes   []string
		conv     trajectory.Conversation
		total    trajectory.Usage
		calls    int
		failures int
		last     *turn
	)
	for i, t := range s.turns {
		n := i + 1
		at(t.reqTime)
		for _, m := range t.newMessages {
			b, _ := json.Marshal(m)
			hashes = append(hashes, trajectory.Hash(b))
		}
		req := &trajectory.ModelRequest{
			SystemHash: systemHash, ToolsHash: toolsHash, ToolNames: names,
			NewMessages: t.newMessages, MaxTokens: t.maxTokens, Stream: true, OriginLine: t.reqLine,
		}
		// The rebuilt conversation only grows: every request keeps the
		// whole previous one.
		conv.Encode(req, hashes)
		if i == 0 {
			req.System = s.system
		}
		if req.NewMessages == nil {
			req.NewMessages = []trajectory.Message{}
		}
		sink.Emit(n, req)
		for _, e := range t.errors {
			at(e.ts)
			sink.Emit(n, &trajectory.ModelError{ErrorKind: e.kind, StatusCode: e.status, Attempt: max(e.attempt, 1),
				WillRetry: e.willRetry, RetryAfterMs: e.retryAfterMs, OriginLine: e.line})
		}
		if t.failed {
			// No attempt answered: the client gave up on the request.
			last = t
			continue
		}
		at(t.respTime)
		content := t.content
		if content == nil {
			content = []trajectory.ContentBlock{}
		}
		sink.Emit(n, &trajectory.ModelResponse{
			Content: content, StopReason: t.stop, StopReasonRaw: t.stopRaw,
			Usage: t.usage, DurationMs: t.durationMs, OriginLine: t.respLine,
		})
		b, _ := json.Marshal(trajectory.Message{Role: trajectory.RoleAssistant, Content: content})
		hashes = append(hashes, trajectory.Hash(b))
		addUsage(&total, t.usage)
		for _, c := range t.calls {
			calls++
			if s.emitCall(sink, n, c, at) {
				failures++
			}
		}
		last = t
	}
	at(s.end)
	reason := trajectory.EndAborted
	switch {
	case last == nil:
	case last.failed:
		reason = trajectory.EndError
	case last.stop == trajectory.StopMaxTokens:
		reason = trajectory.EndMaxTokens
	case last.stop == trajectory.StopRefusal:
		reason = trajectory.EndRefused
	case last.stop == trajectory.StopEndTurn:
		reason = trajectory.EndTurn
	}
	sink.Emit(len(s.turns), &trajectory.SessionEnd{
		Reason: reason, Turns: len(s.turns), Usage: total, ToolCalls: calls, ToolFailures: failures,
		DurationMs: max(trajectory.Millis(s.end.Sub(s.start)), 0),
	})
}

// emitCall writes one call's events and reports whether it failed. The
// tool_call and its outcome are inferred from the tool_use block and its
// result; the permission decision and the tool_result are what the
// transcript states. A call whose result the transcript lacks (the session
// was cut off) ends as aborted, with an empty error tool_result marked
// inferred.
func (s *session) emitCall(sink trajectory.Sink, turn int, c *call, at func(time.Time)) bool {
	line := c.line
	ref := func(o trajectory.Observed) trajectory.ToolRef {
		return trajectory.ToolRef{ToolUseID: c.id, Tool: c.name, Observed: o, OriginLine: line}
	}
	input := c.input
	if len(input) == 0 || !json.Valid(input) {
		input = json.RawMessage(`{}`)
	}
	sink.Emit(turn, &trajectory.ToolCall{ToolRef: ref(trajectory.ObservedInferred), Input: input, Index: c.index})
	r := c.result
	if r == nil {
		// The contract wants every tool_use answered; the inferred empty
		// error result says that none was sent, not what one said.
		sink.Emit(turn, &trajectory.ToolFailure{ToolRef: ref(trajectory.ObservedInferred), FailureKind: trajectory.FailureAborted})
		sink.Emit(turn, &trajectory.ToolEnd{ToolRef: ref(trajectory.ObservedInferred), DurationUnknown: true})
		sink.Emit(turn, &trajectory.ToolResult{ToolRef: ref(trajectory.ObservedInferred), IsError: true, Display: trajectory.DisplayHidden})
		return true
	}
	at(r.ts)
	line = r.line
	if p := r.perm; p != nil {
		d := trajectory.PermissionDecision{ToolRef: ref(trajectory.ObservedTranscript), Source: p.source, Step: p.step, Rule: p.rule}
		if p.allow {
			sink.Emit(turn, &trajectory.PermissionAllow{PermissionDecision: d})
		} else {
			sink.Emit(turn, &trajectory.PermissionDeny{PermissionDecision: d})
		}
	}
	failed := r.failureKind != "" || r.isError || (r.perm != nil && !r.perm.allow)
	if failed {
		kind := r.failureKind
		if kind == "" {
			kind = trajectory.FailureToolError
		}
		sink.Emit(turn, &trajectory.ToolFailure{ToolRef: ref(trajectory.ObservedInferred), FailureKind: kind, ErrorCode: r.errorCode})
	} else {
		sink.Emit(turn, &trajectory.ToolSuccess{ToolRef: ref(trajectory.ObservedInferred)})
	}
	end := &trajectory.ToolEnd{ToolRef: ref(trajectory.ObservedInferred), OutputBytes: max(int64(len(r.text)), r.fullBytes), Truncated: r.truncated}
	switch {
	case failed && (r.notRun || r.failureKind.NeverRuns()):
		// A call refused before its tool started has no duration at all.
		end.NotRun = true
	case r.durationKnown:
		end.ToolRef.Observed = trajectory.ObservedTranscript
		end.DurationMs = r.durationMs
	default:
		end.DurationUnknown = true
	}
	sink.Emit(turn, end)
	// An unknown outcome is no error the model was shown.
	isError := r.isError || (failed && r.failureKind != trajectory.FailureUnknown)
	sink.Emit(turn, &trajectory.ToolResult{ToolRef: ref(trajectory.ObservedTranscript), Text: r.text, IsError: isError, Display: trajectory.DisplayFull})
	return failed
}

func addUsage(total *trajectory.Usage, u trajectory.Usage) {
	total.InputTokens += u.InputTokens
	total.OutputTokens += u.OutputTokens
	total.CacheReadTokens += u.CacheReadTokens
	total.CacheCreationTokens += u.CacheCreationTokens
}

// normaliseStop maps a provider's stop reason onto the contract's whitelist.
func normaliseStop(raw string) trajectory.StopReason {
	switch raw {
	case "":
		return trajectory.StopMissing
	case "tool_use", "end_turn", "max_tokens", "stop_sequence", "refusal":
		return trajectory.StopReason(raw)
	}
	return trajectory.StopUnknown
}

// errorKind classifies a failed model call by its HTTP status, as the
// runtime's clients do; no status means the connection failed.
func errorKind(status int) trajectory.ModelErrorKind {
	switch {
	case status == 0:
		return trajectory.ModelConnection
	case status == 429:
		return trajectory.ModelRateLimited
	case status == 529:
		return trajectory.ModelOverloaded
	case status == 401 || status == 403:
		return trajectory.ModelAuth
	case status >= 500:
		return trajectory.ModelServerError
	}
	return trajectory.ModelBadRequest
}
