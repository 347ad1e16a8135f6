package otlp

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/importer"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// ImportOptions configures Import.
type ImportOptions struct {
	// Paths are OTLP/JSON files, or directories walked for *.json and
	// *.jsonl files.
	Paths []string
	// RunsDir is where the trajectories are written.
	RunsDir string
	// Progress, when set, is called after each file with the files done
	// and in all.
	Progress func(done, total int)
}

// Import reads OTLP/JSON trace files and writes one trajectory per trace
// that holds GenAI spans (chat, execute_tool) into opts.RunsDir, with the
// report type of the transcript importers. A span of another operation is
// counted in Report.Unknown, never fatal; a file that is not OTLP/JSON is
// a problem (a *PathError naming file, line and JSON path) and the other
// files are imported. The error is for what stops the whole import (a
// path that does not exist, a runs directory that cannot be written, ctx).
//
// Importing is idempotent: a session's id is its start time and a hash of
// its trace id, so importing the same file again reports it unchanged.
func Import(ctx context.Context, opts ImportOptions) (importer.Report, error) {
	rep := importer.Report{Unknown: map[string]int{}}
	files, err := traceFiles(opts.Paths)
	if err != nil {
		return rep, err
	}
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Files++
		sessions, err := parseFile(f, rep.Unknown)
		if err != nil {
			rep.Problems = append(rep.Problems, err)
		}
		for _, s := range sessions {
			path, outcome, err := s.write(opts.RunsDir)
			if err != nil {
				return rep, fmt.Errorf("import %s: %w", f, err)
			}
			calls := 0
			for _, t := range s.turns {
				calls += len(t.calls)
			}
			rep.Sessions = append(rep.Sessions, importer.SessionReport{Source: f, ID: s.id(), Path: path, Outcome: outcome, ToolCalls: calls})
		}
		if opts.Progress != nil {
			opts.Progress(i+1, len(files))
		}
	}
	return rep, nil
}

