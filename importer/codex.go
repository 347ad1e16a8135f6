package importer

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/retrace-dev/retrace/tooloutcome"
	"github.com/retrace-dev/retrace/trajectory"
)

// cxLine is one line of a Codex rollout file.
type cxLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

// cxKnown lists the line types of Codex 0.171 rollouts the importer knows.
var cxKnown = map[string]bool{
	"session_meta": true, "response_item": true, "event_msg": true, "turn_context": true,
	"token_usage_record": true, "world_state": true, "compacted": true,
}

// cxPayload holds the payload fields the importer reads, of every line type.
type cxPayload struct {
	Type string `json:"type"`
	// session_meta
	ID               string `json:"id"`
	Cwd              string `json:"cwd"`
	CLIVersion       string `json:"cli_version"`
	Originator       string `json:"originator"`
	BaseInstructions *struct {
		Text string `json:"text"`
	} `json:"base_instructions"`
	// turn_context
	Model          string `json:"model"`
	ApprovalPolicy string `json:"approval_policy"`
	SandboxPolicy  *struct {
		Type string `json:"type"`
	} `json:"sandbox_policy"`
	// response_item
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Summary   json.RawMessage `json:"summary"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	Action    json.RawMessage `json:"action"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	// token_usage_record
	Usage *cxUsage `json:"usage"`
	// event_msg
	Info *struct {
		Last *cxUsage `json:"last_token_usage"`
	} `json:"info"`
	Item  *cxItem `json:"item"`
	Error *struct {
		Message        string `json:"message"`
		CodexErrorInfo string `json:"codex_error_info"`
	} `json:"error"`
	ExitCode *int       `json:"exit_code"`
	Duration *cxDuraton `json:"duration"`
}

