package trajectory

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

// ViolationKind classifies a broken invariant.
type ViolationKind string

// The invariant violations the Checker reports.
const (
	// ViolationSeq: seq does not start at 1, repeats, goes back or skips.
	ViolationSeq ViolationKind = "seq"
	// ViolationSession: the session id changes within a file.
	ViolationSession ViolationKind = "session"
	// ViolationTurn: the turn number goes back.
	ViolationTurn ViolationKind = "turn"
	// ViolationSessionStart: no session_start first, or more than one; a
	// workspace_snapshot after a model_request, or a second snapshot.
	ViolationSessionStart ViolationKind = "session_start"
	// ViolationSessionEnd: an event after session_end, or a second one.
	ViolationSessionEnd ViolationKind = "session_end"
	// ViolationTotals: session_end totals disagree with the events.
	ViolationTotals ViolationKind = "totals"
	// ViolationModelOrder: a model_response without a model_request before it.
	ViolationModelOrder ViolationKind = "model_order"
	// ViolationToolCall: a tool_call that is repeated or matches no tool_use.
	ViolationToolCall ViolationKind = "tool_call"
	// ViolationOrphan: a tool event for a tool_use_id that has no tool_call.
	ViolationOrphan ViolationKind = "orphan"
	// ViolationOutcome: a call without exactly one tool_success or tool_failure.
	ViolationOutcome ViolationKind = "outcome"
	// ViolationToolEnd: a call without exactly one tool_end after its outcome.
	ViolationToolEnd ViolationKind = "tool_end"
	// ViolationToolResult: a tool_use without exactly one tool_result before
	// the next model_request, or a tool_result for no pending tool_use.
	ViolationToolResult ViolationKind = "tool_result"
	// ViolationMessages: a v2 model_request keeps more messages than the
	// previous request had, or its prefix_hash is not the chain of the
	// session's message hashes (a request lost, reordered or edited).
	ViolationMessages ViolationKind = "messages"
	// ViolationRan: a call that did not run has a duration, or a call
	// that succeeded is marked not_run (see Ran): a call that did not run
	// is never a latency sample.
	ViolationRan ViolationKind = "ran"
	// ViolationErrorCode: a tool_failure's error_code is outside the
	// closed format (IsErrorCode).
	ViolationErrorCode ViolationKind = "error_code"
)

// Violation is one broken invariant, located at the line that shows it.
type Violation struct {
	File      string
	Line      int
	Seq       int64
	Kind      ViolationKind
	ToolUseID string
	Msg       string
}

// Error renders the violation as "file:line: msg (invariant kind)".
func (v Violation) Error() string {
	return fmt.Sprintf("%s:%d: %s (invariant: %s)", v.File, v.Line, v.Msg, v.Kind)
}

type callState struct {
	line     int
	tool     string
	outcomes int
	ends     int
	// succeeded and kind are the call's outcome: a tool_success, or the
	// failure kind of its tool_failure.
	succeeded bool
	kind      FailureKind
	code      string
}

type useState struct {
	results  int
	resolved bool // by a defense that took the tool_use out of the flow
}

// Checker verifies the invariants of one session's event stream (one file):
// seq strictly increasing from 1 without gaps; one session_start first and
// at most one session_end last; every tool_call with exactly one
// tool_success or tool_failure and then exactly one tool_end; every tool_use
// of a model_response with exactly one tool_result before the next
// model_request, unless a defense_trigger naming it took it out of the flow
// (the empty-input retry and the truncated tool_use do). Feed it events in
// file order with Add, then call Finish.
type Checker struct {
	file         string
	n            int
	session      string
	lastSeq      int64
	lastTurn     int
	ended        bool
	endLine      int
	awaiting     bool // a model_request is waiting for its response
	requested    bool // a model_request was seen
	snapshot     bool // the workspace snapshot was recorded
	responseLine int
	uses         map[string]*useState
	useOrder     []string
	calls        map[string]*callState
	// streamed holds the tool_calls recorded while the reply they belong
	// to was still streaming (stream_offset_ms set), by id, until the
	// model_response that must hold their tool_uses.
	streamed      map[string]int
	toolCalls     int
	toolFailures  int
	violations    []Violation
	resync        bool // a line was unreadable: the next seq may jump
	sessionEnd    *SessionEnd
	sessionEndSeq int64
	conv          Conversation
	// convLost: a line was unreadable, so the chain of message hashes
	// cannot be followed past it and is no longer checked.
	convLost bool
}