func traceFiles(paths []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w (give an OTLP/JSON file or a directory of them)", p, err)
		}
		if !info.IsDir() {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() && (strings.HasSuffix(f, ".json") || strings.HasSuffix(f, ".jsonl")) {
				found = append(found, f)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("walk %s: %w", p, err)
		}
		sort.Strings(found)
		for _, f := range found {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out, nil
}

// parseFile reads one file's spans and groups them into sessions.
func parseFile(path string, unknown map[string]int) ([]*otSession, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	spans, err := readSpans(f, path)
	if err != nil {
		return nil, err
	}
	return sessionsOf(spans, unknown), nil
}

// maxUnknownKinds bounds the distinct unknown operations counted by name.
const maxUnknownKinds = 100

func countUnknown(unknown map[string]int, kind string) {
	if _, ok := unknown[kind]; !ok && len(unknown) >= maxUnknownKinds {
		kind = "(other)"
	}
	unknown[kind]++
}

// Operation classes of GenAI spans.
const (
	opAgent = "invoke_agent"
	opChat  = "chat"
	opTool  = "execute_tool"
)

// operation returns a span's gen_ai.operation.name, or the operation its
// name starts with when the attribute is missing.
func operation(s *decodedSpan, a attrs) string {
	if op := a.str("gen_ai.operation.name"); op != "" {
		return op
	}
	op, _, _ := strings.Cut(s.Name, " ")
	switch op {
	case opAgent, opChat, opTool:
		return op
	}
	return ""
}

// otSession is one trace read as a session.
type otSession struct {
	traceID    string
	start, end time.Time
	harness    string
	provider   string
	model      string
	permMode   trajectory.PermissionMode
	endReason  trajectory.EndReason
	service    string
	turns      []*otTurn
}

type otTurn struct {
	start, end time.Time
	a          attrs
	failed     bool
	calls      []*otCall
	spanID     string
}

type otCall struct {
	start, end time.Time
	a          attrs
	id, name   string
	failed     bool
	status     *Status
}

func spanTime(n Uint64) time.Time { return time.Unix(0, int64(n)).UTC() }

// sessionsOf groups spans by trace and keeps the traces with GenAI spans.
func sessionsOf(spans []decodedSpan, unknown map[string]int) []*otSession {
	var order []string
	byTrace := map[string][]*decodedSpan{}
	for i := range spans {
		t := spans[i].TraceID
		if _, ok := byTrace[t]; !ok {
			order = append(order, t)
		}
		byTrace[t] = append(byTrace[t], &spans[i])
	}
	var out []*otSession
	for _, tid := range order {
		if s := sessionOf(tid, byTrace[tid], unknown); s != nil {
			out = append(out, s)
		}
	}
	return out
}

func sessionOf(traceID string, spans []*decodedSpan, unknown map[string]int) *otSession {
	s := &otSession{traceID: traceID}
	var root *decodedSpan
	var rootAttrs attrs
	var tools []*otCall
	for _, sp := range spans {
		a := attrMap(sp.Attributes)
		switch op := operation(sp, a); op {
		case opAgent:
			if root == nil {
				root, rootAttrs = sp, a
			} else {
				countUnknown(unknown, "invoke_agent (a nested agent; only the first agent of a trace is imported)")
			}
		case opChat, "text_completion", "generate_content":
			s.turns = append(s.turns, &otTurn{start: spanTime(sp.StartTimeUnixNano), end: spanTime(sp.EndTimeUnixNano), a: a,
				failed: sp.Status != nil && sp.Status.Code == StatusError, spanID: sp.SpanID})
		case opTool:
			tools = append(tools, &otCall{start: spanTime(sp.StartTimeUnixNano), end: spanTime(sp.EndTimeUnixNano), a: a,
				id: a.str("gen_ai.tool.call.id"), name: toolName(sp, a), status: sp.Status,
				failed: (sp.Status != nil && sp.Status.Code == StatusError) || a.str("error.type") != ""})
		case "":
			countUnknown(unknown, "span without gen_ai.operation.name")
		default:
			countUnknown(unknown, "gen_ai operation "+clipLabel(op))
		}
	}
	if len(s.turns) == 0 && len(tools) == 0 {
		return nil
	}
	sort.SliceStable(s.turns, func(i, j int) bool { return s.turns[i].start.Before(s.turns[j].start) })
	sort.SliceStable(tools, func(i, j int) bool { return tools[i].start.Before(tools[j].start) })

	// The session's bounds: the agent span's, or those of its GenAI spans.
	first := true
	widen := func(a, b time.Time) {
		if first || a.Before(s.start) {
			s.start = a
		}
		if first || b.After(s.end) {
			s.end = b
		}
		first = false
	}
	for _, t := range s.turns {
		widen(t.start, t.end)
	}
	for _, c := range tools {
		widen(c.start, c.end)
	}
	var res attrs
	if root != nil {
		widen(spanTime(root.StartTimeUnixNano), spanTime(root.EndTimeUnixNano))
		res = root.res
	} else {
		res = spans[0].res
		rootAttrs = attrs{}
	}
	s.service = res.str("service.name")
	s.harness = rootAttrs.str("retrace.harness_version")
	if s.harness == "" {
		s.harness = strings.TrimSpace(cmpOr(s.service, "otlp") + " " + res.str("service.version"))
	}
	var firstChat attrs
	if len(s.turns) > 0 {
		firstChat = s.turns[0].a
	} else {
		firstChat = attrs{}
	}
	s.provider = firstOf(rootAttrs.str("gen_ai.provider.name"), firstChat.str("gen_ai.provider.name"),
		rootAttrs.str("gen_ai.system"), firstChat.str("gen_ai.system"))
	if !trajectory.IsLabel(s.provider) {
		s.provider = "unknown"
	}
	s.model = firstOf(firstChat.str("gen_ai.request.model"), rootAttrs.str("gen_ai.request.model"), firstChat.str("gen_ai.response.model"), "unknown")
	s.permMode = trajectory.PermissionMode(rootAttrs.str("retrace.permission_mode"))
	if !s.permMode.Valid() {
		s.permMode = trajectory.PermDefault
	}
	s.endReason = trajectory.EndReason(rootAttrs.str("retrace.end_reason"))

	if len(s.turns) == 0 {
		for range tools {
			countUnknown(unknown, "execute_tool with no chat span in its trace")
		}
		return nil
	}
	s.assign(tools, unknown)
	return s
}

// assign gives each tool call to the model turn that asked for it: the turn
// retrace.turn names (retrace's own export), else the last chat span that
// ended by the time the tool started, else the last one that started by then.
func (s *otSession) assign(tools []*otCall, unknown map[string]int) {
	byNumber := map[int64]*otTurn{}
	for _, t := range s.turns {
		if n, ok := t.a.int("retrace.turn"); ok {
			byNumber[n] = t
		}
	}
	seen := map[string]bool{}
	for _, c := range tools {
		var turn *otTurn
		if n, ok := c.a.int("retrace.turn"); ok && byNumber[n] != nil {
			turn = byNumber[n]
		} else {
			for _, t := range s.turns {
				if !t.end.After(c.start) {
					turn = t
				}
			}
			if turn == nil {
				for _, t := range s.turns {
					if !t.start.After(c.start) {
						turn = t
					}
				}
			}
		}
		if turn == nil {
			countUnknown(unknown, "execute_tool before any chat span")
			continue
		}
		if c.id == "" || seen[c.id] {
			// The contract needs one call per tool_use id.
			c.id = fmt.Sprintf("otlp_%s_%d", turn.spanID, len(seen))
		}
		seen[c.id] = true
		turn.calls = append(turn.calls, c)
	}
}

func toolName(sp *decodedSpan, a attrs) string {
	n := a.str("gen_ai.tool.name")
	if n == "" {
		_, n, _ = strings.Cut(sp.Name, " ")
	}
	if n = strings.TrimSpace(n); n == "" {
		return "unknown"
	}
	return n
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func clipLabel(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// id is the session's retrace id: its start and four bytes of a hash of
// the trace id, so the same trace always gets the same id.
func (s *otSession) id() string {
	sum := sha256.Sum256([]byte("otlp\x00" + s.traceID))
	return recorder.SessionID(s.start, [4]byte(sum[:4]))
}

// write records s into runsDir as the transcript importers do
// (importer.WriteSession).
func (s *otSession) write(runsDir string) (string, importer.Outcome, error) {
	return importer.WriteSession(runsDir, s.id(), s.emit)
}

// emit writes the session's events; at moves the clock to an event's time
// (never backwards).
func (s *otSession) emit(sink trajectory.Sink, at func(time.Time)) {
	at(s.start)
	tags := map[string]string{"source": "import", "client": "otlp", "trace_id": s.traceID}
	if s.service != "" {
		tags["service.name"] = s.service
	}
	systemHash := trajectory.Hash(nil)
	toolsHash := trajectory.Hash([]byte("[]"))
	cfg, _ := json.Marshal([]string{"otlp", s.harness, s.provider, s.model, string(s.permMode)})
	sink.Emit(0, &trajectory.SessionStart{
		HarnessVersion: s.harness, Provider: s.provider, Model: s.model,
		Mode: trajectory.ModeHeadless, PermissionMode: s.permMode, ConfigHash: trajectory.Hash(cfg),
		SystemPromptHash: systemHash, Tools: []trajectory.ToolInfo{}, Defenses: []trajectory.DefenseName{}, Tags: tags,
	})
	var (
		hashes          []string
		conv            trajectory.Conversation
		total           trajectory.Usage
		calls, failures int
		last            trajectory.StopReason
		results         []trajectory.ContentBlock
	)
	for i, t := range s.turns {
		n := i + 1
		at(t.start)
		var newMessages []trajectory.Message
		if len(results) > 0 {
			m := trajectory.Message{Role: trajectory.RoleUser, Content: results}
			b, _ := json.Marshal(m)
			hashes = append(hashes, trajectory.Hash(b))
			newMessages = append(newMessages, m)
		}
		results = nil
		req := &trajectory.ModelRequest{SystemHash: systemHash, ToolsHash: toolsHash, ToolNames: []string{},
			NewMessages: newMessages}
		conv.Encode(req, hashes)
		if mt, ok := t.a.int("gen_ai.request.max_tokens"); ok && mt > 0 {
			req.MaxTokens = int(mt)
		}
		if req.NewMessages == nil {
			req.NewMessages = []trajectory.Message{}
		}
		sink.Emit(n, req)
		at(t.end)
		if t.failed && len(t.calls) == 0 {
			kind := trajectory.ModelErrorKind(t.a.str("error.type"))
			if !kind.Valid() {
				kind = trajectory.ModelServerError
			}
			sink.Emit(n, &trajectory.ModelError{ErrorKind: kind, Attempt: 1, DurationMs: trajectory.Millis(t.end.Sub(t.start))})
			last = ""
			continue
		}
		content := []trajectory.ContentBlock{}
		for _, c := range t.calls {
			content = append(content, trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: c.id, Name: c.name, Input: c.input()})
		}
		reasons := t.a.strs("gen_ai.response.finish_reasons")
		raw := ""
		if len(reasons) > 0 {
			raw = reasons[0]
		}
		stop := trajectory.StopReason(t.a.str("retrace.stop_reason"))
		if !stop.Valid() {
			stop = llm.NormalizeStopReason(raw)
		}
		usage := trajectory.Usage{}
		usage.InputTokens, _ = t.a.int("gen_ai.usage.input_tokens")
		usage.OutputTokens, _ = t.a.int("gen_ai.usage.output_tokens")
		usage.CacheReadTokens, _ = t.a.int("retrace.usage.cache_read_tokens")
		if usage.CacheReadTokens == 0 {
			usage.CacheReadTokens, _ = t.a.int("gen_ai.usage.cache_read.input_tokens")
		}
		usage.CacheCreationTokens, _ = t.a.int("retrace.usage.cache_creation_tokens")
		if usage.CacheCreationTokens == 0 {
			usage.CacheCreationTokens, _ = t.a.int("gen_ai.usage.cache_creation.input_tokens")
		}
		usage = nonNegativeUsage(usage)
		dur, ok := t.a.float("retrace.model.duration_ms")
		if !ok || dur < 0 {
			dur = trajectory.Millis(t.end.Sub(t.start))
		}
		resp := &trajectory.ModelResponse{Content: content, StopReason: stop, StopReasonRaw: clipLabel(raw), Usage: usage, DurationMs: dur}
		sink.Emit(n, resp)
		b, _ := json.Marshal(trajectory.Message{Role: trajectory.RoleAssistant, Content: content})
		hashes = append(hashes, trajectory.Hash(b))
		total.InputTokens += usage.InputTokens
		total.OutputTokens += usage.OutputTokens
		total.CacheReadTokens += usage.CacheReadTokens
		total.CacheCreationTokens += usage.CacheCreationTokens
		last = stop
		for idx, c := range t.calls {
			calls++
			if c.emit(sink, n, idx, at) {
				failures++
			}
			text := c.a.str("gen_ai.tool.call.result")
			results = append(results, trajectory.ContentBlock{Type: trajectory.BlockToolResult, ToolUseID: c.id, Content: text, IsError: c.failed})
		}
	}
	at(s.end)
	reason := s.endReason
	if !reason.Valid() {
		switch last {
		case trajectory.StopEndTurn:
			reason = trajectory.EndTurn
		case trajectory.StopMaxTokens:
			reason = trajectory.EndMaxTokens
		case trajectory.StopRefusal:
			reason = trajectory.EndRefused
		default:
			reason = trajectory.EndAborted
		}
	}
	sink.Emit(len(s.turns), &trajectory.SessionEnd{Reason: reason, Turns: len(s.turns), Usage: total,
		ToolCalls: calls, ToolFailures: failures, DurationMs: max(trajectory.Millis(s.end.Sub(s.start)), 0)})
}

func nonNegativeUsage(u trajectory.Usage) trajectory.Usage {
	u.InputTokens = max(u.InputTokens, 0)
	u.OutputTokens = max(u.OutputTokens, 0)
	u.CacheReadTokens = max(u.CacheReadTokens, 0)
	u.CacheCreationTokens = max(u.CacheCreationTokens, 0)
	return u
}

// input is the call's arguments when the span carries them as a JSON
// object (gen_ai.tool.call.arguments, opt-in in the conventions), else {}.
func (c *otCall) input() json.RawMessage {
	if s := c.a.str("gen_ai.tool.call.arguments"); s != "" {
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &obj) == nil && obj != nil {
			return json.RawMessage(s)
		}
	}
	return json.RawMessage(`{}`)
}

// emit writes one call's events and reports whether it failed. What the
// span states (its outcome, its duration) is observed: transcript; the
// tool_call and tool_result the importer derives are observed: inferred.
func (c *otCall) emit(sink trajectory.Sink, turn, index int, at func(time.Time)) bool {
	ref := func(o trajectory.Observed) trajectory.ToolRef {
		return trajectory.ToolRef{ToolUseID: c.id, Tool: c.name, Observed: o}
	}
	at(c.start)
	sink.Emit(turn, &trajectory.ToolCall{ToolRef: ref(trajectory.ObservedInferred), Input: c.input(), Index: index})
	if dec := c.a.str("retrace.permission.decision"); dec != "" {
		d := trajectory.PermissionDecision{ToolRef: ref(trajectory.ObservedTranscript),
			Source: trajectory.PermissionSource(c.a.str("retrace.permission.source")), Step: trajectory.ChainStep(c.a.str("retrace.permission.step"))}
		if d.Source.Valid() && d.Step.Valid() {
			switch dec {
			case "allow":
				sink.Emit(turn, &trajectory.PermissionAllow{PermissionDecision: d})
			case "prompt":
				sink.Emit(turn, &trajectory.PermissionPrompt{PermissionDecision: d})
			case "deny":
				sink.Emit(turn, &trajectory.PermissionDeny{PermissionDecision: d})
			}
		}
	}
	at(c.end)
	if c.failed {
		errType := c.a.str("error.type")
		kind := trajectory.FailureKind(errType)
		code := c.a.str("retrace.tool.error_code")
		if !kind.Valid() {
			kind = trajectory.FailureToolError
			if code == "" {
				code = errType
			}
		}
		switch {
		case !trajectory.IsLabel(code):
			code = ""
		case !trajectory.IsErrorCode(code):
			// A code of the other agent's own (an exception class) is
			// no label of the closed set: it becomes other.
			code = trajectory.ErrorCodeOther
		}
		sink.Emit(turn, &trajectory.ToolFailure{ToolRef: ref(trajectory.ObservedTranscript), FailureKind: kind, ErrorCode: code})
	} else {
		sink.Emit(turn, &trajectory.ToolSuccess{ToolRef: ref(trajectory.ObservedTranscript)})
	}
	end := &trajectory.ToolEnd{ToolRef: ref(trajectory.ObservedTranscript)}
	if ob, ok := c.a.int("retrace.tool.output_bytes"); ok && ob > 0 {
		end.OutputBytes = ob
	}
	end.Truncated = c.a.bool("retrace.tool.truncated")
	switch {
	case c.failed && trajectory.FailureKind(c.a.str("error.type")).NeverRuns(), c.a.bool("retrace.tool.not_run"):
		// A refused call did not run: the span's length is the refusal's,
		// no duration of the tool.
		end.NotRun = true
	case c.a.bool("retrace.tool.duration_unknown"):
		end.DurationUnknown = true
	default:
		// The span's own length is the tool's run time, to the microsecond.
		end.DurationMs = trajectory.Millis(c.end.Sub(c.start))
	}
	sink.Emit(turn, end)
	sink.Emit(turn, &trajectory.ToolResult{ToolRef: ref(trajectory.ObservedInferred), Text: c.a.str("gen_ai.tool.call.result"),
		IsError: c.failed, Display: trajectory.DisplayFull})
	return c.failed
}