type cxUsage struct {
	InputTokens  int64 `json:"input_tokens"`
	CachedInput  int64 `json:"cached_input_tokens"`
	CacheWrite   int64 `json:"cache_write_input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

func (u *cxUsage) usage() trajectory.Usage {
	// Codex's input_tokens include the cached ones; the contract's do not.
	return trajectory.Usage{InputTokens: max(u.InputTokens-u.CachedInput-u.CacheWrite, 0), OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CachedInput, CacheCreationTokens: u.CacheWrite}
}

type cxDuraton struct {
	Secs  int64 `json:"secs"`
	Nanos int64 `json:"nanos"`
}

// cxItem is the item of an item_completed event.
type cxItem struct {
	Type     string     `json:"type"`
	ID       string     `json:"id"`
	Status   string     `json:"status"`
	ExitCode *int       `json:"exit_code"`
	Duration *cxDuraton `json:"duration"`
}

// cxExec is what Codex's own events say about one command it ran.
type cxExec struct {
	exitCode *int
	duration *cxDuraton
}

type cxState struct {
	s         *session
	cur       *turn
	lastInput time.Time
	pending   []trajectory.ContentBlock
	calls     map[string]*call
	execs     map[string]cxExec
	usageRecs bool
	line      int // the line being read
	inputLine int // the line of the last input item
}

// parseCodex reads one Codex rollout file.
func parseCodex(fr *fileReader) ([]*session, error) {
	st := &cxState{
		s: &session{client: string(Codex), provider: "openai", mode: trajectory.ModeInteractive, permMode: trajectory.PermDefault,
			originFile: fr.path, toolsUnknown: true},
		calls: map[string]*call{},
		execs: map[string]cxExec{},
	}
	err := fr.lines(fr.path, func(line int, b []byte) error {
		var l cxLine
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("not a JSON object: %v", err)
		}
		if !cxKnown[l.Type] {
			fr.countUnknown(l.Type)
			return nil
		}
		fr.records++
		ts, err := parseTime(l.Timestamp)
		if err != nil {
			return err
		}
		var p cxPayload
		if err := json.Unmarshal(l.Payload, &p); err != nil {
			return fmt.Errorf("%s: payload: %v", l.Type, err)
		}
		st.line = line
		return st.read(fr, l.Type, &p, ts)
	})
	if err != nil {
		return nil, err
	}
	st.close()
	st.finish()
	if st.s.sourceID == "" && fr.records > 0 {
		return nil, fmt.Errorf("%s: %w: no session_meta line names the session", fr.path, ErrNotTranscript)
	}
	if st.s.start.IsZero() && fr.records > 0 {
		return nil, fmt.Errorf("%s: %w: no line has a timestamp, so the session cannot be placed in time", fr.path, ErrNotTranscript)
	}
	return []*session{st.s}, nil
}

func (st *cxState) read(fr *fileReader, typ string, p *cxPayload, ts time.Time) error {
	s := st.s
	if !ts.IsZero() {
		if s.start.IsZero() || ts.Before(s.start) {
			s.start = ts
		}
		if ts.After(s.end) {
			s.end = ts
		}
	}
	switch typ {
	case "session_meta":
		if s.sourceID == "" {
			s.sourceID, s.cwd, s.clientVersion = p.ID, p.Cwd, p.CLIVersion
			if p.Originator == "codex_exec" {
				s.mode = trajectory.ModeHeadless
			}
			if p.BaseInstructions != nil {
				s.system = p.BaseInstructions.Text
			}
		}
	case "turn_context":
		if p.Model != "" {
			s.model = p.Model
		}
		if p.ApprovalPolicy == "never" && p.SandboxPolicy != nil && p.SandboxPolicy.Type == "danger-full-access" {
			s.permMode = trajectory.PermBypass
		}
	case "token_usage_record":
		st.usageRecs = true
		if p.Usage != nil {
			t := st.cur
			if t == nil && len(s.turns) > 0 {
				t = s.turns[len(s.turns)-1]
			}
			if t != nil {
				t.usage = p.Usage.usage()
				t.respTime = ts
			}
		}
		st.close()
	case "event_msg":
		return st.event(p, ts)
	case "response_item":
		return st.item(fr, p, ts)
	}
	return nil
}

func (st *cxState) event(p *cxPayload, ts time.Time) error {
	switch p.Type {
	case "token_count":
		if !st.usageRecs && p.Info != nil && p.Info.Last != nil && len(st.s.turns) > 0 {
			t := st.s.turns[len(st.s.turns)-1]
			if t.usage == (trajectory.Usage{}) {
				t.usage = p.Info.Last.usage()
			}
		}
	case "item_completed":
		if it := p.Item; it != nil && it.Type == "CommandExecution" && it.ID != "" {
			st.execs[it.ID] = cxExec{exitCode: it.ExitCode, duration: it.Duration}
		}
	case "exec_command_end":
		if p.CallID != "" {
			st.execs[p.CallID] = cxExec{exitCode: p.ExitCode, duration: p.Duration}
		}
	case "task_complete", "turn_aborted":
		st.close()
		if p.Error != nil {
			st.taskError(p, ts)
		}
	}
	return nil
}

// open returns the response being read, starting one at ts if none is.
func (st *cxState) open(ts time.Time) *turn {
	if st.cur != nil {
		return st.cur
	}
	t := &turn{reqTime: st.lastInput, respTime: ts, reqLine: st.inputLine, respLine: st.line}
	if t.reqTime.IsZero() {
		t.reqTime = ts
	}
	if len(st.pending) > 0 {
		t.newMessages = []trajectory.Message{{Role: trajectory.RoleUser, Content: st.pending}}
		st.pending = nil
	}
	st.cur = t
	st.s.turns = append(st.s.turns, t)
	return t
}

// close ends the response being read. Codex records no stop reason: a
// response with function calls stopped for them, one without ended its turn.
func (st *cxState) close() {
	t := st.cur
	if t == nil {
		return
	}
	st.cur = nil
	t.stop = trajectory.StopEndTurn
	if len(t.calls) > 0 {
		t.stop = trajectory.StopToolUse
	}
}

func (st *cxState) input(ts time.Time) {
	st.close()
	st.lastInput, st.inputLine = ts, st.line
}

// taskError records how a task that ended with an error ended: a reply
// cut at the output limit is the last response's max_tokens stop; any
// other error is a request that failed for good, a turn with a
// model_error and no response (Codex logs no status, only its kind).
func (st *cxState) taskError(p *cxPayload, ts time.Time) {
	if strings.Contains(p.Error.Message, "max_output_tokens") {
		if n := len(st.s.turns); n > 0 && !st.s.turns[n-1].failed {
			st.s.turns[n-1].stop, st.s.turns[n-1].stopRaw = trajectory.StopMaxTokens, "max_output_tokens"
		}
		return
	}
	t := &turn{reqTime: st.lastInput, respTime: ts, failed: true, reqLine: st.inputLine, respLine: st.line}
	if t.reqTime.IsZero() {
		t.reqTime = ts
	}
	if len(st.pending) > 0 {
		t.newMessages = []trajectory.Message{{Role: trajectory.RoleUser, Content: st.pending}}
		st.pending = nil
	}
	t.errors = []modelError{{ts: ts, kind: cxErrorKind(p.Error.CodexErrorInfo), attempt: 1, line: st.line}}
	st.s.turns = append(st.s.turns, t)
}

// cxErrorKind maps the codex_error_info of a task's error onto the
// contract's kinds.
func cxErrorKind(info string) trajectory.ModelErrorKind {
	switch info {
	case "usage_limit_exceeded", "too_many_requests":
		return trajectory.ModelRateLimited
	case "unauthorized":
		return trajectory.ModelAuth
	case "bad_request", "context_window_exceeded":
		return trajectory.ModelBadRequest
	case "http_connection_failed", "response_stream_connection_failed", "response_stream_disconnected":
		return trajectory.ModelConnection
	}
	return trajectory.ModelServerError
}

func (st *cxState) item(fr *fileReader, p *cxPayload, ts time.Time) error {
	switch p.Type {
	case "message":
		text := cxText(p.Content)
		switch p.Role {
		case "assistant":
			t := st.open(ts)
			t.content = append(t.content, trajectory.ContentBlock{Type: trajectory.BlockText, Text: text})
			t.respTime = ts
		case "developer", "system":
			if len(st.s.turns) == 0 && st.cur == nil {
				st.s.system = strings.TrimPrefix(st.s.system+"\n"+text, "\n")
				return nil
			}
			fallthrough
		default:
			st.input(ts)
			st.pending = append(st.pending, trajectory.ContentBlock{Type: trajectory.BlockText, Text: text})
		}
	case "reasoning":
		t := st.open(ts)
		t.content = append(t.content, trajectory.ContentBlock{Type: trajectory.BlockThinking, Text: cxText(p.Summary)})
	case "function_call", "custom_tool_call", "local_shell_call":
		if p.CallID == "" {
			return fmt.Errorf("response_item %s has no call_id", p.Type)
		}
		name, input := p.Name, cxInput(p)
		if p.Type == "local_shell_call" {
			name = "local_shell"
		}
		if !trajectory.IsToolName(name) {
			return fmt.Errorf("response_item %s: tool name %q is not a tool name", p.Type, clip(name))
		}
		if st.calls[p.CallID] != nil {
			return fmt.Errorf("response_item %s: call_id %q repeats an earlier call; the line is skipped", p.Type, clip(p.CallID))
		}
		t := st.open(ts)
		t.respTime = ts
		t.content = append(t.content, trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: p.CallID, Name: name, Input: input})
		c := &call{id: p.CallID, name: name, input: input, index: len(t.calls), line: st.line, raw: input}
		t.calls = append(t.calls, c)
		st.calls[p.CallID] = c
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
		if p.CallID == "" {
			return fmt.Errorf("response_item %s has no call_id", p.Type)
		}
		st.input(ts)
		out := cxOutput(p.Output)
		st.pending = append(st.pending, trajectory.ContentBlock{Type: trajectory.BlockToolResult, ToolUseID: p.CallID, Content: out})
		if c := st.calls[p.CallID]; c != nil && c.result == nil {
			c.result = &result{text: out, ts: ts, line: st.line}
		}
	default:
		fr.countUnknown("response_item:" + p.Type)
	}
	return nil
}

// cxExecTools are Codex's tools that run a command and report its exit.
var cxExecTools = map[string]bool{"exec_command": true, "shell": true, "shell_command": true, "local_shell": true}

// finish gives each call its outcome: tooloutcome's reading of the output
// (the one mock serve --record gives the same output on the wire), with
// the header's wall time as the call's duration and only the text after
// "Output:" as the result. Where the output alone leaves the outcome
// unknown, what only the rollout knows decides: the exit code of Codex's
// own completion event, or, for a command tool with neither an exit code
// nor a completion event, that the command never ran (not_run). The
// events' own duration (a few microseconds for a command that ran for
// seconds) is not the call's time and is not used.
func (st *cxState) finish() {
	for id, c := range st.calls {
		r := c.result
		if r == nil {
			continue
		}
		o := tooloutcome.Codex(tooloutcome.Result{Tool: c.name, Input: c.raw, Text: r.text})
		r.text, r.truncated = o.Text, o.Truncated
		r.durationMs, r.durationKnown = o.DurationMs, o.DurationKnown
		r.failureKind, r.errorCode = o.Kind, o.Code
		r.isError = o.Failed() && o.Kind != trajectory.FailureUnknown
		if o.Kind == trajectory.FailurePermissionDenied {
			// Codex's own refusal (its approval policy): a denial with no
			// rule named; headless, nobody could have been asked.
			r.perm = &permission{source: trajectory.SourceMode, step: trajectory.StepDefault}
			if st.s.mode == trajectory.ModeHeadless {
				r.perm.source = trajectory.SourceNonInteractive
			}
		}
		if o.Kind != trajectory.FailureUnknown {
			continue
		}
		e, ran := st.execs[id]
		switch {
		case ran && e.exitCode != nil && *e.exitCode != 0:
			r.failureKind, r.errorCode, r.isError = trajectory.FailureToolError, "exit:"+strconv.Itoa(*e.exitCode), true
		case ran && e.exitCode != nil:
			r.failureKind, r.errorCode = "", ""
		case !ran && cxExecTools[c.name]:
			// No header, no completion event: the command never ran
			// (Codex refused it in a wording tooloutcome does not know).
			r.failureKind, r.errorCode, r.isError = trajectory.FailureToolError, "not_run", true
			r.notRun = true
		}
	}
	// A rollout does not log the tool catalog: session_start says so
	// (tools_unknown) instead of a list made up from the calls seen.
	st.s.tools = []trajectory.ToolInfo{}
}

// cxText joins the text of a message's content parts (input_text,
// output_text) or of a reasoning summary.
func cxText(raw json.RawMessage) string {
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// cxInput returns a call's input as a JSON object: a function call's
// arguments when they are one, else the raw text under "arguments"; a
// custom tool's free-form input under "input"; a local shell's action.
func cxInput(p *cxPayload) json.RawMessage {
	switch p.Type {
	case "function_call":
		raw := json.RawMessage(p.Arguments)
		if len(strings.TrimSpace(p.Arguments)) > 0 && strings.TrimSpace(p.Arguments)[0] == '{' && json.Valid(raw) {
			return raw
		}
		b, _ := json.Marshal(map[string]string{"arguments": p.Arguments})
		return b
	case "local_shell_call":
		if len(p.Action) > 0 && p.Action[0] == '{' && json.Valid(p.Action) {
			b, _ := json.Marshal(map[string]json.RawMessage{"action": p.Action})
			return b
		}
	}
	var s string
	if json.Unmarshal(p.Input, &s) != nil {
		s = string(p.Input)
	}
	b, _ := json.Marshal(map[string]string{"input": s})
	return b
}

// cxOutput returns a call output's text: a string as is, an object's
// "output" or "content" text, anything else as its JSON.
func cxOutput(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Output  string          `json:"output"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil {
		if o.Output != "" {
			return o.Output
		}
		if t := cxText(o.Content); t != "" {
			return t
		}
	}
	return string(raw)
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
