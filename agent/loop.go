package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/trajectory"
)

// countingSink passes events on and counts the calls and failures the
// executor emits, so that session_end's totals are read from what was
// recorded rather than kept by a second bookkeeping that could disagree.
type countingSink struct {
	next     trajectory.Sink
	calls    atomic.Int64
	failures atomic.Int64
}

func (c *countingSink) Emit(turn int, p trajectory.Payload) {
	switch p.(type) {
	case *trajectory.ToolCall:
		c.calls.Add(1)
	case *trajectory.ToolFailure:
		c.failures.Add(1)
	}
	c.next.Emit(turn, p)
}

// session is the state of one Run.
type session struct {
	cfg    Config
	sink   *countingSink
	ex     *executor.Executor
	reg    *tools.Registry
	clock  func() time.Time
	system string
	model  string
	// offered says whether a tool may be sent to the model: the
	// disallowed tools are not.
	offered func(string) bool

	history []trajectory.Message
	prev    *llm.Request
	conv    trajectory.Conversation // the messages prev sent, for the next model_request
	memo    llm.RequestMemo         // the messages' hashes and sizes, so a request is measured for what it adds
	sent    map[string]bool         // tools in the last request
	turn    int
	usage   trajectory.Usage
	// lastUsage is the usage the last reply reported, which measures the
	// context (see contextSize), and usageMark the number of messages its
	// request held; nil once compaction changed the history it measured.
	lastUsage *trajectory.Usage
	usageMark int
	// lastReply is the content of the last reply to the session's own
	// requests (not a summary request's).
	lastReply []trajectory.ContentBlock
	// promptTurn is the turn the current prompt started after, and
	// prompts the number of prompts taken so far, the first included.
	promptTurn int
	prompts    int
	text       string
	start      time.Time

	rem *reminders
	def *defenses
	// known are the tools the session has recorded: session_start's
	// catalog and those mcp_server events added since.
	known map[string]bool
	// stream schedules the calls of the current streamed turn (stream.go).
	stream *executor.Stream
}

// ending is why the loop stops. explicit is set when the reason is known
// for certain (the model finished, a defense stopped, a budget ran out);
// otherwise the reason is attributed by priority in end.
type ending struct {
	explicit trajectory.EndReason
	code     string
	err      error
}

// Run runs one session to its end and records it into cfg.Sink. The error
// is only for a Config that cannot start a session (nothing is recorded
// then); how the session ended, including a failed model call, is in the
// Result and in session_end.
func Run(ctx context.Context, cfg Config) (Result, error) {
	s, err := newSession(cfg)
	if err != nil {
		return Result{}, err
	}
	return s.run(ctx), nil
}

