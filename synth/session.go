package synth

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// harnessVersion names the generator as the harness in session_start, so a
// synthetic session is never mistaken for a recorded one.
const harnessVersion = "retrace-synth/1"

// droppedOutput is what compaction leaves of a tool result, as agent does.
const droppedOutput = "[output removed to save context; re-run the tool if needed]"

// model is one provider/model pair a session may use, with its prices in
// USD per million tokens.
type model struct {
	provider, name                 string
	in, out, cacheRead, cacheWrite float64
	maxTokens                      int
	tokensPerSecond, ttftMedianMs  float64
}

var models = []weighted[model]{
	{45, model{provider: "anthropic", name: "claude-sonnet-4-5", in: 3, out: 15, cacheRead: 0.3, cacheWrite: 3.75, maxTokens: 16384, tokensPerSecond: 70, ttftMedianMs: 900}},
	{15, model{provider: "anthropic", name: "claude-haiku-4-5", in: 1, out: 5, cacheRead: 0.1, cacheWrite: 1.25, maxTokens: 8192, tokensPerSecond: 140, ttftMedianMs: 450}},
	{10, model{provider: "anthropic", name: "claude-opus-4-1", in: 15, out: 75, cacheRead: 1.5, cacheWrite: 18.75, maxTokens: 32000, tokensPerSecond: 40, ttftMedianMs: 1500}},
	{20, model{provider: "openai", name: "gpt-5", in: 1.25, out: 10, cacheRead: 0.125, maxTokens: 16384, tokensPerSecond: 60, ttftMedianMs: 1100}},
	{10, model{provider: "openai", name: "gpt-5-mini", in: 0.25, out: 2, cacheRead: 0.025, maxTokens: 8192, tokensPerSecond: 120, ttftMedianMs: 600}},
}

// callKind is what a call does, which decides its latency, its output, how
// the permission chain treats it and how it fails.
type callKind int

const (
	kindRead callKind = iota
	kindWrite
	kindEdit
	kindGrep
	kindGlob
	kindLs
	kindBashRO
	kindBashTest
	kindBashOther
	kindBashRuleDenied
	kindBashDangerous
	kindBashAskRule
	kindTodo
	kindSearch
	kindMCP
	kindUnknown
)

// The phases of a task: explore the code, change it, verify the change.
// Each weighs the kinds of call a model makes in it.
var (
	explore = []weighted[callKind]{{40, kindRead}, {18, kindGrep}, {12, kindGlob}, {6, kindLs}, {9, kindBashRO}, {4, kindTodo}, {2, kindBashTest}}
	change  = []weighted[callKind]{{26, kindRead}, {34, kindEdit}, {9, kindWrite}, {8, kindGrep}, {10, kindBashTest}, {4, kindBashOther}, {3, kindTodo}, {2, kindBashRO}}
	verify  = []weighted[callKind]{{38, kindBashTest}, {16, kindRead}, {18, kindEdit}, {9, kindBashRO}, {5, kindGrep}, {6, kindBashOther}, {3, kindTodo}}
)

// ending is how a session is planned to end, unless a limit ends it first.
type ending int

const (
	endNatural ending = iota
	endAbort
	endError
	endStuck
	endRefused
	endMaxTokens
)

// hook is a configured hook: a name, a phase and the tools it matches.
type hook struct {
	name  string
	phase trajectory.HookPhase
	tools map[string]bool // nil matches every tool
	// block is the chance a pre hook blocks a matching call.
	block float64
}

// call is one tool_use of a response on its way through the executor.
type call struct {
	id, name string
	kind     callKind
	spec     *toolSpec
	input    json.RawMessage
	invalid  bool
	safe     bool
	// op identifies the operation for session memory and the denial fuse.
	op   string
	rule string
	// What the permission chain looks at besides the tool.
	secret, outside, protected, inRuleScope bool
	// inputChanged is set when a PreToolUse hook rewrote the input.
	inputChanged bool

	// Set by the pipeline: when the call finished, and how.
	done time.Time
	out  outcome
	// shown, when set, is the outcome recorded in place of out: a failure
	// a Shift planted. The session acts on out (what runs next, the
	// context's size), so the plant changes nothing else.
	shown *outcome
}

// outcome is how a call ended.
type outcome struct {
	kind      trajectory.FailureKind // "" for success
	code      string
	dur       time.Duration
	bytes     int64
	text      string
	truncated bool
	ran       bool
}

