package importer

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	json "github.com/segmentio/encoding/json"

	"github.com/retrace-dev/retrace/tooloutcome"
	"github.com/retrace-dev/retrace/trajectory"
)

// ocExport is what `opencode export <sessionID>` prints: the session and
// its messages, each with its parts.
type ocExport struct {
	Info *struct {
		ID        string `json:"id"`
		Directory string `json:"directory"`
		Version   string `json:"version"`
		Model     *struct {
			ID         string `json:"id"`
			ProviderID string `json:"providerID"`
		} `json:"model"`
		Time struct {
			Created int64 `json:"created"`
			Updated int64 `json:"updated"`
		} `json:"time"`
	} `json:"info"`
	Messages []struct {
		Info  ocMessage `json:"info"`
		Parts []ocPart  `json:"parts"`
	} `json:"messages"`
}

// ocMessage is the info of one opencode message.
type ocMessage struct {
	ID         string `json:"id"`
	Role       string `json:"role"`
	ModelID    string `json:"modelID"`
	ProviderID string `json:"providerID"`
	Finish     string `json:"finish"`
	Time       struct {
		Created   int64 `json:"created"`
		Completed int64 `json:"completed"`
	} `json:"time"`
	Tokens *ocTokens `json:"tokens"`
	Path   *struct {
		Cwd string `json:"cwd"`
	} `json:"path"`
	Error *struct {
		Name string `json:"name"`
		Data *struct {
			StatusCode int `json:"statusCode"`
		} `json:"data"`
	} `json:"error"`
}

type ocTokens struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
	Cache  struct {
		Read  int64 `json:"read"`
		Write int64 `json:"write"`
	} `json:"cache"`
}

// ocPart is one part of an opencode message: text, reasoning, tool,
// step-start, step-finish and others the importer skips.
type ocPart struct {
	Type      string    `json:"type"`
	MessageID string    `json:"messageID"`
	Text      string    `json:"text"`
	Tool      string    `json:"tool"`
	CallID    string    `json:"callID"`
	Reason    string    `json:"reason"`
	Tokens    *ocTokens `json:"tokens"`
	State     *struct {
		Status   string          `json:"status"`
		Input    json.RawMessage `json:"input"`
		Output   string          `json:"output"`
		Error    string          `json:"error"`
		Metadata *struct {
			Exit       *int   `json:"exit"`
			Truncated  bool   `json:"truncated"`
			OutputPath string `json:"outputPath"`
		} `json:"metadata"`
		Time struct {
			Start int64 `json:"start"`
			End   int64 `json:"end"`
		} `json:"time"`
	} `json:"state"`
}

// ocEvent is one line of `opencode run --format json`.
type ocEvent struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp"`
	SessionID string `json:"sessionID"`
	Part      ocPart `json:"part"`
}

// ocState builds a session from opencode's messages, in order.
type ocState struct {
	s       *session
	cur     *turn
	curMsg  string
	pending []trajectory.ContentBlock
	calls   map[string]*call
}