func newSession(cfg Config) (*session, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Defenses == nil {
		cfg.Defenses = DefaultDefenses()
	}
	s := &session{cfg: cfg, sink: &countingSink{next: cfg.Sink}, reg: cfg.Executor.Env.Registry(), clock: cfg.Clock, sent: map[string]bool{}}
	if s.clock == nil {
		s.clock = time.Now
	}
	s.model = cfg.Model
	if m, ok := cfg.Provider.(interface{ Model() string }); ok && s.model == "" {
		s.model = m.Model()
	}
	if s.model == "" {
		s.model = "default"
	}
	exCfg := cfg.Executor
	exCfg.Sink = s.sink
	// The executor reads sent only while Execute runs; the loop writes it
	// only between calls of Execute.
	exCfg.SchemaSent = func(name string) bool { return s.sent[name] }
	if exCfg.SessionID == "" {
		if r, ok := cfg.Sink.(interface{ SessionID() string }); ok {
			exCfg.SessionID = r.SessionID()
		}
	}
	// The fuse lives in the permission checker; a session without the
	// denial_fuse defense turns it off there.
	if exCfg.Permission != nil && !slices.Contains(cfg.Defenses, trajectory.DefenseDenialFuse) {
		exCfg.Permission.DisableFuse()
	}
	ex, err := executor.New(exCfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	s.ex = ex
	var rules Restrictions
	if p := cfg.Executor.Permission; p != nil {
		rules.Deny, rules.Disallowed = p.Restrictions()
		s.offered = func(name string) bool { return !p.Disallowed(name) }
	}
	s.system = sessionSystemPrompt(cfg.System, s.reg, rules, s.offered)
	s.rem = newReminders(s)
	s.def = newDefenses(s, cfg.Defenses)
	if cfg.Retries != nil {
		cfg.Retries.bind(s.emit)
	}
	return s, nil
}

func (s *session) emit(p trajectory.Payload) { s.sink.Emit(s.turn, p) }

// recordErr is nil while the session's events are recorded, and from the
// recorder's first failure to write on an error wrapping ErrRecordFailed
// and the recorder's error. The loop asks it before each model request;
// the executor before each effect of a call.
func (s *session) recordErr() error {
	if s.cfg.Executor.RecordErr == nil {
		return nil
	}
	if err := s.cfg.Executor.RecordErr(); err != nil {
		return fmt.Errorf("%w: %w", ErrRecordFailed, err)
	}
	return nil
}

func (s *session) run(ctx context.Context) Result {
	s.start = s.clock()
	s.emitStart()
	if err := s.recordErr(); err != nil {
		// Not even session_start is on disk: nothing starts at all.
		return s.end(ctx, ending{explicit: trajectory.EndRecordFailed, err: err})
	}
	if s.cfg.SnapshotWorkspace != nil {
		if snap := s.cfg.SnapshotWorkspace(); snap != nil {
			s.emit(snap)
		}
	}
	s.history = slices.Clone(s.cfg.History)
	s.addPrompt(s.cfg.Prompt)
	for {
		if e, done := s.beforeRequest(ctx); done {
			return s.end(ctx, e)
		}
		s.turn++
		resp, err := s.ask(ctx)
		if errors.Is(err, ErrRecordFailed) {
			return s.end(ctx, ending{explicit: trajectory.EndRecordFailed, err: err})
		}
		if err != nil {
			return s.end(ctx, ending{err: err, code: errorCode(err)})
		}
		e, done := s.handle(ctx, resp)
		if done && s.followUp(ctx, e) {
			continue
		}
		if done {
			return s.end(ctx, e)
		}
	}
}

// addPrompt puts a person's prompt into the history. A prompt after the
// first, or the first of a session that carries a conversation on, is
// recorded in a user_prompt event, so that the user's turns are told from
// the harness's; it joins the last message when that is the user's (tool
// results of a turn that ended the conversation), since a request never
// holds two user messages in a row.
func (s *session) addPrompt(prompt string) {
	block := trajectory.ContentBlock{Type: trajectory.BlockText, Text: prompt}
	if s.prompts > 0 || len(s.history) > 0 {
		index := s.prompts
		if len(s.cfg.History) > 0 && s.prompts == 0 {
			index = 0
		}
		s.emit(&trajectory.UserPrompt{Text: prompt, PromptIndex: index})
	}
	s.prompts++
	s.promptTurn = s.turn
	if n := len(s.history); n > 0 && s.history[n-1].Role == trajectory.RoleUser {
		last := &s.history[n-1]
		last.Content = append(slices.Clone(last.Content), block)
		return
	}
	s.history = append(s.history, trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{block}})
}

// followUp takes the person's next prompt when the model finished its
// turn and the session has someone to ask (Config.NextPrompt); it reports
// whether the session goes on. Any other ending (a limit, a defense, an
// error, an abort) ends the session.
func (s *session) followUp(ctx context.Context, e ending) bool {
	if s.cfg.NextPrompt == nil || ctx.Err() != nil || s.recordErr() != nil || (e.explicit != trajectory.EndTurn && e.explicit != trajectory.EndStopSequence) {
		return false
	}
	prompt, ok := s.cfg.NextPrompt(ctx)
	if !ok || strings.TrimSpace(prompt) == "" || ctx.Err() != nil {
		return false
	}
	// A reply that finished the turn is not in the history yet (the loop
	// only keeps what a next request needs); its text is now.
	var said []trajectory.ContentBlock
	for _, b := range s.lastReply {
		if b.Type == trajectory.BlockText && b.Text != "" {
			said = append(said, b)
		}
	}
	if n := len(s.history); len(said) > 0 && s.history[n-1].Role != trajectory.RoleAssistant {
		s.history = append(s.history, trajectory.Message{Role: trajectory.RoleAssistant, Content: said})
	}
	s.addPrompt(prompt)
	return true
}

