package importer

import (
	"fmt"
	json "github.com/segmentio/encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/retrace-dev/retrace/tooloutcome"
	"github.com/retrace-dev/retrace/trajectory"
)

// ccRecord is one line of a Claude Code transcript, with the fields the
// importer reads; the others are ignored.
type ccRecord struct {
	Type               string          `json:"type"`
	IsSidechain        bool            `json:"isSidechain"`
	SessionID          string          `json:"sessionId"`
	AgentID            string          `json:"agentId"`
	Version            string          `json:"version"`
	Cwd                string          `json:"cwd"`
	PermissionMode     string          `json:"permissionMode"`
	Entrypoint         string          `json:"entrypoint"`
	Timestamp          string          `json:"timestamp"`
	Message            json.RawMessage `json:"message"`
	ToolUseResult      json.RawMessage `json:"toolUseResult"`
	PermissionDecision *ccPermission   `json:"permissionDecision"`
	ToolDenialKind     string          `json:"toolDenialKind"`
	RequestRef         string          `json:"requestRef"`
	IsAPIErrorMessage  bool            `json:"isApiErrorMessage"`
	Subtype            string          `json:"subtype"`
	// Error is an object with the status of a failed attempt (system
	// api_error records) or, on the synthetic assistant record of a
	// request that failed for good, a string such as "server_error".
	Error          json.RawMessage `json:"error"`
	APIErrorStatus int             `json:"apiErrorStatus"`
	RetryInMs      float64         `json:"retryInMs"`
	RetryAttempt   int             `json:"retryAttempt"`
	MaxRetries     int             `json:"maxRetries"`
	ID             string          `json:"id"`
	Params         *struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
	} `json:"params"`
	Shape *struct {
		System []struct {
			Text string `json:"text"`
		} `json:"system"`
		Tools []json.RawMessage `json:"tools"`
	} `json:"shape"`
}

// ccPermission is the permissionDecision of a tool result record.
type ccPermission struct {
	Decision   string `json:"decision"`
	Source     string `json:"source"`
	ReasonType string `json:"reasonType"`
	Rule       string `json:"rule"`
}

