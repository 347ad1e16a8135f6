package otlp

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// SchemaURL is the OpenTelemetry semantic conventions version the exported
// spans follow (gen_ai.provider.name, not the older gen_ai.system).
const SchemaURL = "https://opentelemetry.io/schemas/1.41.0"

// ScopeName is the instrumentation scope of every exported span.
const ScopeName = "github.com/retrace-dev/retrace/otlp"

// ErrNoSession is wrapped by SessionSpans' error for events that do not
// open with a session_start.
var ErrNoSession = errors.New("no session_start")

// TraceID returns the trace id a session is exported under: the first 16
// bytes of a SHA-256 of the session id, so a re-export is idempotent.
func TraceID(session string) [16]byte {
	sum := sha256.Sum256([]byte("retrace trace\x00" + session))
	return [16]byte(sum[:16])
}

// SpanID returns the id of the span opened by the event with seq in
// session: the first 8 bytes of a SHA-256 of both.
func SpanID(session string, seq int64) [8]byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seq))
	sum := sha256.Sum256(append([]byte("retrace span\x00"+session+"\x00"), b[:]...))
	id := [8]byte(sum[:8])
	if id == [8]byte{} {
		id[7] = 1 // an all-zero id is invalid in OTLP
	}
	return id
}

// Counts say how much an export holds.
type Counts struct {
	Sessions int `json:"sessions"`
	// Spans counts every span; Chat and Tool the model turn and tool call
	// spans among them.
	Spans int `json:"spans"`
	Chat  int `json:"chat_spans"`
	Tool  int `json:"tool_spans"`
	// DurationUnknown counts the tool spans flagged
	// retrace.tool.duration_unknown (zero-length, no measured duration).
	DurationUnknown int `json:"duration_unknown"`
}

func (c *Counts) add(o Counts) {
	c.Sessions += o.Sessions
	c.Spans += o.Spans
	c.Chat += o.Chat
	c.Tool += o.Tool
	c.DurationUnknown += o.DurationUnknown
}

func nanos(t time.Time) Uint64 {
	if t.IsZero() || t.UnixNano() < 0 {
		return 0
	}
	return Uint64(t.UnixNano())
}

// msToNanos converts a contract duration (milliseconds with microsecond
// precision) to nanoseconds, rounding away the float's error.
func msToNanos(ms float64) int64 { return int64(math.Round(ms * 1e6)) }

// sessionBuilder turns one session's events into spans.
type sessionBuilder struct {
	session  string
	traceID  string
	root     *Span
	rootAttr []KeyValue
	start    *trajectory.SessionStart
	last     time.Time
	provider string
	model    string
	spans    []*Span
	counts   Counts
	// chat is the open chat span of each turn; tools the tool span of each
	// tool_use id.
	chat  map[int]*Span
	tools map[string]*toolSpan
}

type toolSpan struct {
	span     *Span
	callTS   time.Time
	ended    bool
	turn     int
	failKind trajectory.FailureKind
}

func (b *sessionBuilder) spanID(seq int64) string {
	id := SpanID(b.session, seq)
	return hex.EncodeToString(id[:])
}

func (b *sessionBuilder) newSpan(seq int64, name string, kind int, at time.Time) *Span {
	s := &Span{TraceID: b.traceID, SpanID: b.spanID(seq), ParentSpanID: b.root.SpanID, Name: name, Kind: kind,
		StartTimeUnixNano: nanos(at), EndTimeUnixNano: nanos(at)}
	b.spans = append(b.spans, s)
	b.counts.Spans++
	return s
}

// agentName is the agent the session ran: the harness's name without its
// version ("retrace", "claude-code").
func agentName(harness string) string {
	name, _, _ := strings.Cut(strings.TrimSpace(harness), " ")
	if name == "" {
		return "agent"
	}
	return name
}