// NewChecker returns a checker whose violations name file.
func NewChecker(file string) *Checker {
	return &Checker{file: file, calls: map[string]*callState{}, uses: map[string]*useState{}, streamed: map[string]int{}}
}

func (c *Checker) report(line int, seq int64, kind ViolationKind, id, format string, args ...any) {
	c.violations = append(c.violations, Violation{File: c.file, Line: line, Seq: seq, Kind: kind, ToolUseID: id, Msg: fmt.Sprintf(format, args...)})
}

// Add checks one event, read from the given line.
func (c *Checker) Add(line int, ev Event) {
	c.n++
	c.checkEnvelope(line, ev)
	switch p := ev.Payload.(type) {
	case *SessionStart:
		if c.n > 1 {
			c.report(line, ev.Seq, ViolationSessionStart, "", "second session_start; a file holds one session")
		}
		c.snapshot = c.snapshot || p.WorkspaceSnapshot != ""
	case *WorkspaceSnapshot:
		switch {
		case c.requested:
			c.report(line, ev.Seq, ViolationSessionStart, "", "workspace_snapshot after a model_request; the snapshot is part of the session's start")
		case c.snapshot:
			c.report(line, ev.Seq, ViolationSessionStart, "", "second workspace snapshot; a session starts from one")
		}
		c.snapshot = true
	case *ModelRequest:
		if _, err := c.conv.Next(p); err != nil && !c.convLost {
			c.report(line, ev.Seq, ViolationMessages, "", "%v", err)
		}
		c.closeUses(line, ev.Seq, "the next model_request")
		// Streamed calls of a reply that failed have no model_response;
		// their tool_use was never part of the conversation.
		clear(c.streamed)
		c.awaiting, c.requested = true, true
	case *ModelResponse:
		if !c.awaiting {
			c.report(line, ev.Seq, ViolationModelOrder, "", "model_response without a model_request before it")
		}
		c.awaiting = false
		c.closeUses(line, ev.Seq, "the next model_response")
		c.responseLine = line
		for _, b := range p.ToolUses() {
			if _, dup := c.uses[b.ID]; dup {
				c.report(line, ev.Seq, ViolationToolCall, b.ID, "tool_use id %s appears twice in one response", b.ID)
				continue
			}
			c.uses[b.ID] = &useState{}
			c.useOrder = append(c.useOrder, b.ID)
			if cs := c.calls[b.ID]; cs != nil && c.streamed[b.ID] > 0 && cs.tool != b.Name {
				c.report(line, ev.Seq, ViolationToolCall, b.ID, "tool_use %s names %q but the tool_call started while streaming (line %d) names %q", b.ID, b.Name, cs.line, cs.tool)
			}
		}
		c.checkStreamed(line, ev.Seq)
	case *ToolCall:
		c.toolCalls++
		if _, dup := c.calls[p.ToolUseID]; dup {
			c.report(line, ev.Seq, ViolationToolCall, p.ToolUseID, "second tool_call for %s", p.ToolUseID)
			return
		}
		switch _, ok := c.uses[p.ToolUseID]; {
		case p.StreamOffsetMs != nil && c.awaiting:
			// Started while the reply streamed: its model_response
			// comes later and must hold the tool_use (checkStreamed).
			c.streamed[p.ToolUseID] = line
		case p.StreamOffsetMs != nil:
			c.report(line, ev.Seq, ViolationToolCall, p.ToolUseID, "tool_call %s has stream_offset_ms but follows its model_response; only a call started while the reply streamed has it", p.ToolUseID)
		case !ok:
			c.report(line, ev.Seq, ViolationToolCall, p.ToolUseID, "tool_call %s matches no tool_use of the preceding model_response", p.ToolUseID)
		}
		c.calls[p.ToolUseID] = &callState{line: line, tool: p.Tool}
	case *HookRun:
		c.openCall(line, ev, p.ToolRef)
	case *PermissionAllow:
		c.openCall(line, ev, p.ToolRef)
	case *PermissionPrompt:
		c.openCall(line, ev, p.ToolRef)
	case *PermissionDeny:
		c.openCall(line, ev, p.ToolRef)
	case *ToolSuccess:
		if cs := c.outcome(line, ev, p.ToolRef); cs != nil {
			cs.succeeded = true
		}
	case *ToolFailure:
		c.toolFailures++
		if cs := c.outcome(line, ev, p.ToolRef); cs != nil {
			cs.kind, cs.code = p.FailureKind, p.ErrorCode
		}
		if p.ErrorCode != "" && !IsErrorCode(p.ErrorCode) {
			c.report(line, ev.Seq, ViolationErrorCode, p.ToolUseID, "error_code %q of %s is outside the closed format (%s)", p.ErrorCode, p.ToolUseID, ErrorCodeFormat)
		}
	case *ToolEnd:
		if cs := c.call(line, ev, p.ToolRef); cs != nil {
			switch {
			case p.NotRun && cs.succeeded:
				c.report(line, ev.Seq, ViolationRan, p.ToolUseID, "tool_end for %s has not_run but the call succeeded; a call that succeeded ran", p.ToolUseID)
			case StoppedBeforeStart(cs.kind, cs.code) && p.DurationMs > 0:
				c.report(line, ev.Seq, ViolationRan, p.ToolUseID, "tool_end for %s has duration_ms %g but the call failed with %s, which stops a call before its tool starts; a call that did not run has no duration (0, not_run)", p.ToolUseID, p.DurationMs, cs.kind)
			}
			switch {
			case cs.ends > 0:
				c.report(line, ev.Seq, ViolationToolEnd, p.ToolUseID, "second tool_end for %s", p.ToolUseID)
			case cs.outcomes == 0:
				c.report(line, ev.Seq, ViolationToolEnd, p.ToolUseID, "tool_end for %s before its tool_success or tool_failure", p.ToolUseID)
			}
			cs.ends++
		}
	case *ToolResult:
		u, ok := c.uses[p.ToolUseID]
		switch {
		case !ok:
			c.report(line, ev.Seq, ViolationToolResult, p.ToolUseID, "tool_result for %s, which is no pending tool_use of the preceding model_response", p.ToolUseID)
		case u.results > 0:
			c.report(line, ev.Seq, ViolationToolResult, p.ToolUseID, "second tool_result for %s", p.ToolUseID)
		}
		if ok {
			u.results++
		}
		if cs := c.calls[p.ToolUseID]; cs != nil && cs.ends == 0 {
			c.report(line, ev.Seq, ViolationToolResult, p.ToolUseID, "tool_result for %s before its tool_end", p.ToolUseID)
		}
	case *DefenseTrigger:
		if u, ok := c.uses[p.ToolUseID]; ok {
			u.resolved = true
		}
	case *SessionEnd:
		c.sessionEnd, c.sessionEndSeq, c.endLine = p, ev.Seq, line
	}
}