func (s *session) emitStart() {
	all := s.reg.All()
	catalog := make([]trajectory.ToolInfo, len(all))
	s.known = make(map[string]bool, len(all))
	for i, t := range all {
		spec, def := t.Spec(), tools.Definition(t)
		s.known[spec.Name] = true
		display := spec.Display
		if display == "" {
			display = trajectory.DisplayFull
		}
		source := spec.Source
		if source == "" {
			source = trajectory.ToolBuiltin
		}
		catalog[i] = trajectory.ToolInfo{Name: spec.Name, DefinitionHash: trajectory.Hash(def), Definition: def,
			Source: source, Deferred: spec.Deferred, ReadOnly: spec.ReadOnly, Display: display,
			NonStrict: nonStrict(s.cfg.Provider, spec)}
	}
	mode, perm := s.cfg.Mode, s.cfg.PermissionMode
	if mode == "" {
		mode = trajectory.ModeHeadless
	}
	if perm == "" {
		perm = trajectory.PermDefault
	}
	version := s.cfg.HarnessVersion
	if version == "" {
		version = HarnessVersion
	}
	limits := s.cfg.Limits
	s.emit(&trajectory.SessionStart{
		HarnessVersion:   version,
		HarnessRevision:  s.cfg.HarnessRevision,
		Provider:         s.cfg.Provider.Name(),
		Model:            s.model,
		Mode:             mode,
		PermissionMode:   perm,
		ConfigHash:       configHash(s.model, perm, s.cfg, s.system, catalog),
		SystemPromptHash: trajectory.Hash([]byte(s.system)),
		SystemPrompt:     s.cfg.System,
		Tools:            catalog,
		Defenses:         append([]trajectory.DefenseName{}, s.cfg.Defenses...),
		Limits: &trajectory.Limits{MaxTurns: limits.MaxTurns, TokenBudget: limits.TokenBudget, CostBudget: limits.CostBudget,
			MaxTokens: limits.MaxTokens, ContextTokens: limits.ContextTokens,
			InputPerMTok: limits.Prices.Input, OutputPerMTok: limits.Prices.Output,
			CacheReadPerMTok: limits.Prices.CacheRead, CacheWritePerMTok: limits.Prices.CacheWrite,
			ContextWindow: configuredWindow(limits, s.model, s.cfg.Models), CompactThreshold: limits.CompactThreshold, Compaction: limits.Compaction},
		Workspace:         s.cfg.Executor.Env.Workspace(),
		WorkspaceSnapshot: s.cfg.WorkspaceSnapshot,
		ReplayOf:          s.cfg.ReplayOf,
		Tags:              s.cfg.Tags,
		Continues:         s.cfg.Continues,
		Config:            s.cfg.EffectiveConfig,
		ConfigSources:     s.cfg.ConfigSources,
		Sandbox:           sandboxInfo(s.cfg.Executor.Env),
	})
}

// sandboxInfo describes the session's sandbox for session_start; nil for
// an Env without one (a test of the loop alone; harness.Build always
// sets one).
func sandboxInfo(env *tools.Env) *trajectory.SandboxInfo {
	box := env.Sandbox()
	if box == nil {
		return nil
	}
	in := box.Info()
	return &trajectory.SandboxInfo{Mode: trajectory.SandboxMode(in.Mode), LandlockABI: in.ABI, Network: in.Network, Limits: in.Limits, Reason: in.Reason}
}