// ccMessage is the message of a user or assistant record.
type ccMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Model      string          `json:"model"`
	Content    json.RawMessage `json:"content"`
	StopReason string          `json:"stop_reason"`
	Usage      *struct {
		InputTokens         int64 `json:"input_tokens"`
		OutputTokens        int64 `json:"output_tokens"`
		CacheReadTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

// ccBlock is one content block of a message.
type ccBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// ccKnown lists the record types of Claude Code 2.1 transcripts (and a
// few of earlier versions) that the importer knows; it reads user,
// assistant, api-request and api-request-shape and skips the others on
// purpose. Any other type is counted as unknown.
var ccKnown = map[string]bool{
	"user": true, "assistant": true, "api-request": true, "api-request-shape": true,
	"api-request-blob": true, "attachment": true, "system": true, "summary": true,
	"queue-operation": true, "atis-latch": true, "last-prompt": true, "tools-used": true,
	"cost-state": true, "file-history-snapshot": true, "progress": true, "custom-title": true,
}

// ccSubagentMeta is the <agent>.meta.json beside a subagent transcript.
type ccSubagentMeta struct {
	AgentType string `json:"agentType"`
	ToolUseID string `json:"toolUseId"`
}

// claudeParentFile returns the session file a subagent transcript
// (<session>/subagents/agent-<id>.jsonl) belongs to, or f itself.
func claudeParentFile(f string) string {
	dir := filepath.Dir(f)
	if filepath.Base(dir) != "subagents" {
		return f
	}
	parent := filepath.Dir(dir) + ".jsonl"
	if _, err := os.Stat(parent); err != nil {
		return f
	}
	return parent
}

// parseClaudeCode reads a Claude Code session file and the subagent files
// beside it.
func parseClaudeCode(fr *fileReader) ([]*session, error) {
	main, err := fr.claudeFile(fr.path, false)
	if err != nil {
		return nil, err
	}
	out := []*session{main}
	dir := strings.TrimSuffix(fr.path, ".jsonl") + string(filepath.Separator) + "subagents"
	subs, _ := filepath.Glob(filepath.Join(dir, "agent-*.jsonl"))
	sort.Strings(subs)
	for _, f := range subs {
		sub, err := fr.claudeFile(f, true)
		if err != nil {
			fr.problems = append(fr.problems, err)
			continue
		}
		if len(sub.turns) == 0 {
			continue
		}
		var meta ccSubagentMeta
		if b, err := os.ReadFile(strings.TrimSuffix(f, ".jsonl") + ".meta.json"); err == nil {
			if err := json.Unmarshal(b, &meta); err != nil {
				fr.malformed(strings.TrimSuffix(f, ".jsonl")+".meta.json", 1, err.Error())
			}
		}
		sub.sourceID = main.sourceID + "/" + sub.sourceID
		sub.parentSource, sub.parentStart = main.sourceID, main.start
		sub.parentToolUseID, sub.agentType = meta.ToolUseID, meta.AgentType
		out = append(out, sub)
	}
	return out, nil
}

// ccState is what a Claude Code file's parse carries from line to line.
type ccState struct {
	s        *session
	cur      *turn
	curMsg   string // message id of cur's response
	last     *turn  // the latest response, open or not
	lastMsg  string
	pending  []trajectory.ContentBlock
	calls    map[string]*call
	requests map[string]ccRequest
	errors   []modelError // failed attempts waiting for the response they preceded
	line     int          // the line of the record being read
}

type ccRequest struct {
	ts        time.Time
	maxTokens int
	line      int
}

// claudeFile reads one transcript file into a session; sidechain says the
// file is a subagent's, whose records all are sidechain records.
func (fr *fileReader) claudeFile(path string, sidechain bool) (*session, error) {
	st := &ccState{
		s: &session{client: string(ClaudeCode), provider: "anthropic", mode: trajectory.ModeInteractive, permMode: trajectory.PermDefault,
			originFile: path},
		calls:    map[string]*call{},
		requests: map[string]ccRequest{},
	}
	err := fr.lines(path, func(line int, b []byte) error {
		var r ccRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("not a JSON object: %v", err)
		}
		if !ccKnown[r.Type] {
			fr.countUnknown(r.Type)
			return nil
		}
		fr.records++
		if r.IsSidechain != sidechain && (r.Type == "user" || r.Type == "assistant") {
			// Earlier versions kept subagents in the session file; this
			// importer reads them only from their own files.
			return nil
		}
		st.line = line
		return st.record(&r)
	})
	if err != nil {
		return nil, err
	}
	st.flush()
	if st.s.sourceID == "" && fr.records > 0 {
		return nil, fmt.Errorf("%s: %w: no record names its session (sessionId)", path, ErrNotTranscript)
	}
	if st.s.start.IsZero() && fr.records > 0 {
		return nil, fmt.Errorf("%s: %w: no record has a timestamp, so the session cannot be placed in time", path, ErrNotTranscript)
	}
	return st.s, nil
}

// typeLabel names a record type for the count of unknown ones: the type
// itself when it is a label, so nothing odd from a file reaches the
// terminal.
func typeLabel(t string) string {
	switch {
	case t == "":
		return "(none)"
	case !trajectory.IsLabel(t):
		return "(not a label)"
	}
	return t
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp %q is not RFC 3339", s)
	}
	return t.UTC(), nil
}