func (c *Checker) checkEnvelope(line int, ev Event) {
	if c.ended {
		c.report(line, ev.Seq, ViolationSessionEnd, "", "%s after session_end (line %d); session_end must be last", ev.Type(), c.endLine)
	}
	if ev.Type() == TypeSessionEnd {
		if c.ended {
			c.report(line, ev.Seq, ViolationSessionEnd, "", "second session_end")
		}
		c.ended = true
	}
	if c.n == 1 {
		c.session = ev.Session
		if ev.Type() != TypeSessionStart {
			c.report(line, ev.Seq, ViolationSessionStart, "", "first event is %s; a session starts with session_start", ev.Type())
		}
		if ev.Seq != 1 {
			c.report(line, ev.Seq, ViolationSeq, "", "seq starts at %d, want 1", ev.Seq)
		}
	} else {
		switch {
		case c.resync && ev.Seq > c.lastSeq:
		case ev.Seq <= c.lastSeq:
			c.report(line, ev.Seq, ViolationSeq, "", "seq %d after %d; seq must strictly increase", ev.Seq, c.lastSeq)
		case ev.Seq > c.lastSeq+1:
			c.report(line, ev.Seq, ViolationSeq, "", "seq jumps from %d to %d: %d events missing", c.lastSeq, ev.Seq, ev.Seq-c.lastSeq-1)
		}
		if ev.Session != c.session {
			c.report(line, ev.Seq, ViolationSession, "", "session %q differs from %q; a file holds one session", ev.Session, c.session)
		}
		if ev.Turn < c.lastTurn {
			c.report(line, ev.Seq, ViolationTurn, "", "turn %d after turn %d; turns never go back", ev.Turn, c.lastTurn)
		}
	}
	c.resync = false
	if ev.Seq > c.lastSeq {
		c.lastSeq = ev.Seq
	}
	c.lastTurn = max(c.lastTurn, ev.Turn)
}