// configHash is session_start's config_hash: the Hash of everything that
// changes how the session behaves (see trajectory.SessionStart.ConfigHash).
// The defenses are hashed as a set, because the loop runs them by name and
// their order changes nothing; the catalog keeps its order, which is the
// order the tools are sent in.
func configHash(model string, perm trajectory.PermissionMode, cfg Config, system string, catalog []trajectory.ToolInfo) string {
	type tool struct {
		Name, Definition   string
		Deferred, ReadOnly bool
	}
	tools := make([]tool, len(catalog))
	for i, t := range catalog {
		tools[i] = tool{t.Name, t.DefinitionHash, t.Deferred, t.ReadOnly}
	}
	defenses := slices.Clone(cfg.Defenses)
	slices.Sort(defenses)
	defenses = slices.Compact(defenses)
	v := struct {
		Model  string
		Perm   trajectory.PermissionMode
		Policy string
		Limits Limits
		Stream bool
		// BatchTools is left out when off, so the hashes of sessions
		// recorded before it existed do not change.
		BatchTools bool `json:",omitempty"`
		Defenses   []trajectory.DefenseName
		System     string
		Tools      []tool
		// Models is left out when empty, so that hashes recorded before
		// the model table existed still compare.
		Models map[string]ModelInfo `json:",omitempty"`
		// Cache is left out when nil, so sessions without caching
		// hash as they did before it existed.
		Cache *llm.Cache `json:",omitempty"`
	}{model, perm, cfg.PolicyHash, cfg.Limits, cfg.Stream, cfg.Stream && cfg.BatchTools, defenses, system, tools, cfg.Models, cfg.Cache}
	b, err := json.Marshal(v)
	if err != nil {
		// Only a NaN or infinite price or budget fails to marshal; Go
		// syntax hashes the same values as well.
		b = fmt.Appendf(nil, "%#v", v)
	}
	return trajectory.Hash(b)
}

// beforeRequest checks the bounds, relieves context pressure and delivers
// the queued reminders, in that order, before the next model request.
func (s *session) beforeRequest(ctx context.Context) (ending, bool) {
	if err := s.recordErr(); err != nil {
		return ending{explicit: trajectory.EndRecordFailed, err: err}, true
	}
	if ctx.Err() != nil {
		return ending{}, true
	}
	if s.maxTurnsReached() {
		return ending{explicit: trajectory.EndMaxTurns}, true
	}
	if b := s.cfg.Limits.TokenBudget; b > 0 && totalTokens(s.usage) >= b {
		return ending{explicit: trajectory.EndTokenBudget}, true
	}
	if b := s.cfg.Limits.CostBudget; b > 0 && s.cfg.Limits.Prices.cost(s.usage) >= b {
		return ending{explicit: trajectory.EndCostBudget}, true
	}
	s.compact(ctx)
	s.sourceEvents(true)
	blocks := s.rem.take()
	last := &s.history[len(s.history)-1]
	if last.Role == trajectory.RoleAssistant && len(blocks) == 0 {
		// A request must end with a user message; when a turn produced
		// neither results nor a reminder, say so as the harness, not as
		// the user.
		if s.rem.add(kindContinue, fmt.Sprintf("%s:%d", kindContinue, s.turn), "Continue with the task.") {
			blocks = s.rem.take()
		} else {
			blocks = []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: "<harness-reminder>Continue with the task.</harness-reminder>"}}
		}
	}
	if len(blocks) == 0 {
		return ending{}, false
	}
	if last.Role == trajectory.RoleUser {
		last.Content = append(slices.Clone(last.Content), blocks...)
	} else {
		s.history = append(s.history, trajectory.Message{Role: trajectory.RoleUser, Content: blocks})
	}
	return ending{}, false
}

func totalTokens(u trajectory.Usage) int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheCreationTokens
}

// maxTurnsReached reports whether the current prompt used up its turns:
// MaxTurns bounds the turns of each prompt, so a follow-up starts afresh.
func (s *session) maxTurnsReached() bool {
	return s.cfg.Limits.MaxTurns > 0 && s.turn-s.promptTurn >= s.cfg.Limits.MaxTurns
}