func (st *ccState) record(r *ccRecord) error {
	s := st.s
	ts, err := parseTime(r.Timestamp)
	if err != nil {
		return err
	}
	if !ts.IsZero() {
		if s.start.IsZero() || ts.Before(s.start) {
			s.start = ts
		}
		if ts.After(s.end) {
			s.end = ts
		}
	}
	if s.sourceID == "" {
		s.sourceID = r.SessionID
		if r.AgentID != "" {
			s.sourceID = r.AgentID
		}
	}
	if r.Version != "" && s.clientVersion == "" {
		s.clientVersion = r.Version
	}
	if r.Cwd != "" && s.cwd == "" {
		s.cwd = r.Cwd
	}
	switch r.Type {
	case "api-request":
		if r.ID != "" {
			req := ccRequest{ts: ts, line: st.line}
			if r.Params != nil {
				req.maxTokens = r.Params.MaxTokens
				if s.model == "" {
					s.model = r.Params.Model
				}
			}
			st.requests[r.ID] = req
		}
	case "api-request-shape":
		if r.Shape != nil && s.tools == nil {
			var sys []string
			for _, p := range r.Shape.System {
				sys = append(sys, p.Text)
			}
			s.system = strings.Join(sys, "\n")
			s.tools = []trajectory.ToolInfo{}
			for _, raw := range r.Shape.Tools {
				var t struct {
					Name string `json:"name"`
				}
				if json.Unmarshal(raw, &t) != nil || !trajectory.IsToolName(t.Name) {
					continue
				}
				src := trajectory.ToolBuiltin
				if strings.HasPrefix(t.Name, "mcp__") {
					src = trajectory.ToolMCP
				}
				s.tools = append(s.tools, trajectory.ToolInfo{Name: t.Name, DefinitionHash: trajectory.Hash(raw), Source: src, Display: trajectory.DisplayFull})
			}
		}
	case "system":
		if r.Subtype == "api_error" {
			// A failed attempt of the next response's call.
			e := modelError{ts: ts, attempt: r.RetryAttempt, retryAfterMs: r.RetryInMs, willRetry: r.RetryAttempt < r.MaxRetries || r.RetryInMs > 0,
				line: st.line}
			var status struct {
				Status int `json:"status"`
			}
			if json.Unmarshal(r.Error, &status) == nil {
				e.status = status.Status
			}
			e.kind = errorKind(e.status)
			st.errors = append(st.errors, e)
		}
	case "user":
		return st.user(r, ts)
	case "assistant":
		return st.assistant(r, ts)
	}
	return nil
}

func (st *ccState) user(r *ccRecord, ts time.Time) error {
	s := st.s
	if r.PermissionMode != "" {
		s.permMode = ccPermMode(r.PermissionMode)
	}
	switch r.Entrypoint {
	case "sdk-cli", "sdk-ts", "sdk-py":
		s.mode = trajectory.ModeHeadless
	}
	var m ccMessage
	if err := json.Unmarshal(r.Message, &m); err != nil {
		return fmt.Errorf("user record: message: %v", err)
	}
	st.flush()
	var text string
	if json.Unmarshal(m.Content, &text) == nil {
		st.pending = append(st.pending, trajectory.ContentBlock{Type: trajectory.BlockText, Text: text})
		return nil
	}
	var blocks []ccBlock
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		return fmt.Errorf("user record: message.content is neither text nor a list of blocks")
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			st.pending = append(st.pending, trajectory.ContentBlock{Type: trajectory.BlockText, Text: b.Text})
		case "tool_result":
			if b.ToolUseID == "" {
				return fmt.Errorf("user record: a tool_result block has no tool_use_id")
			}
			out := blockText(b.Content)
			st.pending = append(st.pending, trajectory.ContentBlock{Type: trajectory.BlockToolResult, ToolUseID: b.ToolUseID, Content: out, IsError: b.IsError})
			c := st.calls[b.ToolUseID]
			if c == nil || c.result != nil {
				continue // a result for no call of this file, or a second one
			}
			c.result = ccResult(r, b, c, out, ts, s.mode)
			c.result.line = st.line
		}
	}
	return nil
}

// ccResult maps a tool_result block of call c and its record onto a
// result: the outcome is tooloutcome's, the one mock serve --record gives
// the same result on the wire; the record's permission decision, its
// interruption and the saved output's exact size refine it.
func ccResult(r *ccRecord, b ccBlock, c *call, out string, ts time.Time, mode trajectory.RunMode) *result {
	o := tooloutcome.ClaudeCode(tooloutcome.Result{Tool: c.name, Input: c.raw, Text: out, IsError: b.IsError})
	res := &result{text: out, isError: b.IsError, ts: ts, failureKind: o.Kind, errorCode: o.Code,
		truncated: o.Truncated, fullBytes: o.FullBytes}
	if p := r.PermissionDecision; p != nil {
		res.perm = ccDecision(p, mode)
	}
	if r.ToolDenialKind != "" && (res.perm == nil || res.perm.allow) {
		res.perm = &permission{source: trajectory.SourceUser, step: trajectory.StepDefault}
		if mode == trajectory.ModeHeadless {
			res.perm.source = trajectory.SourceNonInteractive
		}
	}
	if res.perm != nil && !res.perm.allow {
		res.failureKind, res.errorCode = trajectory.FailurePermissionDenied, ""
	}
	var tr struct {
		Interrupted         bool  `json:"interrupted"`
		PersistedOutputSize int64 `json:"persistedOutputSize"`
	}
	if json.Unmarshal(r.ToolUseResult, &tr) == nil {
		if tr.Interrupted {
			res.failureKind, res.isError = trajectory.FailureAborted, true
		}
		if tr.PersistedOutputSize > 0 {
			// The output was saved to a file and the model got a preview:
			// the record gives the whole output's exact size.
			res.truncated, res.fullBytes = true, tr.PersistedOutputSize
		}
	}
	return res
}