// call returns the state of the call ev refers to, reporting an orphan.
func (c *Checker) call(line int, ev Event, ref ToolRef) *callState {
	cs := c.calls[ref.ToolUseID]
	if cs == nil {
		c.report(line, ev.Seq, ViolationOrphan, ref.ToolUseID, "%s for %s, which has no tool_call before it", ev.Type(), ref.ToolUseID)
		return nil
	}
	if cs.tool != ref.Tool {
		c.report(line, ev.Seq, ViolationOrphan, ref.ToolUseID, "%s names tool %q but the tool_call for %s (line %d) names %q", ev.Type(), ref.Tool, ref.ToolUseID, cs.line, cs.tool)
	}
	return cs
}

// openCall checks an event that belongs between a call's start and its end.
func (c *Checker) openCall(line int, ev Event, ref ToolRef) {
	if cs := c.call(line, ev, ref); cs != nil && cs.ends > 0 {
		c.report(line, ev.Seq, ViolationOrphan, ref.ToolUseID, "%s for %s after its tool_end", ev.Type(), ref.ToolUseID)
	}
}

// outcome checks a tool_success or tool_failure and returns the call's
// state, nil for an orphan.
func (c *Checker) outcome(line int, ev Event, ref ToolRef) *callState {
	cs := c.call(line, ev, ref)
	if cs != nil {
		if cs.outcomes > 0 {
			c.report(line, ev.Seq, ViolationOutcome, ref.ToolUseID, "%s for %s, which already has an outcome; a call gets exactly one tool_success or tool_failure", ev.Type(), ref.ToolUseID)
		}
		cs.outcomes++
	}
	return cs
}

// checkStreamed reports the tool_calls started while the reply streamed
// whose tool_use the reply's model_response does not hold.
func (c *Checker) checkStreamed(line int, seq int64) {
	ids := make([]string, 0, len(c.streamed))
	for id := range c.streamed {
		if _, ok := c.uses[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return c.streamed[ids[i]] < c.streamed[ids[j]] })
	for _, id := range ids {
		c.report(line, seq, ViolationToolCall, id, "tool_call %s (line %d) was started while the reply streamed, but the model_response holds no tool_use %s", id, c.streamed[id], id)
	}
	clear(c.streamed)
}

// closeUses reports the tool_uses of the last response that got no
// tool_result, at the event that closes the window.
func (c *Checker) closeUses(line int, seq int64, what string) {
	for _, id := range c.useOrder {
		if u := c.uses[id]; u.results == 0 && !u.resolved {
			c.report(line, seq, ViolationToolResult, id, "tool_use %s of the model_response at line %d got no tool_result before %s", id, c.responseLine, what)
		}
	}
	clear(c.uses)
	c.useOrder = c.useOrder[:0]
}

// Unreadable tells the checker that a line could not be decoded, so the
// seq it held is unknown: the next seq may jump without a violation being
// reported twice for one bad line.
func (c *Checker) Unreadable() { c.resync, c.convLost = true, true }