// SessionSpans returns one session's trace: a resource with the session's
// spans. events are the session's events in seq order, as one trajectory
// file holds them.
func SessionSpans(events []trajectory.Event) (ResourceSpans, Counts, error) {
	if len(events) == 0 {
		return ResourceSpans{}, Counts{}, fmt.Errorf("%w: the session has no events", ErrNoSession)
	}
	st, ok := events[0].Payload.(*trajectory.SessionStart)
	if !ok {
		return ResourceSpans{}, Counts{}, fmt.Errorf("%w: session %s opens with %s", ErrNoSession, events[0].Session, events[0].Type())
	}
	b := &sessionBuilder{session: events[0].Session, start: st, chat: map[int]*Span{}, tools: map[string]*toolSpan{},
		provider: st.Provider, model: st.Model}
	tid := TraceID(b.session)
	b.traceID = hex.EncodeToString(tid[:])
	agent := agentName(st.HarnessVersion)
	b.root = &Span{TraceID: b.traceID, SpanID: b.spanID(events[0].Seq), Name: "invoke_agent " + agent, Kind: KindInternal,
		StartTimeUnixNano: nanos(events[0].TS)}
	b.spans = append(b.spans, b.root)
	b.counts = Counts{Sessions: 1, Spans: 1}
	b.rootAttr = []KeyValue{
		strAttr("gen_ai.operation.name", "invoke_agent"),
		strAttr("gen_ai.agent.name", agent),
		strAttr("gen_ai.provider.name", st.Provider),
		strAttr("gen_ai.request.model", st.Model),
		strAttr("gen_ai.conversation.id", b.session),
		strAttr("retrace.session.id", b.session),
		strAttr("retrace.harness_version", st.HarnessVersion),
		strAttr("retrace.mode", string(st.Mode)),
		strAttr("retrace.permission_mode", string(st.PermissionMode)),
		strAttr("retrace.config_hash", st.ConfigHash),
	}
	if st.ParentSession != "" {
		b.rootAttr = append(b.rootAttr, strAttr("retrace.parent_session", st.ParentSession))
	}
	if st.ParentToolUseID != "" {
		b.rootAttr = append(b.rootAttr, strAttr("retrace.parent_tool_use_id", st.ParentToolUseID))
	}
	if st.ReplayOf != "" {
		b.rootAttr = append(b.rootAttr, strAttr("retrace.replay_of", st.ReplayOf))
	}
	ended := false
	for _, ev := range events[1:] {
		if ev.TS.After(b.last) {
			b.last = ev.TS
		}
		if _, isEnd := ev.Payload.(*trajectory.SessionEnd); isEnd {
			ended = true
		}
		b.event(ev)
	}
	if !ended {
		b.rootAttr = append(b.rootAttr, boolAttr("retrace.session.unended", true))
	}
	if b.last.IsZero() {
		b.last = events[0].TS
	}
	b.finish()
	b.root.Attributes = b.rootAttr
	rs := ResourceSpans{
		Resource: Resource{Attributes: []KeyValue{
			strAttr("service.name", agent),
			strAttr("service.version", strings.TrimSpace(strings.TrimPrefix(st.HarnessVersion, agent))),
			strAttr("retrace.provider", st.Provider),
		}},
		SchemaURL: SchemaURL,
	}
	ss := ScopeSpans{Scope: Scope{Name: ScopeName}, SchemaURL: SchemaURL, Spans: make([]Span, len(b.spans))}
	for i, s := range b.spans {
		ss.Spans[i] = *s
	}
	rs.ScopeSpans = []ScopeSpans{ss}
	return rs, b.counts, nil
}