func millis(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// parseOpenCode reads an `opencode export` JSON file or the JSON lines of
// `opencode run --format json`.
func parseOpenCode(fr *fileReader) ([]*session, error) {
	data, err := os.ReadFile(fr.path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fr.path, err)
	}
	st := &ocState{
		s: &session{client: string(OpenCode), provider: "unknown", mode: trajectory.ModeInteractive, permMode: trajectory.PermDefault,
			originFile: fr.path, toolsUnknown: true},
		calls: map[string]*call{},
	}
	var ex ocExport
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, &ex) == nil && ex.Info != nil {
		st.export(fr, &ex, data)
	} else {
		// opencode run --format json: one event per line, the run's
		// assistant messages only.
		st.s.mode = trajectory.ModeHeadless
		if err := fr.scan(fr.path, bytes.NewReader(data), func(line int, b []byte) error {
			var e ocEvent
			if err := json.Unmarshal(b, &e); err != nil {
				return fmt.Errorf("not a JSON object: %v", err)
			}
			if e.SessionID == "" || e.Type == "" {
				fr.countUnknown(e.Type)
				return nil
			}
			fr.records++
			if st.s.sourceID == "" {
				st.s.sourceID = e.SessionID
			}
			st.part(&e.Part, millis(e.Timestamp), line)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	st.flush()
	st.finish()
	if st.s.sourceID == "" && fr.records > 0 {
		return nil, fmt.Errorf("%s: %w: nothing names the session (info.id, sessionID)", fr.path, ErrNotTranscript)
	}
	if st.s.start.IsZero() && fr.records > 0 {
		return nil, fmt.Errorf("%s: %w: no message has a time, so the session cannot be placed in time", fr.path, ErrNotTranscript)
	}
	return []*session{st.s}, nil
}

// export reads the messages of an `opencode export`. The export is one
// indented JSON document, so each event's line is that of the first
// occurrence of its message's or call's id.
func (st *ocState) export(fr *fileReader, ex *ocExport, data []byte) {
	s := st.s
	s.sourceID, s.cwd, s.clientVersion = ex.Info.ID, ex.Info.Directory, ex.Info.Version
	if ex.Info.Model != nil {
		s.model, s.provider = ex.Info.Model.ID, ex.Info.Model.ProviderID
	}
	lineOf := func(id string) int {
		i := bytes.Index(data, []byte(`"`+id+`"`))
		if id == "" || i < 0 {
			return 0
		}
		return bytes.Count(data[:i], []byte("\n")) + 1
	}
	for _, m := range ex.Messages {
		fr.records++
		info := m.Info
		line := lineOf(info.ID)
		switch info.Role {
		case "user":
			st.flush()
			st.stamp(millis(info.Time.Created))
			for _, p := range m.Parts {
				if p.Type == "text" && p.Text != "" {
					st.pending = append(st.pending, trajectory.ContentBlock{Type: trajectory.BlockText, Text: p.Text})
				}
			}
		case "assistant":
			st.flush()
			if info.ModelID != "" {
				s.model = info.ModelID
			}
			if info.ProviderID != "" {
				s.provider = info.ProviderID
			}
			if info.Path != nil && info.Path.Cwd != "" && s.cwd == "" {
				s.cwd = info.Path.Cwd
			}
			t := st.open(millis(info.Time.Created), info.ID, line)
			t.respTime = millis(info.Time.Completed)
			if t.respTime.IsZero() {
				t.respTime = t.reqTime
			}
			st.stamp(t.respTime)
			if info.Tokens != nil {
				t.usage = info.Tokens.usage()
			}
			t.stopRaw = info.Finish
			if info.Error != nil && len(m.Parts) == 0 {
				// The request failed for good: no part was produced.
				status := 0
				if info.Error.Data != nil {
					status = info.Error.Data.StatusCode
				}
				t.failed = true
				t.errors = append(t.errors, modelError{ts: t.reqTime, kind: errorKind(status), status: status, attempt: 1, line: line})
			}
			for i := range m.Parts {
				p := &m.Parts[i]
				st.part(p, t.respTime, lineOf(p.CallID))
			}
		}
	}
}

// stamp widens the session's time span to ts.
func (st *ocState) stamp(ts time.Time) {
	if ts.IsZero() {
		return
	}
	if st.s.start.IsZero() || ts.Before(st.s.start) {
		st.s.start = ts
	}
	if ts.After(st.s.end) {
		st.s.end = ts
	}
}

// open starts the turn of assistant message id.
func (st *ocState) open(ts time.Time, id string, line int) *turn {
	t := &turn{reqTime: ts, respTime: ts, reqLine: line, respLine: line}
	if len(st.pending) > 0 {
		t.newMessages = []trajectory.Message{{Role: trajectory.RoleUser, Content: st.pending}}
		st.pending = nil
	}
	st.cur, st.curMsg = t, id
	st.s.turns = append(st.s.turns, t)
	return t
}

// part adds one part of an assistant message to its turn; ts is when it
// was logged and line where.
func (st *ocState) part(p *ocPart, ts time.Time, line int) {
	st.stamp(ts)
	if p.MessageID != "" && p.MessageID != st.curMsg {
		// The run's events: a part of the next assistant message.
		st.flush()
		st.open(ts, p.MessageID, line)
	}
	t := st.cur
	if t == nil {
		return
	}
	switch p.Type {
	case "text":
		t.content = append(t.content, trajectory.ContentBlock{Type: trajectory.BlockText, Text: p.Text})
	case "reasoning":
		t.content = append(t.content, trajectory.ContentBlock{Type: trajectory.BlockThinking, Text: p.Text})
	case "step-finish":
		if p.Reason != "" {
			t.stopRaw = p.Reason
		}
		if p.Tokens != nil && t.usage == (trajectory.Usage{}) {
			t.usage = p.Tokens.usage()
		}
		if ts.After(t.respTime) {
			t.respTime = ts
		}
	case "tool":
		st.tool(t, p, ts, line)
	}
}

// tool adds a tool part: the call, and its result when the part has
// finished. A call opencode renamed to its invalid tool keeps the name the
// model asked for, which only its input holds, so detectors see the call
// the model made.
func (st *ocState) tool(t *turn, p *ocPart, ts time.Time, line int) {
	if p.CallID == "" || p.State == nil || st.calls[p.CallID] != nil {
		return
	}
	name, input := p.Tool, p.State.Input
	if p.Tool == tooloutcome.OpenCodeInvalid {
		var in struct {
			Tool string `json:"tool"`
		}
		if json.Unmarshal(input, &in) == nil && trajectory.IsToolName(in.Tool) {
			name = in.Tool
		}
	}
	if !trajectory.IsToolName(name) {
		return
	}
	if len(input) == 0 || input[0] != '{' {
		input = json.RawMessage(`{}`)
	}
	t.content = append(t.content, trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: p.CallID, Name: name, Input: input})
	c := &call{id: p.CallID, name: name, input: input, index: len(t.calls), line: line, raw: input}
	t.calls = append(t.calls, c)
	st.calls[p.CallID] = c
	if p.State.Status != "completed" && p.State.Status != "error" {
		return // pending or running: no result yet
	}
	text := p.State.Output
	if p.State.Status == "error" {
		text = p.State.Error
	}
	r := tooloutcome.Result{Tool: p.Tool, Input: input, Text: text, IsError: p.State.Status == "error"}
	res := &result{text: text, ts: millis(p.State.Time.End), line: line}
	if res.ts.IsZero() {
		res.ts = ts
	}
	if md := p.State.Metadata; md != nil {
		r.Exit = md.Exit
		if md.Truncated {
			res.truncated = true
			if fi, err := os.Stat(md.OutputPath); md.OutputPath != "" && err == nil && fi.Mode().IsRegular() {
				res.fullBytes = fi.Size() // the whole output, where opencode saved it
			}
		}
	}
	if start, end := p.State.Time.Start, p.State.Time.End; start > 0 && end >= start {
		// opencode times each tool part from its start to its end.
		res.durationMs, res.durationKnown = float64(end-start), true
	}
	o := tooloutcome.OpenCode(r)
	res.failureKind, res.errorCode = o.Kind, o.Code
	res.isError = o.Failed() && o.Kind != trajectory.FailureUnknown
	if o.Kind == trajectory.FailurePermissionDenied {
		// opencode's own refusal, in its words: "The user rejected ..."
		// (an ask nobody granted), or a rule's.
		res.perm = &permission{source: trajectory.SourceUser, step: trajectory.StepDefault}
	}
	c.result = res
	st.pending = append(st.pending, trajectory.ContentBlock{Type: trajectory.BlockToolResult, ToolUseID: p.CallID, Content: text, IsError: res.isError})
}

// flush closes the turn being read.
func (st *ocState) flush() {
	t := st.cur
	if t == nil {
		return
	}
	st.cur, st.curMsg = nil, ""
	switch t.stopRaw {
	case "tool-calls":
		t.stop = trajectory.StopToolUse
	case "stop":
		t.stop = trajectory.StopEndTurn
	case "length":
		t.stop = trajectory.StopMaxTokens
	case "":
		t.stop = trajectory.StopMissing
	default:
		t.stop = trajectory.StopUnknown
	}
	if t.reqTime.Before(t.respTime) {
		t.durationMs = trajectory.Millis(t.respTime.Sub(t.reqTime))
	}
}

// finish gives the session its catalog: opencode logs none.
func (st *ocState) finish() {
	st.s.tools = []trajectory.ToolInfo{}
	if st.s.provider == "" {
		st.s.provider = "unknown"
	}
	if strings.TrimSpace(st.s.model) == "" {
		st.s.model = "unknown"
	}
}

func (u *ocTokens) usage() trajectory.Usage {
	return trajectory.Usage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadTokens: u.Cache.Read, CacheCreationTokens: u.Cache.Write}
}