// ccDecision maps Claude Code's permissionDecision onto the contract's
// source and chain step (see the package doc's table).
func ccDecision(p *ccPermission, mode trajectory.RunMode) *permission {
	perm := &permission{rule: p.Rule}
	switch p.Decision {
	case "accept", "allow":
		perm.allow = true
	}
	switch {
	case p.Source == "hook" || p.ReasonType == "hook":
		perm.source, perm.step = trajectory.SourceHook, trajectory.StepHook
	case p.Source == "user":
		perm.source, perm.step = trajectory.SourceUser, trajectory.StepDefault
	case p.ReasonType == "rule" && perm.allow:
		perm.source, perm.step = trajectory.SourceRule, trajectory.StepAllowRule
	case p.ReasonType == "rule":
		perm.source, perm.step = trajectory.SourceRule, trajectory.StepDenyRule
	case p.ReasonType == "subcommandResults":
		perm.source, perm.step = trajectory.SourceRule, trajectory.StepToolCheck
	case p.ReasonType == "mode":
		perm.source, perm.step = trajectory.SourceMode, trajectory.StepDefault
	case !perm.allow && mode == trajectory.ModeHeadless:
		perm.source, perm.step = trajectory.SourceNonInteractive, trajectory.StepDefault
	default:
		perm.source, perm.step = trajectory.SourceMode, trajectory.StepDefault
	}
	return perm
}

// blockText returns a tool_result's content as text: a string as is, a
// list of blocks as their text joined (images and other blocks dropped).
func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []ccBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (st *ccState) assistant(r *ccRecord, ts time.Time) error {
	s := st.s
	var m ccMessage
	if err := json.Unmarshal(r.Message, &m); err != nil {
		return fmt.Errorf("assistant record: message: %v", err)
	}
	if r.IsAPIErrorMessage || m.Model == "<synthetic>" {
		// The client's own text for a failed call; no model said it. When
		// it names the error ("error":"server_error", written after a
		// request that failed for good), the request is a failed turn.
		var code string
		if json.Unmarshal(r.Error, &code) == nil && code != "" {
			st.failedRequest(r, code, ts)
		}
		return nil
	}
	var blocks []ccBlock
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		return fmt.Errorf("assistant record: message.content is not a list of blocks")
	}
	for _, b := range blocks {
		switch {
		case b.Type != "tool_use":
		case b.ID == "" || !trajectory.IsToolName(b.Name):
			return fmt.Errorf("assistant record: a tool_use block needs an id and a tool name (got id %q, name %q)", clip(b.ID), clip(b.Name))
		case st.calls[b.ID] != nil:
			return fmt.Errorf("assistant record: tool_use id %q repeats an earlier call; the record is skipped", clip(b.ID))
		}
	}
	switch {
	case st.cur != nil && m.ID != "" && m.ID == st.curMsg:
	case st.cur == nil && m.ID != "" && m.ID == st.lastMsg:
		// Claude Code runs a tool while the response still streams, so a
		// tool_result record may come between two blocks of one message:
		// the block belongs to the response it came from, and the results
		// wait for the next request.
		st.cur, st.curMsg = st.last, st.lastMsg
	default:
		st.flush()
		t := &turn{reqTime: ts, respTime: ts, reqLine: st.line, respLine: st.line}
		if req, ok := st.requests[r.RequestRef]; ok && !req.ts.IsZero() {
			t.reqTime, t.maxTokens, t.reqLine = req.ts, req.maxTokens, req.line
		}
		if len(st.pending) > 0 {
			t.newMessages = []trajectory.Message{{Role: trajectory.RoleUser, Content: st.pending}}
			st.pending = nil
		}
		t.errors, st.errors = st.errors, nil
		st.cur, st.curMsg = t, m.ID
		st.last, st.lastMsg = t, m.ID
		s.turns = append(s.turns, t)
	}
	t := st.cur
	if s.model == "" {
		s.model = m.Model
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			t.content = append(t.content, trajectory.ContentBlock{Type: trajectory.BlockText, Text: b.Text})
		case "thinking":
			t.content = append(t.content, trajectory.ContentBlock{Type: trajectory.BlockThinking, Text: b.Thinking})
		case "tool_use":
			input := b.Input
			if len(input) == 0 || input[0] != '{' {
				input = json.RawMessage(`{}`)
			}
			t.content = append(t.content, trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: b.ID, Name: b.Name, Input: input})
			c := &call{id: b.ID, name: b.Name, input: input, index: len(t.calls), line: st.line, raw: b.Input}
			t.calls = append(t.calls, c)
			st.calls[b.ID] = c
		}
	}
	t.respTime = ts
	if m.StopReason != "" {
		t.stopRaw = m.StopReason
	}
	if m.Usage != nil {
		t.usage = trajectory.Usage{InputTokens: m.Usage.InputTokens, OutputTokens: m.Usage.OutputTokens,
			CacheReadTokens: m.Usage.CacheReadTokens, CacheCreationTokens: m.Usage.CacheCreationTokens}
	}
	return nil
}