// Finish checks what can only be checked at the end of the stream and
// returns every violation found, in line order. A stream without
// session_end is not a violation (the session may still be running, or its
// process died), but it leaves calls unfinished that Finish cannot judge;
// Unended reports that case.
func (c *Checker) Finish() []Violation {
	if c.n == 0 {
		c.report(0, 0, ViolationSessionStart, "", "%v; %s", ErrEmpty, emptyHint)
	}
	if c.sessionEnd != nil {
		line, seq := c.endLine, c.sessionEndSeq
		c.closeUses(line, seq, "session_end")
		ids := make([]string, 0, len(c.calls))
		for id := range c.calls {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return c.calls[ids[i]].line < c.calls[ids[j]].line })
		for _, id := range ids {
			cs := c.calls[id]
			if cs.outcomes == 0 {
				c.report(cs.line, 0, ViolationOutcome, id, "tool_call %s never got a tool_success or tool_failure: the call was lost", id)
			}
			if cs.ends == 0 {
				c.report(cs.line, 0, ViolationToolEnd, id, "tool_call %s never got a tool_end", id)
			}
		}
		if c.sessionEnd.ToolCalls != c.toolCalls || c.sessionEnd.ToolFailures != c.toolFailures {
			c.report(line, seq, ViolationTotals, "", "session_end counts %d tool calls and %d failures; the events hold %d and %d",
				c.sessionEnd.ToolCalls, c.sessionEnd.ToolFailures, c.toolCalls, c.toolFailures)
		}
	}
	sort.SliceStable(c.violations, func(i, j int) bool { return c.violations[i].Line < c.violations[j].Line })
	return c.violations
}

// Unended reports whether the stream had events but no session_end.
func (c *Checker) Unended() bool { return c.n > 0 && c.sessionEnd == nil }

// MaxProblems is how many problems a FileReport keeps; past it only the
// count goes on, so a foreign file of a million lines stays readable.
const MaxProblems = 100

// FileReport is the result of validating one trajectory file.
type FileReport struct {
	File   string
	Events int
	// Problems are the lines that do not decode (*LineError) and the broken
	// invariants (Violation), in line order, at most MaxProblems of them.
	Problems []error
	// Omitted counts the problems past MaxProblems.
	Omitted  int
	Warnings []Warning
}

// ValidateFile decodes every line of a trajectory file and checks the
// invariants of its session. Only a file that cannot be opened or read is
// an error (a *FileError wrapping ErrUnreadable when it cannot be opened);
// everything wrong with its content is in the report.
func ValidateFile(path string) (FileReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return FileReport{File: path}, Unreadable(path, err)
	}
	defer f.Close()
	return ValidateStream(f, path)
}

// ValidateStream is ValidateFile for any reader; name is used in messages.
func ValidateStream(r io.Reader, name string) (FileReport, error) {
	rep := FileReport{File: name}
	dec := NewDecoder(r, name)
	chk := NewChecker(name)
	var lineErrs []error
	for {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var le *LineError
		if err != nil && !errors.As(err, &le) {
			return rep, err
		}
		if err != nil {
			lineErrs = append(lineErrs, err)
			if errors.Is(err, ErrUnsupportedVersion) {
				// One session, one version: the other lines would only repeat it.
				rep.Warnings = append(rep.Warnings, Warning{File: name, Line: dec.Line(), Msg: "the rest of the file was not read"})
				break
			}
			if ev.Payload == nil {
				chk.Unreadable()
				continue
			}
		}
		rep.Events++
		chk.Add(dec.Line(), ev)
	}
	rep.Warnings = dec.Warnings()
	if rep.Events == 0 && len(lineErrs) == 0 {
		// Not even a session_start: the metrics loader refuses the file
		// with the same error.
		rep.Problems = []error{Empty(name)}
		return rep, nil
	}
	violations := []Violation{}
	if rep.Events > 0 || len(lineErrs) == 0 {
		violations = chk.Finish()
	}
	if chk.Unended() {
		rep.Warnings = append(rep.Warnings, Warning{File: name, Line: dec.Line(),
			Msg: "no session_end: the session is still running or its process died; unfinished calls are not judged"})
	}
	rep.Problems = mergeByLine(lineErrs, violations)
	if len(rep.Problems) > MaxProblems {
		rep.Omitted = len(rep.Problems) - MaxProblems
		rep.Problems = rep.Problems[:MaxProblems]
	}
	return rep, nil
}

func mergeByLine(lineErrs []error, violations []Violation) []error {
	out := make([]error, 0, len(lineErrs)+len(violations))
	out = append(out, lineErrs...)
	for _, v := range violations {
		out = append(out, v)
	}
	sort.SliceStable(out, func(i, j int) bool { return problemLine(out[i]) < problemLine(out[j]) })
	return out
}

func problemLine(err error) int {
	var le *LineError
	if errors.As(err, &le) {
		return le.Line
	}
	var v Violation
	if errors.As(err, &v) {
		return v.Line
	}
	return 0
}