// session generates one session's events into buf.
type session struct {
	r     *rand.Rand
	id    string
	start time.Time
	now   time.Time
	last  time.Time // of the last event
	buf   []byte
	seq   int64
	turn  int
	err   error

	model       model
	interactive bool
	perm        trajectory.PermissionMode
	proj        project
	catalog     []toolSpec
	hasMCP      bool
	mcpLoaded   bool
	enabled     map[trajectory.DefenseName]bool
	triggered   map[trajectory.DefenseName]int
	hooks       []hook
	allowTests  bool
	allowOther  bool
	allowEdits  bool
	denyRules   bool
	limits      trajectory.Limits
	system      string

	history    []trajectory.Message
	hashes     []string
	conv       trajectory.Conversation // what the previous request sent, for v2's messages_kept
	msgBytes   []int
	sent       int // messages the previous request already carried
	reminders  []trajectory.ContentBlock
	remindered map[string]int
	toolNames  []string
	toolsHash  string
	toolBytes  int

	ctxTokens    int64 // the next request's prompt size
	cached       int64 // tokens the provider has cached from the last request
	cacheBroken  bool
	lastResponse time.Time

	usage      trajectory.Usage
	calls      int
	failures   int
	remembered map[string]bool
	denials    map[string]int
	stuckNotes int // repeated-readonly reminders so far
	stuckReads int // identical reads of a stuck session so far
	turns      int // the planned length
	fixedTurns int // Options.Turns: the planned length when above 0

	emptyRetries int
	truncations  int
	lastDenied   *call

	// plant is the fault this session is generated to carry, if any;
	// only denial_loop changes how the session is generated (the fuse
	// never acts and the model always retries a denied call), the other
	// faults are planted in the finished events.
	plant string

	// shifts are the planted changes by tool (Options.Shifts), drawing
	// from shiftR, a stream of their own; nil without shifts.
	shifts map[string]Shift
	shiftR *rand.Rand
	// planted counts the failures the shifts planted that were recorded.
	planted int
}

func newSession(r *rand.Rand, id string, start time.Time, buf []byte) *session {
	return &session{r: r, id: id, start: start, now: start, buf: buf,
		triggered: map[trajectory.DefenseName]int{}, remembered: map[string]bool{},
		denials: map[string]int{}, remindered: map[string]int{}}
}

// emit appends one event at the current time, then lets a little recorder
// time pass so that timestamps strictly increase.
func (g *session) emit(turn int, p trajectory.Payload) {
	g.seq++
	var err error
	g.buf, err = trajectory.AppendEvent(g.buf, trajectory.NewEvent(g.id, g.seq, g.now, turn, p))
	if err != nil && g.err == nil {
		g.err = err
	}
	g.buf = append(g.buf, '\n')
	g.last = g.now
	g.now = g.now.Add(time.Duration(3+g.r.IntN(40)) * time.Microsecond)
}

func (g *session) advance(d time.Duration) { g.now = g.now.Add(d) }

func (g *session) advanceTo(t time.Time) {
	if t.After(g.now) {
		g.now = t
	}
}

// run generates the whole session.
func (g *session) run() {
	g.configure()
	g.turns = int(math.Min(40, math.Max(1, math.Round(math.Exp(1.95+0.75*g.r.NormFloat64())))))
	if g.fixedTurns > 0 {
		g.turns = g.fixedTurns
		if g.limits.MaxTurns > 0 && g.limits.MaxTurns < g.turns {
			g.limits.MaxTurns = g.turns
		}
	}
	plan, planTurn := g.planEnding(g.turns)
	for {
		if reason, stop := g.beforeRequest(); stop {
			g.end(reason, "")
			return
		}
		g.turn++
		g.request()
		if plan == endError && g.turn == planTurn {
			g.end(trajectory.EndError, g.modelFailure())
			return
		}
		g.transientErrors()
		// A stuck session keeps calling until the guard stops it.
		final := g.turn >= g.turns && plan != endStuck
		switch {
		case final && plan == endRefused:
			g.respondText(trajectory.StopRefusal, "I can't help with that request.")
			g.end(trajectory.EndRefused, "")
			return
		case final && plan == endMaxTokens:
			g.respondText(trajectory.StopMaxTokens, "Here is the full rewrite of the module:\n\npackage ")
			g.end(trajectory.EndMaxTokens, "")
			return
		case final:
			g.respondText(trajectory.StopEndTurn, oneOf(g.r, answers))
			g.end(trajectory.EndTurn, "")
			return
		}
		abort := plan == endAbort && g.turn == planTurn
		stuck := plan == endStuck && g.turn >= planTurn
		if stop, reason := g.toolTurn(abort, stuck); stop {
			g.end(reason, "")
			return
		}
	}
}