// failedRequest records a request that failed for good: a turn with the
// failed attempts logged before it and the final one, and no response.
func (st *ccState) failedRequest(r *ccRecord, code string, ts time.Time) {
	st.flush()
	t := &turn{reqTime: ts, respTime: ts, failed: true, reqLine: st.line, respLine: st.line}
	if req, ok := st.requests[r.RequestRef]; ok && !req.ts.IsZero() {
		t.reqTime, t.maxTokens, t.reqLine = req.ts, req.maxTokens, req.line
	}
	if len(st.pending) > 0 {
		t.newMessages = []trajectory.Message{{Role: trajectory.RoleUser, Content: st.pending}}
		st.pending = nil
	}
	kind := errorKind(r.APIErrorStatus)
	if r.APIErrorStatus == 0 {
		kind = ccErrorKind(code)
	}
	attempt := 1
	for _, e := range st.errors {
		attempt = max(attempt, e.attempt+1)
	}
	t.errors = append(st.errors, modelError{ts: ts, kind: kind, status: r.APIErrorStatus, attempt: attempt, line: st.line})
	st.errors = nil
	st.s.turns = append(st.s.turns, t)
	st.last, st.lastMsg = nil, ""
}

// ccErrorKind maps the error string of Claude Code's synthetic error
// record, when it gives no status, onto the contract's kinds.
func ccErrorKind(code string) trajectory.ModelErrorKind {
	switch code {
	case "rate_limit", "rate_limit_error":
		return trajectory.ModelRateLimited
	case "overloaded", "overloaded_error":
		return trajectory.ModelOverloaded
	case "authentication_failed", "authentication_error", "permission_error", "billing_error":
		return trajectory.ModelAuth
	case "invalid_request", "invalid_request_error":
		return trajectory.ModelBadRequest
	case "unknown", "connection_error":
		return trajectory.ModelConnection
	}
	return trajectory.ModelServerError
}

// flush closes the response being read.
func (st *ccState) flush() {
	t := st.cur
	if t == nil {
		return
	}
	st.cur, st.curMsg = nil, ""
	t.stop = normaliseStop(t.stopRaw)
	if t.reqTime.Before(t.respTime) {
		t.durationMs = trajectory.Millis(t.respTime.Sub(t.reqTime))
	}
}

func ccPermMode(m string) trajectory.PermissionMode {
	switch m {
	case "plan":
		return trajectory.PermPlan
	case "acceptEdits":
		return trajectory.PermAcceptEdits
	case "bypassPermissions":
		return trajectory.PermBypass
	}
	return trajectory.PermDefault
}