// ask sends the history as the next request; the reported usage then
// measures the context (contextSize).
func (s *session) ask(ctx context.Context) (llm.Response, error) {
	req := llm.Request{Model: s.cfg.Model, System: s.system, Tools: toolDefs(s.reg, s.offered),
		Messages: append([]trajectory.Message(nil), s.history...), MaxTokens: s.cfg.Limits.MaxTokens, Cache: s.cfg.Cache}
	if s.cfg.Plant != nil {
		s.cfg.Plant(s.turn, &req)
	}
	resp, err := s.send(ctx, req)
	if err == nil {
		u := resp.Usage
		s.lastUsage, s.usageMark, s.lastReply = &u, len(req.Messages), resp.Content
	}
	return resp, err
}

// send sends one request and records it, its response or its failure.
func (s *session) send(ctx context.Context, req llm.Request) (llm.Response, error) {
	clear(s.sent)
	for _, t := range req.Tools {
		s.sent[t.Name] = true
	}
	ev := s.memo.Event(req, s.prev, &s.conv, s.cfg.Stream)
	if s.reg != nil {
		// Record which MCP servers are still connecting, so that a
		// detector can tell "not here yet" from "does not exist".
		ev.PendingSources = s.reg.Pending()
	}
	s.emit(ev)
	if err := s.recordErr(); err != nil {
		// The request is not on disk: it is not sent.
		return llm.Response{}, err
	}
	s.prev = &req
	started, attempts := s.clock(), s.cfg.Retries.count()
	var resp llm.Response
	var err error
	if s.cfg.Stream {
		resp, err = s.cfg.Provider.Stream(ctx, req, s.beginStream(ctx, started))
		if err != nil {
			s.streamFailed(ctx)
		}
	} else {
		resp, err = s.cfg.Provider.Complete(ctx, req)
	}
	if err != nil && s.cfg.Retries.count() > attempts {
		// The provider recorded every attempt, the last one included.
		return resp, err
	}
	if err != nil {
		me := &trajectory.ModelError{ErrorKind: trajectory.ModelInvalidResponse, Attempt: 1,
			DurationMs: trajectory.Millis(s.clock().Sub(started))}
		var le *llm.Error
		switch {
		case errors.As(err, &le):
			me.ErrorKind, me.StatusCode = le.Kind, le.StatusCode
			me.RetryAfterMs = trajectory.Millis(le.RetryAfter)
		case ctx.Err() != nil:
			me.ErrorKind = trajectory.ModelAborted
		}
		if me.DurationMs < 0 {
			me.DurationMs = 0
		}
		s.emit(me)
		return resp, err
	}
	s.streamReceived()
	s.emit(llm.ResponseEvent(resp))
	s.usage.InputTokens += resp.Usage.InputTokens
	s.usage.OutputTokens += resp.Usage.OutputTokens
	s.usage.CacheReadTokens += resp.Usage.CacheReadTokens
	s.usage.CacheCreationTokens += resp.Usage.CacheCreationTokens
	return resp, nil
}

// errorCode labels a failed model call by its kind, never by its text.
func errorCode(err error) string {
	var le *llm.Error
	if errors.As(err, &le) {
		return "model_" + string(le.Kind)
	}
	return "model_error"
}