// configure draws the session's setup and emits session_start.
func (g *session) configure() {
	r := g.r
	g.model = pick(r, models)
	g.interactive = chance(r, 0.4)
	if g.interactive {
		g.perm = pick(r, []weighted[trajectory.PermissionMode]{{66, trajectory.PermDefault}, {26, trajectory.PermAcceptEdits}, {3, trajectory.PermPlan}, {5, trajectory.PermBypass}})
	} else {
		g.perm = pick(r, []weighted[trajectory.PermissionMode]{{15, trajectory.PermDefault}, {57, trajectory.PermAcceptEdits}, {3, trajectory.PermPlan}, {25, trajectory.PermBypass}})
	}
	g.proj = oneOf(r, projects)
	// Headless sessions are configured to run their tests unattended.
	g.allowTests = chance(r, 0.6) || !g.interactive && chance(r, 0.9)
	g.allowOther = chance(r, 0.3) || !g.interactive && chance(r, 0.85)
	g.allowEdits = chance(r, 0.45) || !g.interactive && g.perm == trajectory.PermDefault
	g.denyRules = chance(r, 0.6)
	if g.plant == "denial_loop" {
		// Headless, asking for every test and command: calls get denied.
		g.interactive, g.perm, g.allowTests, g.allowOther = false, trajectory.PermDefault, false, false
	}
	g.hasMCP = chance(r, 0.2)
	g.catalog = slices.Clone(builtins)
	if g.hasMCP {
		g.catalog = append(g.catalog, mcpTools...)
	}
	defenses := []trajectory.DefenseName{
		trajectory.DefenseEmptyInputRetry, trajectory.DefenseEndTurnFallthrough, trajectory.DefenseTruncatedToolUse,
		trajectory.DefenseRepeatedReadOnly, trajectory.DefenseLowYieldSpin, trajectory.DefenseDenialFuse, trajectory.DefenseReminderCap,
	}
	if chance(r, 0.15) {
		defenses = append(defenses, trajectory.DefenseLoopDetection)
	}
	g.enabled = map[trajectory.DefenseName]bool{}
	for _, d := range defenses {
		g.enabled[d] = true
	}
	if chance(r, 0.3) {
		edits := map[string]bool{"write": true, "edit": true}
		g.hooks = append(g.hooks, hook{name: "no-secrets", phase: trajectory.HookPre, tools: edits, block: 0.05},
			hook{name: "fmt-on-save", phase: trajectory.HookPost, tools: edits})
		if chance(r, 0.35) {
			g.hooks = append(g.hooks, hook{name: "audit-log", phase: trajectory.HookPre, block: 0.004})
		}
		if chance(r, 0.25) {
			g.hooks = append(g.hooks, hook{name: "lint-staged", phase: trajectory.HookPre, tools: map[string]bool{"bash": true}, block: 0.03})
		}
	}
	g.limits = trajectory.Limits{MaxTurns: pick(r, []weighted[int]{{50, 30}, {20, 25}, {15, 20}, {10, 50}, {5, 0}})}
	if chance(r, 0.3) {
		g.limits.TokenBudget = pick(r, []weighted[int64]{{2, 300_000}, {2, 1_000_000}, {1, 2_000_000}})
	}
	if chance(r, 0.08) {
		g.limits.CostBudget = pick(r, []weighted[float64]{{1, 0.5}, {2, 1}, {1, 2}})
	}
	g.system = "You are a coding agent working in the " + g.proj.name + " repository. Use the tools to read, change and test code. Be concise."
	workspace := "/home/dev/src/" + g.proj.name
	tools := make([]trajectory.ToolInfo, len(g.catalog))
	for i, t := range g.catalog {
		source := t.source
		if source == "" {
			source = trajectory.ToolBuiltin
		}
		tools[i] = trajectory.ToolInfo{Name: t.name, DefinitionHash: trajectory.Hash(t.definition()), Source: source,
			Deferred: t.deferred, ReadOnly: t.readOnly, Display: t.display}
	}
	mode := trajectory.ModeHeadless
	if g.interactive {
		mode = trajectory.ModeInteractive
	}
	config := fmt.Sprintf("%s|%s|%v|%v|%v|%v|%d", g.model.name, g.perm, g.allowTests, g.allowEdits, g.denyRules, len(g.hooks), g.limits.MaxTurns)
	g.emit(0, &trajectory.SessionStart{
		HarnessVersion:    harnessVersion,
		Provider:          g.model.provider,
		Model:             g.model.name,
		Mode:              mode,
		PermissionMode:    g.perm,
		ConfigHash:        trajectory.Hash([]byte(config)),
		SystemPromptHash:  trajectory.Hash([]byte(g.system)),
		Tools:             tools,
		Defenses:          defenses,
		Limits:            &g.limits,
		Workspace:         workspace,
		WorkspaceSnapshot: trajectory.BlobRef([]byte("workspace:" + g.id)),
		Tags:              map[string]string{"source": "synth", "project": g.proj.name},
	})
	g.setTools()
	prompt := fmt.Sprintf(oneOf(r, prompts), oneOf(r, g.proj.files))
	g.history = append(g.history, trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: prompt}}})
	g.ctxTokens = logNormal(r, 6500, 0.3) + logNormal(r, 60, 0.8)
}