func (b *sessionBuilder) event(ev trajectory.Event) {
	switch p := ev.Payload.(type) {
	case *trajectory.ModelRequest:
		s := b.newSpan(ev.Seq, "chat "+b.model, KindClient, ev.TS)
		s.Attributes = []KeyValue{
			strAttr("gen_ai.operation.name", "chat"),
			strAttr("gen_ai.provider.name", b.provider),
			strAttr("gen_ai.request.model", b.model),
			intAttr("retrace.turn", int64(ev.Turn)),
			intAttr("retrace.request_bytes", p.RequestBytes),
		}
		if p.MaxTokens > 0 {
			s.Attributes = append(s.Attributes, intAttr("gen_ai.request.max_tokens", int64(p.MaxTokens)))
		}
		b.chat[ev.Turn] = s
		b.counts.Chat++
	case *trajectory.ModelError:
		if s := b.chat[ev.Turn]; s != nil {
			s.Events = append(s.Events, SpanEvent{TimeUnixNano: nanos(ev.TS), Name: "retrace.model_error", Attributes: []KeyValue{
				strAttr("error.type", string(p.ErrorKind)), intAttr("http.response.status_code", int64(p.StatusCode)),
				intAttr("retrace.attempt", int64(p.Attempt)), boolAttr("retrace.will_retry", p.WillRetry),
			}})
			s.EndTimeUnixNano = nanos(ev.TS)
			if !p.WillRetry {
				s.Status = &Status{Code: StatusError, Message: string(p.ErrorKind)}
				s.Attributes = append(s.Attributes, strAttr("error.type", string(p.ErrorKind)))
			}
		}
	case *trajectory.ModelResponse:
		s := b.chat[ev.Turn]
		if s == nil {
			return
		}
		s.EndTimeUnixNano = nanos(ev.TS)
		s.Status = nil
		reason := p.StopReasonRaw
		if reason == "" {
			reason = string(p.StopReason)
		}
		s.Attributes = append(s.Attributes,
			strsAttr("gen_ai.response.finish_reasons", reason),
			intAttr("gen_ai.usage.input_tokens", p.Usage.InputTokens),
			intAttr("gen_ai.usage.output_tokens", p.Usage.OutputTokens),
			intAttr("retrace.usage.cache_read_tokens", p.Usage.CacheReadTokens),
			intAttr("retrace.usage.cache_creation_tokens", p.Usage.CacheCreationTokens),
			strAttr("retrace.stop_reason", string(p.StopReason)),
			floatAttr("retrace.model.duration_ms", p.DurationMs),
			intAttr("retrace.tool_uses", int64(len(p.ToolUses()))),
		)
		if p.TTFTMs > 0 {
			s.Attributes = append(s.Attributes, floatAttr("retrace.model.ttft_ms", p.TTFTMs))
		}
	case *trajectory.ToolCall:
		s := b.newSpan(ev.Seq, "execute_tool "+p.Tool, KindInternal, ev.TS)
		s.Attributes = []KeyValue{
			strAttr("gen_ai.operation.name", "execute_tool"),
			strAttr("gen_ai.tool.name", p.Tool),
			strAttr("gen_ai.tool.call.id", p.ToolUseID),
			strAttr("gen_ai.tool.type", "function"),
			intAttr("retrace.turn", int64(ev.Turn)),
			intAttr("retrace.tool.index", int64(p.Index)),
			intAttr("retrace.tool.batch", int64(p.Batch)),
		}
		if p.ConcurrencySafe {
			s.Attributes = append(s.Attributes, boolAttr("retrace.tool.concurrency_safe", true))
		}
		if p.Observed != "" {
			s.Attributes = append(s.Attributes, strAttr("retrace.observed", string(p.Observed)))
		}
		b.tools[p.ToolUseID] = &toolSpan{span: s, callTS: ev.TS, turn: ev.Turn}
		b.counts.Tool++
	case *trajectory.PermissionAllow:
		b.permission(p.PermissionDecision, "allow")
	case *trajectory.PermissionPrompt:
		b.permission(p.PermissionDecision, "prompt")
	case *trajectory.PermissionDeny:
		b.permission(p.PermissionDecision, "deny")
	case *trajectory.HookRun:
		if t := b.tools[p.ToolUseID]; t != nil {
			t.span.Events = append(t.span.Events, SpanEvent{TimeUnixNano: nanos(ev.TS), Name: "retrace.hook_run", Attributes: []KeyValue{
				strAttr("retrace.hook.name", p.Hook), strAttr("retrace.hook.phase", string(p.Phase)),
				strAttr("retrace.hook.outcome", string(p.Outcome)), floatAttr("retrace.hook.duration_ms", p.DurationMs),
			}})
		}
	case *trajectory.ToolSuccess:
		if t := b.tools[p.ToolUseID]; t != nil {
			t.span.Status = &Status{Code: StatusOK}
		}
	case *trajectory.ToolFailure:
		if t := b.tools[p.ToolUseID]; t != nil {
			t.failKind = p.FailureKind
			t.span.Status = &Status{Code: StatusError, Message: string(p.FailureKind)}
			t.span.Attributes = append(t.span.Attributes, strAttr("error.type", string(p.FailureKind)))
			if p.ErrorCode != "" {
				t.span.Attributes = append(t.span.Attributes, strAttr("retrace.tool.error_code", p.ErrorCode))
			}
		}
	case *trajectory.ToolEnd:
		t := b.tools[p.ToolUseID]
		if t == nil {
			return
		}
		t.ended = true
		t.span.Attributes = append(t.span.Attributes, intAttr("retrace.tool.output_bytes", p.OutputBytes))
		if p.Truncated {
			t.span.Attributes = append(t.span.Attributes, boolAttr("retrace.tool.truncated", true))
		}
		if p.NotRun {
			// The tool never started: a zero-length span, flagged, so an
			// import reads it back as a call that did not run.
			t.span.Attributes = append(t.span.Attributes, boolAttr("retrace.tool.not_run", true))
		}
		if p.DurationUnknown {
			// No measurement: a zero-length span at the call, flagged.
			t.span.StartTimeUnixNano, t.span.EndTimeUnixNano = nanos(t.callTS), nanos(t.callTS)
			t.span.Attributes = append(t.span.Attributes, boolAttr("retrace.tool.duration_unknown", true))
			b.counts.DurationUnknown++
			return
		}
		end := nanos(ev.TS)
		d := msToNanos(p.DurationMs)
		start := max(int64(end)-d, 0)
		t.span.StartTimeUnixNano, t.span.EndTimeUnixNano = Uint64(start), Uint64(start+d)
		t.span.Attributes = append(t.span.Attributes, floatAttr("retrace.tool.duration_ms", p.DurationMs))
	case *trajectory.ToolResult:
		if t := b.tools[p.ToolUseID]; t != nil && p.IsError {
			t.span.Attributes = append(t.span.Attributes, boolAttr("retrace.tool.result_is_error", true))
		}
	case *trajectory.DefenseTrigger:
		a := []KeyValue{strAttr("retrace.defense.name", string(p.Defense)), strAttr("retrace.defense.action", string(p.Action))}
		if p.ToolUseID != "" {
			a = append(a, strAttr("gen_ai.tool.call.id", p.ToolUseID))
		}
		b.root.Events = append(b.root.Events, SpanEvent{TimeUnixNano: nanos(ev.TS), Name: "retrace.defense_trigger", Attributes: a})
	case *trajectory.Reminder:
		b.root.Events = append(b.root.Events, SpanEvent{TimeUnixNano: nanos(ev.TS), Name: "retrace.reminder",
			Attributes: []KeyValue{strAttr("retrace.reminder.kind", p.Kind)}})
	case *trajectory.Compaction:
		b.root.Events = append(b.root.Events, SpanEvent{TimeUnixNano: nanos(ev.TS), Name: "retrace.compaction", Attributes: []KeyValue{
			strAttr("retrace.compaction.strategy", string(p.Strategy)),
			intAttr("retrace.compaction.tokens_before", p.TokensBefore), intAttr("retrace.compaction.tokens_after", p.TokensAfter),
		}})
	case *trajectory.SessionEnd:
		b.root.EndTimeUnixNano = nanos(ev.TS)
		b.rootAttr = append(b.rootAttr,
			strAttr("retrace.end_reason", string(p.Reason)),
			intAttr("retrace.turns", int64(p.Turns)),
			intAttr("gen_ai.usage.input_tokens", p.Usage.InputTokens),
			intAttr("gen_ai.usage.output_tokens", p.Usage.OutputTokens),
			intAttr("retrace.tool_calls", int64(p.ToolCalls)),
			intAttr("retrace.tool_failures", int64(p.ToolFailures)),
			floatAttr("retrace.session.duration_ms", p.DurationMs),
		)
		if p.Reason == trajectory.EndError {
			b.root.Status = &Status{Code: StatusError, Message: p.ErrorCode}
			b.rootAttr = append(b.rootAttr, strAttr("error.type", cmpOr(p.ErrorCode, "error")))
		}
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (b *sessionBuilder) permission(d trajectory.PermissionDecision, decision string) {
	t := b.tools[d.ToolUseID]
	if t == nil {
		return
	}
	t.span.Attributes = append(t.span.Attributes,
		strAttr("retrace.permission.decision", decision),
		strAttr("retrace.permission.source", string(d.Source)),
		strAttr("retrace.permission.step", string(d.Step)),
	)
}

// finish closes what the session left open: the root ends at the last
// event when there is no session_end, and a call without tool_end has no
// duration to show.
func (b *sessionBuilder) finish() {
	if b.root.EndTimeUnixNano == 0 {
		b.root.EndTimeUnixNano = nanos(b.last)
	}
	for _, t := range b.tools {
		if !t.ended {
			t.span.StartTimeUnixNano, t.span.EndTimeUnixNano = nanos(t.callTS), nanos(t.callTS)
			t.span.Attributes = append(t.span.Attributes, boolAttr("retrace.tool.duration_unknown", true), boolAttr("retrace.tool.unfinished", true))
			b.counts.DurationUnknown++
		}
	}
}