// handle acts on one response: it ends the session, or executes the
// calls and prepares the next request.
func (s *session) handle(ctx context.Context, resp llm.Response) (ending, bool) {
	userText := false
	var texts []string
	for _, b := range resp.Content {
		if b.Type == trajectory.BlockText && strings.TrimSpace(b.Text) != "" {
			userText = true
			texts = append(texts, b.Text)
		}
	}
	if userText {
		s.text = strings.Join(texts, "\n")
	}
	uses := resp.ToolUses()
	// Stop reasons by whitelist: only the values below lead anywhere but
	// the error path.
	switch resp.StopReason {
	case trajectory.StopRefusal, trajectory.StopContentFilter:
		s.notRun(uses, "the reply was refused")
		return ending{explicit: trajectory.EndRefused}, true
	case trajectory.StopMissing, trajectory.StopUnknown:
		s.notRun(uses, "the reply had no recognised stop reason")
		return ending{code: "stop_" + string(resp.StopReason),
			err: fmt.Errorf("model reply has stop reason %q (raw %q); it is never taken as completion", resp.StopReason, resp.StopReasonRaw)}, true
	case trajectory.StopToolUse, trajectory.StopEndTurn, trajectory.StopStopSequence, trajectory.StopMaxTokens:
	default:
		s.notRun(uses, "the reply had no recognised stop reason")
		return ending{code: "stop_unknown", err: fmt.Errorf("stop reason %q is not handled", resp.StopReason)}, true
	}

	assistant := make([]trajectory.ContentBlock, 0, len(resp.Content))
	var run []trajectory.ContentBlock
	truncated := false
	for _, b := range resp.Content {
		if b.Type != trajectory.BlockToolUse {
			assistant = append(assistant, b)
			continue
		}
		if len(b.Input) == 0 {
			// Cut off by max_tokens: never executed.
			truncated = true
			if !s.def.on(trajectory.DefenseTruncatedToolUse) || s.def.truncations >= maxTruncatedRetries {
				s.notRun(append(run, remaining(resp.Content, b.ID)...), "the reply was cut off")
				return ending{explicit: trajectory.EndMaxTokens}, true
			}
			s.def.truncations++
			s.def.trigger(trajectory.DefenseTruncatedToolUse, trajectory.ActionSkip, b.ID, map[string]string{"tool": b.Name})
			s.rem.add(kindTruncatedToolUse, fmt.Sprintf("%s:%s", kindTruncatedToolUse, b.ID),
				fmt.Sprintf("Your %s call was cut off by the output limit before its input was complete, so it was not run. "+
					"Call it again with a smaller input: for example write a large file in parts (write the first part, then append the rest with edit).", b.Name))
			continue
		}
		if t, ok := s.reg.Lookup(b.Name); ok && isEmptyObject(b.Input) && hasRequired(t) && s.def.on(trajectory.DefenseEmptyInputRetry) {
			if s.def.emptyRetries >= maxEmptyInputRetries {
				s.def.trigger(trajectory.DefenseEmptyInputRetry, trajectory.ActionStop, b.ID, map[string]string{"tool": b.Name})
				s.notRun(append(run, remaining(resp.Content, b.ID)...), "the session stopped")
				return ending{explicit: trajectory.EndStuck}, true
			}
			s.def.emptyRetries++
			s.def.trigger(trajectory.DefenseEmptyInputRetry, trajectory.ActionRetry, b.ID, map[string]string{"tool": b.Name})
			assistant = append(assistant, trajectory.ContentBlock{Type: trajectory.BlockText,
				Text: fmt.Sprintf("[harness: my %s call had empty input and was not run]", b.Name)})
			s.rem.add(kindEmptyInput, fmt.Sprintf("%s:%s:%d", kindEmptyInput, b.Name, s.turn),
				fmt.Sprintf("The %s call had empty input; call it again with its parameters.", b.Name))
			continue
		}
		assistant = append(assistant, b)
		run = append(run, b)
	}

	if len(run) == 0 {
		switch {
		case truncated || len(uses) > 0:
			// Every call was cut off or empty: the model is told what to
			// fix and asked again.
		case resp.StopReason == trajectory.StopEndTurn:
			return ending{explicit: trajectory.EndTurn}, true
		case resp.StopReason == trajectory.StopStopSequence:
			return ending{explicit: trajectory.EndStopSequence}, true
		case resp.StopReason == trajectory.StopMaxTokens:
			return ending{explicit: trajectory.EndMaxTokens}, true
		default:
			return ending{code: "tool_use_without_call", err: errors.New("the reply's stop reason is tool_use but it holds no tool_use block")}, true
		}
	}
	if len(run) > 0 && (resp.StopReason == trajectory.StopEndTurn || resp.StopReason == trajectory.StopStopSequence) {
		if !s.def.on(trajectory.DefenseEndTurnFallthrough) {
			s.notRun(run, "the reply ended the turn")
			return ending{explicit: trajectory.EndTurn}, true
		}
		// The model said it is done but left a call: run it rather than
		// stop with the task half done.
		s.def.trigger(trajectory.DefenseEndTurnFallthrough, trajectory.ActionExecute, run[0].ID,
			map[string]string{"stop_reason": string(resp.StopReason), "tool_uses": fmt.Sprint(len(run))})
	}
	if len(assistant) == 0 {
		assistant = append(assistant, trajectory.ContentBlock{Type: trajectory.BlockText, Text: "[harness: the reply was cut off]"})
	}
	s.history = append(s.history, trajectory.Message{Role: trajectory.RoleAssistant, Content: assistant})
	if len(run) == 0 {
		return ending{}, false
	}

	results := s.execute(ctx, run)
	s.history = append(s.history, trajectory.Message{Role: trajectory.RoleUser, Content: results})
	if ctx.Err() != nil {
		// Every call got its (aborted) result; the model is not asked again.
		return ending{}, true
	}
	calls := make([]executed, len(run))
	for i, u := range run {
		t, _ := s.reg.Lookup(u.Name)
		ro, wr := classify(t, u.Input)
		calls[i] = executed{id: u.ID, tool: u.Name, sig: callSig(u.Name, u.Input), input: u.Input,
			output: results[i].Content, isError: results[i].IsError, readOnly: ro, writes: wr}
	}
	if s.def.afterTools(calls, userText) {
		return ending{explicit: trajectory.EndStuck}, true
	}
	return ending{}, false
}