// setTools computes the tool list sent with each request: the builtins
// and, once tool_search loaded them, the MCP tools.
func (g *session) setTools() {
	g.toolNames = g.toolNames[:0]
	var defs []byte
	for _, t := range g.catalog {
		if t.deferred && !g.mcpLoaded {
			continue
		}
		g.toolNames = append(g.toolNames, t.name)
		defs = append(defs, t.definition()...)
	}
	g.toolsHash = trajectory.Hash(defs)
	g.toolBytes = len(defs) * 12 // the real definitions are about this much longer
}

func (g *session) planEnding(turns int) (ending, int) {
	r := g.r
	x := r.Float64()
	switch {
	case x < 0.045:
		if g.interactive && turns > 1 {
			return endAbort, 1 + r.IntN(turns-1)
		}
	case x < 0.07:
		return endError, 1 + r.IntN(turns)
	case x < 0.085 && turns > 1:
		return endStuck, 1 + r.IntN(turns-1)
	case x < 0.09:
		return endRefused, 0
	case x < 0.096:
		return endMaxTokens, 0
	}
	return endNatural, 0
}

// beforeRequest checks the limits in the loop's order and relieves
// context pressure.
func (g *session) beforeRequest() (trajectory.EndReason, bool) {
	if g.limits.MaxTurns > 0 && g.turn >= g.limits.MaxTurns {
		return trajectory.EndMaxTurns, true
	}
	if b := g.limits.TokenBudget; b > 0 && totalTokens(g.usage) >= b {
		return trajectory.EndTokenBudget, true
	}
	if b := g.limits.CostBudget; b > 0 && g.cost() >= b {
		return trajectory.EndCostBudget, true
	}
	if g.turn > 0 && (g.ctxTokens > 100_000 || g.turn >= 14 && chance(g.r, 0.04)) {
		g.compact()
	}
	if len(g.reminders) > 0 {
		last := &g.history[len(g.history)-1]
		if last.Role == trajectory.RoleUser {
			last.Content = append(last.Content, g.reminders...)
		} else {
			g.history = append(g.history, trajectory.Message{Role: trajectory.RoleUser, Content: g.reminders})
		}
		g.reminders = nil
	}
	return "", false
}

func totalTokens(u trajectory.Usage) int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheCreationTokens
}

func (g *session) cost() float64 {
	m, u := g.model, g.usage
	return (float64(u.InputTokens)*m.in + float64(u.OutputTokens)*m.out +
		float64(u.CacheReadTokens)*m.cacheRead + float64(u.CacheCreationTokens)*m.cacheWrite) / 1e6
}

// compact drops the oldest tool outputs until the context is about half,
// the way agent's loop does, and breaks the prompt cache.
func (g *session) compact() {
	before := g.ctxTokens
	target := before / 2
	first := -1
	for i := 0; i < len(g.history)-1 && g.ctxTokens > target; i++ {
		m := &g.history[i]
		if m.Role != trajectory.RoleUser {
			continue
		}
		changed := false
		content := slices.Clone(m.Content)
		for j := range content {
			if content[j].Type == trajectory.BlockToolResult && content[j].Content != droppedOutput {
				content[j].Content = droppedOutput
				changed = true
			}
		}
		if changed {
			m.Content = content
			g.ctxTokens -= before / int64(max(2, len(g.history)/2))
			if first < 0 {
				first = i
			}
		}
	}
	if first < 0 {
		return
	}
	g.ctxTokens = max(g.ctxTokens, before*2/5)
	g.sent = min(g.sent, first)
	g.hashes = g.hashes[:min(len(g.hashes), first)]
	g.msgBytes = g.msgBytes[:min(len(g.msgBytes), first)]
	g.cacheBroken = true
	g.emit(g.turn, &trajectory.Compaction{Strategy: trajectory.CompactDrop, MessagesBefore: len(g.history),
		MessagesAfter: len(g.history), TokensBefore: before, TokensAfter: g.ctxTokens})
}