// remaining returns the tool_use blocks after the one with id.
func remaining(content []trajectory.ContentBlock, id string) []trajectory.ContentBlock {
	var out []trajectory.ContentBlock
	after := false
	for _, b := range content {
		if b.Type != trajectory.BlockToolUse {
			continue
		}
		if after {
			out = append(out, b)
		}
		after = after || b.ID == id
	}
	return out
}

// notRun answers tool_use blocks the session ends without running, so
// that every tool_use of the trajectory has its answer.
func (s *session) notRun(uses []trajectory.ContentBlock, why string) {
	// Calls started while the reply streamed have run: they get their
	// real results, the others "Not run".
	for _, u := range s.settleStream(uses, why) {
		s.emit(&trajectory.ToolResult{ToolRef: trajectory.ToolRef{ToolUseID: u.ID, Tool: u.Name},
			Text: "Not run: " + why + ".", IsError: true, Display: trajectory.DisplayFull})
	}
}

// end attributes the end reason by priority — explicit, then abort, then
// the turn limit, then error — and records session_end.
func (s *session) end(ctx context.Context, e ending) Result {
	if err := s.recordErr(); err != nil && e.explicit != trajectory.EndRecordFailed {
		// Whatever else ended the session, its record is cut short, and
		// that is what the person has to know first.
		e = ending{explicit: trajectory.EndRecordFailed, err: err}
	}
	reason := attribute(e.explicit, ctx.Err() != nil, s.maxTurnsReached())
	code := ""
	if reason == trajectory.EndError {
		code = e.code
		if code == "" {
			code = "error"
		}
	}
	r := Result{Reason: reason, ErrorCode: code, Err: e.err, Turns: s.turn, Usage: s.usage,
		ToolCalls: int(s.sink.calls.Load()), ToolFailures: int(s.sink.failures.Load()), Text: s.text}
	if reason == trajectory.EndAborted && r.Err == nil {
		r.Err = context.Cause(ctx)
	}
	s.sourceEvents(false)
	end := &trajectory.SessionEnd{Reason: reason, Turns: s.turn, Usage: s.usage, ToolCalls: r.ToolCalls, ToolFailures: r.ToolFailures,
		DurationMs: max(0, trajectory.Millis(s.clock().Sub(s.start))), ErrorCode: code}
	if p := s.cfg.Limits.Prices; p.set() {
		end.CostUSD = p.cost(s.usage)
	}
	s.emit(end)
	return r
}

// attribute picks the end reason by priority: an explicit reason, then a
// user abort, then the turn limit, then error. It takes facts
// (was the context cancelled, was the limit reached), never error text.
func attribute(explicit trajectory.EndReason, aborted, maxTurnsReached bool) trajectory.EndReason {
	switch {
	case explicit != "":
		return explicit
	case aborted:
		return trajectory.EndAborted
	case maxTurnsReached:
		return trajectory.EndMaxTurns
	}
	return trajectory.EndError
}