// request emits the model_request of the current turn: the hashes and the
// content of the messages after those the previous request sent and this
// one keeps, and the prefix hash of them all.
func (g *session) request() {
	for i := len(g.hashes); i < len(g.history); i++ {
		b, _ := json.Marshal(g.history[i]) // a Message always marshals
		g.hashes = append(g.hashes, trajectory.Hash(b))
		g.msgBytes = append(g.msgBytes, len(b))
	}
	size := len(g.system) + g.toolBytes + 120
	for _, n := range g.msgBytes {
		size += n
	}
	req := &trajectory.ModelRequest{
		RequestBytes: int64(size),
		SystemHash:   trajectory.Hash([]byte(g.system)),
		ToolsHash:    g.toolsHash,
		ToolNames:    slices.Clone(g.toolNames),
		MaxTokens:    g.model.maxTokens,
		Stream:       true,
	}
	kept := g.conv.Encode(req, g.hashes)
	req.NewMessages = g.history[min(g.sent, kept):]
	if g.turn == 1 {
		req.System = g.system
	}
	g.advance(time.Duration(200+g.r.IntN(2000)) * time.Microsecond)
	g.emit(g.turn, req)
	g.sent = len(g.history)
}

// transientErrors sometimes records failed attempts the provider client
// retried before the response came.
func (g *session) transientErrors() {
	if !chance(g.r, 0.03) {
		return
	}
	for attempt := 1; attempt <= 1+g.r.IntN(2); attempt++ {
		e := g.modelError(attempt, true)
		g.emit(g.turn, e)
	}
}

func (g *session) modelError(attempt int, retry bool) *trajectory.ModelError {
	r := g.r
	f := pick(r, modelFaults)
	kind, status := f.kind, f.status
	e := &trajectory.ModelError{ErrorKind: kind, StatusCode: status, Attempt: attempt, WillRetry: retry}
	d := time.Duration(logNormal(r, 120, 0.8)) * time.Millisecond
	if kind == trajectory.ModelFirstByteTimeout {
		d = 60 * time.Second
	}
	e.DurationMs = trajectory.Millis(d)
	g.advance(d)
	if retry {
		wait := time.Duration(500*(1<<attempt)+r.IntN(1000)) * time.Millisecond
		if status == 429 {
			wait = time.Duration(2+r.IntN(20)) * time.Second
			e.RetryAfterMs = trajectory.Millis(wait)
		}
		g.advance(wait)
	}
	return e
}

// modelFault is a way a model call fails, with its HTTP status.
type modelFault struct {
	kind   trajectory.ModelErrorKind
	status int
}

var modelFaults = []weighted[modelFault]{
	{45, modelFault{trajectory.ModelOverloaded, 529}},
	{30, modelFault{trajectory.ModelRateLimited, 429}},
	{15, modelFault{trajectory.ModelServerError, 500}},
	{10, modelFault{trajectory.ModelFirstByteTimeout, 0}},
}

// modelFailure records a request that failed for good after its retries
// and returns the session's error code.
func (g *session) modelFailure() string {
	attempts := 1 + g.r.IntN(4)
	var last *trajectory.ModelError
	for a := 1; a <= attempts; a++ {
		last = g.modelError(a, a < attempts)
		g.emit(g.turn, last)
	}
	return "model_" + string(last.ErrorKind)
}

// respond emits a model_response with the given content and usage drawn
// for the current context, and accounts for the tokens.
func (g *session) respond(content []trajectory.ContentBlock, stop trajectory.StopReason, outTokens int64) {
	r := g.r
	prompt := g.ctxTokens
	u := trajectory.Usage{OutputTokens: outTokens}
	miss := g.cached == 0 || g.cacheBroken || g.now.Sub(g.lastResponse) > 5*time.Minute || chance(r, 0.03)
	if g.model.provider == "anthropic" {
		tail := int64(1 + r.IntN(12))
		if miss {
			u.CacheCreationTokens = prompt - tail
		} else {
			u.CacheReadTokens = min(g.cached, prompt-tail)
			u.CacheCreationTokens = prompt - tail - u.CacheReadTokens
		}
		u.InputTokens = tail
		g.cached = prompt - tail
	} else {
		if !miss && g.cached >= 1024 {
			u.CacheReadTokens = g.cached / 128 * 128
		}
		u.InputTokens = prompt - u.CacheReadTokens
		g.cached = prompt
	}
	g.cacheBroken = false
	ttft := g.model.ttftMedianMs * math.Exp(0.45*r.NormFloat64()) * (1 + float64(prompt)/150_000)
	dur := ttft + float64(outTokens)*1000/g.model.tokensPerSecond*math.Exp(0.2*r.NormFloat64())
	d := time.Duration(dur * float64(time.Millisecond))
	g.advance(d)
	g.emit(g.turn, &trajectory.ModelResponse{Content: content, StopReason: stop, StopReasonRaw: rawStop(g.model.provider, stop),
		Usage: u, TTFTMs: math.Round(ttft*10) / 10, DurationMs: trajectory.Millis(d)})
	g.lastResponse = g.now
	g.usage.InputTokens += u.InputTokens
	g.usage.OutputTokens += u.OutputTokens
	g.usage.CacheReadTokens += u.CacheReadTokens
	g.usage.CacheCreationTokens += u.CacheCreationTokens
	g.ctxTokens += outTokens
}

// rawStop is the provider's own spelling of a stop reason.
func rawStop(provider string, s trajectory.StopReason) string {
	if provider != "openai" {
		return string(s)
	}
	switch s {
	case trajectory.StopToolUse:
		return "tool_calls"
	case trajectory.StopEndTurn:
		return "stop"
	case trajectory.StopMaxTokens:
		return "length"
	case trajectory.StopRefusal:
		return "content_filter"
	}
	return string(s)
}

func (g *session) respondText(stop trajectory.StopReason, text string) {
	out := logNormal(g.r, 220, 0.7)
	g.respond([]trajectory.ContentBlock{{Type: trajectory.BlockText, Text: text}}, stop, out)
}

// end emits session_end with totals that match the events.
func (g *session) end(reason trajectory.EndReason, code string) {
	g.advance(time.Duration(100+g.r.IntN(900)) * time.Microsecond)
	g.emit(g.turn, &trajectory.SessionEnd{Reason: reason, Turns: g.turn, Usage: g.usage, ToolCalls: g.calls,
		ToolFailures: g.failures, DurationMs: trajectory.Millis(g.now.Sub(g.start)),
		CostUSD: math.Round(g.cost()*1e6) / 1e6, ErrorCode: code})
}

// newID returns a tool_use id in the provider's form.
func (g *session) newID() string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	prefix, n := "toolu_01", 22
	if g.model.provider == "openai" {
		prefix, n = "call_", 24
	}
	b := make([]byte, 0, len(prefix)+n)
	b = append(b, prefix...)
	for range n {
		b = append(b, alphabet[g.r.IntN(len(alphabet))])
	}
	return string(b)
}

// remind queues a harness reminder for the next request, capped per kind
// as agent's reminders are; past the cap the reminder_cap defense acts.
func (g *session) remind(kind, key, text string) {
	if g.remindered[kind] >= 3 && g.enabled[trajectory.DefenseReminderCap] {
		g.trigger(trajectory.DefenseReminderCap, trajectory.ActionSuppress, "", map[string]string{"kind": kind})
		return
	}
	g.remindered[kind]++
	g.emit(g.turn, &trajectory.Reminder{Kind: kind, DedupKey: key, Role: trajectory.RoleUser, Text: text})
	g.reminders = append(g.reminders, trajectory.ContentBlock{Type: trajectory.BlockText, Text: "<harness-reminder>" + text + "</harness-reminder>"})
	g.ctxTokens += int64(len(text)/4 + 10)
}

func (g *session) trigger(d trajectory.DefenseName, a trajectory.DefenseAction, toolUseID string, evidence map[string]string) {
	g.triggered[d]++
	g.emit(g.turn, &trajectory.DefenseTrigger{Defense: d, Action: a, ToolUseID: toolUseID, Count: g.triggered[d], Evidence: evidence})
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// phaseOf names the phase of a task a turn is in, and the calls it weighs.
func phaseOf(turn, turns int) (string, []weighted[callKind]) {
	f := float64(turn) / float64(turns)
	switch {
	case f < 0.35:
		return "explore", explore
	case f < 0.75:
		return "change", change
	}
	return "verify", verify
}

func dirOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i > 0 {
		return path[:i]
	}
	return "."
}
