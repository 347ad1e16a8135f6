package mockllm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
	"go.yaml.in/yaml/v3"
)

// ErrOutOfTurns means a scripted model was asked for more turns than its
// script holds.
var ErrOutOfTurns = errors.New("the script has no more turns")

// ErrExpectation means a request did not meet the expect checks of the
// turn that was to answer it.
var ErrExpectation = errors.New("the request does not meet the turn's expectation")

// ScriptError is a problem in a script file, located at a line.
type ScriptError struct {
	File string
	Line int
	Msg  string
}

// Error formats the problem as file:line: message.
func (e *ScriptError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// TurnError is a request that a script could not answer: it ran out of
// turns (ErrOutOfTurns) or the request missed an expectation
// (ErrExpectation). Turn counts from 1, within the conversation.
type TurnError struct {
	// Conversation names the conversation whose turn it is: the name of a
	// script conversation, or the key of a routed one ("" when the script
	// has one conversation and does not route).
	Conversation string
	Turn         int
	// Field is the expect field that failed, when Err is ErrExpectation.
	Field string
	Msg   string
	Err   error
}

// Error formats the problem as "turn N: message", with the conversation
// first when there is one.
func (e *TurnError) Error() string {
	if e.Conversation != "" {
		return fmt.Sprintf("conversation %s turn %d: %s", e.Conversation, e.Turn, e.Msg)
	}
	return fmt.Sprintf("turn %d: %s", e.Turn, e.Msg)
}

// Unwrap returns ErrOutOfTurns or ErrExpectation.
func (e *TurnError) Unwrap() error { return e.Err }

// Fault is a failure a turn injects. Status faults fail the first Times
// attempts of the turn with an HTTP error; the others shape the reply of
// the attempt that succeeds.
type Fault struct {
	// Status is the HTTP status of a failing attempt (429, 500, 529, ...).
	Status int
	// RetryAfter is sent as Retry-After (and Retry-After-Ms) with Status.
	RetryAfter time.Duration
	// Times is how many attempts fail with Status before one succeeds.
	Times int
	// MaxTokensInToolUse cuts the reply in the middle of its last tool_use
	// input, with stop reason max_tokens (finish_reason length).
	MaxTokensInToolUse bool
	// MissingStopReason sends a null stop reason.
	MissingStopReason bool
	// Stall stops sending for this long in the middle of the reply (before
	// the first byte of a non-streamed one), or until the request is cancelled.
	Stall time.Duration
	// MalformedSSE sends a broken frame and ends the reply there (a
	// non-streamed reply gets a truncated JSON body).
	MalformedSSE bool
}

// Reply is what a Source answers one request with: a response, or a
// failing attempt when Fault.Status is set.
type Reply struct {
	// Turn is the 1-based script turn (or recorded response) answering,
	// counted within its conversation.
	Turn int
	// Conversation names the conversation that answered ("" when the
	// source has one and does not route).
	Conversation string
	// Response is shared with the source and must not be modified.
	Response llm.Response
	Fault    Fault
}

// Source hands a model reply for each request; Script and Replay are
// sources. Implementations must be safe for concurrent use.
type Source interface {
	// Model is the model name to report when a request names none.
	Model() string
	// Next returns the reply to req.
	Next(ctx context.Context, req *llm.Request) (Reply, error)
}

// Script is a scripted model: each request gets the next turn of a YAML
// script. A script holds one conversation (`turns:`), or several
// (`conversations:`, each with its own matcher and turns), so that an
// agent with subagents or parallel sessions gets each conversation's own
// next turn however their requests interleave. It is an llm.Provider for
// in-process use and a Source for the HTTP Server. It is safe for
// concurrent use.
type Script struct {
	name   string
	model  string
	repeat bool
	// convs holds the script's conversations; the `turns:` format has one
	// whose matcher is empty.
	convs []conversation
	// routed is set for the `conversations:` format: requests go to the
	// first conversation whose matcher holds.
	routed bool
	opts   ScriptOptions

	mu       sync.Mutex
	states   map[string]*seqState // per conversation; bounded by opts.MaxConversations
	order    []*seqState          // the states in the order they began, for Verify
	problems []error              // the first maxProblems
	more     int                  // problems beyond those
}

// ScriptOptions tune how a Script routes requests.
type ScriptOptions struct {
	// Route groups the requests of a `turns:` script into conversations,
	// each playing the turns from the first: RouteHeader per
	// ConversationHeader value, RoutePrompt per system prompt and first
	// user message. A `conversations:` script routes by its matchers and
	// refuses any Route but RouteNone.
	Route Route
	// MaxConversations bounds the conversations tracked at once
	// (DefaultMaxConversations when 0). A request that would start one
	// more fails with ErrTooManyConversations.
	MaxConversations int
}

// conversation is one turn sequence of a script.
type conversation struct {
	name  string
	line  int
	match matcher
	turns []turn
}

// matcher picks the requests of a script conversation; every field set
// must hold.
type matcher struct {
	header            string
	hasHeader         bool
	systemContains    string
	firstUserContains string
}

func (m *matcher) matches(ctx context.Context, req *llm.Request) bool {
	if m.hasHeader {
		if id, ok := ConversationFrom(ctx); !ok || id != m.header {
			return false
		}
	}
	if m.systemContains != "" && !strings.Contains(req.System, m.systemContains) {
		return false
	}
	if m.firstUserContains != "" {
		first := ""
		for i := range req.Messages {
			if req.Messages[i].Role == trajectory.RoleUser {
				first = messageText(&req.Messages[i])
				break
			}
		}
		if !strings.Contains(first, m.firstUserContains) {
			return false
		}
	}
	return true
}

func (m *matcher) String() string {
	var parts []string
	if m.hasHeader {
		parts = append(parts, fmt.Sprintf("header %s: %q", ConversationHeader, m.header))
	}
	if m.systemContains != "" {
		parts = append(parts, fmt.Sprintf("system_contains %q", m.systemContains))
	}
	if m.firstUserContains != "" {
		parts = append(parts, fmt.Sprintf("first_user_contains %q", m.firstUserContains))
	}
	return strings.Join(parts, " and ")
}

// seqState is where one conversation is in its turns.
type seqState struct {
	conv   int    // index in Script.convs
	label  string // the conversation's name in errors and replies
	next   int    // requests answered with a turn (successful attempts)
	failed int    // status-fault attempts served for the current turn
	// cache is the conversation's prompt cache, which computes the usage
	// of turns that do not script theirs.
	cache promptCache
}

type turn struct {
	line   int
	expect expectation
	// resp is precomputed at parse time so a turn costs a lock and a copy.
	resp        llm.Response
	usageScript bool
	outBytes    int
	fault       Fault
}

type expectation struct {
	toolResults      []expectedResult
	lastUserContains string
	systemContains   string
	tools            []string
}

type expectedResult struct {
	id      string
	isError *bool
}

// LoadScript reads and parses a script file.
func LoadScript(path string) (*Script, error) {
	return LoadScriptWith(path, ScriptOptions{})
}

// LoadScriptWith reads and parses a script file with routing options.
func LoadScriptWith(path string, opts ScriptOptions) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read mock script: %w", err)
	}
	return ParseScriptWith(data, path, opts)
}

// Name implements llm.Provider.
func (s *Script) Name() string { return "mock" }

// Model returns the script's model name ("mock-1" when it sets none).
func (s *Script) Model() string { return s.model }

// Len returns the number of turns in the script, over all conversations.
func (s *Script) Len() int {
	n := 0
	for _, c := range s.convs {
		n += len(c.turns)
	}
	return n
}

// Conversations returns the names of the script's conversations, in
// order; a `turns:` script has one, named "".
func (s *Script) Conversations() []string {
	out := make([]string, len(s.convs))
	for i, c := range s.convs {
		out[i] = c.name
	}
	return out
}

// Used returns how many turns have been answered so far, over all
// conversations.
func (s *Script) Used() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, st := range s.order {
		n += st.next
	}
	return n
}

// Verify reports what went wrong over the script's life: every failed
// expectation, request that matched no conversation, and turns left
// unused (unless the script repeats), conversation by conversation.
// Tests call it at the end, like a strict stub that fails on unused calls.
func (s *Script) Verify() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := slices.Clone(s.problems)
	if s.more > 0 {
		errs = append(errs, fmt.Errorf("%s: %d more requests failed like the ones above", s.name, s.more))
	}
	if s.repeat {
		return errors.Join(errs...)
	}
	begun := map[int]bool{}
	for _, st := range s.order {
		begun[st.conv] = true
		if turns := s.convs[st.conv].turns; st.next < len(turns) {
			errs = append(errs, fmt.Errorf("%s: %s%d of %d turns were used; turn %d (line %d) was never requested",
				s.name, conversationPrefix(st.label), st.next, len(turns), st.next+1, turns[st.next].line))
		}
	}
	for i, c := range s.convs {
		if !begun[i] {
			errs = append(errs, fmt.Errorf("%s: %s0 of %d turns were used; turn 1 (line %d) was never requested",
				s.name, conversationPrefix(c.name), len(c.turns), c.turns[0].line))
		}
	}
	return errors.Join(errs...)
}

func conversationPrefix(label string) string {
	if label == "" {
		return ""
	}
	return "conversation " + label + ": "
}

// maxProblems bounds the problems a Script keeps for Verify, so a server
// hammered with bad requests does not grow.
const maxProblems = 100

// problem keeps err for Verify, or counts it past maxProblems.
func (s *Script) problem(err error) {
	if len(s.problems) < maxProblems {
		s.problems = append(s.problems, err)
		return
	}
	s.more++
}

// state returns the conversation req belongs to, starting it if it is new.
func (s *Script) state(ctx context.Context, req *llm.Request) (*seqState, error) {
	conv, key, label := 0, "", ""
	switch {
	case s.routed:
		conv = -1
		for i := range s.convs {
			if s.convs[i].match.matches(ctx, req) {
				conv = i
				break
			}
		}
		if conv < 0 {
			id, _ := ConversationFrom(ctx)
			return nil, fmt.Errorf("%s: %w (%s %q, system prompt %q, first user message %q); the script's conversations match %s",
				s.name, ErrNoConversation, ConversationHeader, id, clip(req.System, 80), clip(firstUserText(req), 80), s.matchers())
		}
		key, label = s.convs[conv].name, s.convs[conv].name
	case s.opts.Route == RouteHeader:
		key, _ = ConversationFrom(ctx)
		label = strconv.Quote(key)
	case s.opts.Route == RoutePrompt:
		key = PromptKey(req)
		label = "prompt:" + key
	}
	if st, ok := s.states[key]; ok {
		return st, nil
	}
	maxConv := cmpOrInt(s.opts.MaxConversations, DefaultMaxConversations)
	if len(s.states) >= maxConv {
		return nil, fmt.Errorf("%s: %w: %d are tracked and request %s would start another; raise the bound or find out why the agent starts so many conversations",
			s.name, ErrTooManyConversations, len(s.states), label)
	}
	if s.states == nil {
		s.states = map[string]*seqState{}
	}
	st := &seqState{conv: conv, label: label}
	s.states[key] = st
	s.order = append(s.order, st)
	return st, nil
}

func (s *Script) matchers() string {
	parts := make([]string, len(s.convs))
	for i := range s.convs {
		parts[i] = s.convs[i].name + ": " + s.convs[i].match.String()
	}
	return strings.Join(parts, "; ")
}

// firstUserText is the text of the request's first user message, for
// error messages.
func firstUserText(req *llm.Request) string {
	for i := range req.Messages {
		if req.Messages[i].Role == trajectory.RoleUser {
			return strings.TrimSuffix(messageText(&req.Messages[i]), "\n")
		}
	}
	return ""
}

func cmpOrInt(a, b int) int {
	if a > 0 {
		return a
	}
	return b
}

// Next implements Source: it finds the request's conversation, checks req
// against that conversation's next turn and returns the turn's reply, or
// a failing attempt while the turn's status fault has attempts left.
func (s *Script) Next(ctx context.Context, req *llm.Request) (Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.state(ctx, req)
	if err != nil {
		s.problem(err)
		return Reply{}, err
	}
	turns := s.convs[st.conv].turns
	idx := st.next
	if idx >= len(turns) {
		if !s.repeat {
			err := &TurnError{Conversation: st.label, Turn: idx + 1, Err: ErrOutOfTurns,
				Msg: fmt.Sprintf("the script %s has %d turns here and this is request %d; add a turn to the script or find out why the agent called the model again", s.name, len(turns), idx+1)}
			s.problem(err)
			return Reply{}, err
		}
		idx %= len(turns)
	}
	t := &turns[idx]
	if err := t.expect.check(idx+1, req); err != nil {
		var te *TurnError
		if errors.As(err, &te) {
			te.Conversation = st.label
		}
		s.problem(err)
		return Reply{}, err
	}
	if t.fault.Status != 0 && st.failed < t.fault.Times {
		st.failed++
		return Reply{Turn: idx + 1, Conversation: st.label, Fault: Fault{Status: t.fault.Status, RetryAfter: t.fault.RetryAfter, Times: t.fault.Times}}, nil
	}
	st.failed = 0
	st.next++
	r := Reply{Turn: idx + 1, Conversation: st.label, Response: t.resp, Fault: t.fault}
	r.Fault.Status, r.Fault.RetryAfter, r.Fault.Times = 0, 0, 0
	r.Response.Model = cmpOr(req.Model, s.model)
	if !t.usageScript {
		r.Response.Usage = st.cache.usage(req, time.Now())
		r.Response.Usage.OutputTokens = int64(t.outBytes/4 + 1)
	}
	return r, nil
}

// Complete implements llm.Provider.
func (s *Script) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return serveInProcess(ctx, s, &req, nil)
}

// Stream implements llm.Provider.
func (s *Script) Stream(ctx context.Context, req llm.Request, onEvent func(llm.StreamEvent)) (llm.Response, error) {
	return serveInProcess(ctx, s, &req, onEvent)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (e *expectation) check(turnNo int, req *llm.Request) error {
	fail := func(field, format string, args ...any) error {
		return &TurnError{Turn: turnNo, Field: field, Err: ErrExpectation, Msg: fmt.Sprintf(format, args...)}
	}
	var last *trajectory.Message
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == trajectory.RoleUser {
			last = &req.Messages[i]
			break
		}
	}
	for _, want := range e.toolResults {
		var got *trajectory.ContentBlock
		if last != nil {
			for i := range last.Content {
				if b := &last.Content[i]; b.Type == trajectory.BlockToolResult && b.ToolUseID == want.id {
					got = b
					break
				}
			}
		}
		errPart := ""
		if want.isError != nil {
			errPart = " with is_error " + strconv.FormatBool(*want.isError)
		}
		if got == nil {
			return fail("tool_results", "expected a tool_result for %s%s, the request has none (its last user message carries %s)", want.id, errPart, describeResults(last))
		}
		if want.isError != nil && got.IsError != *want.isError {
			return fail("tool_results", "expected a tool_result for %s%s, the request's has is_error %t", want.id, errPart, got.IsError)
		}
	}
	if e.lastUserContains != "" {
		text := ""
		if last != nil {
			text = messageText(last)
		}
		if !strings.Contains(text, e.lastUserContains) {
			return fail("last_user_contains", "expected the last user message to contain %q, it reads %q", e.lastUserContains, clip(text, 200))
		}
	}
	if e.systemContains != "" && !strings.Contains(req.System, e.systemContains) {
		return fail("system_contains", "expected the system prompt to contain %q, it reads %q", e.systemContains, clip(req.System, 200))
	}
	for _, name := range e.tools {
		found := false
		for _, t := range req.Tools {
			if t.Name == name {
				found = true
				break
			}
		}
		if !found {
			names := make([]string, len(req.Tools))
			for i, t := range req.Tools {
				names[i] = t.Name
			}
			return fail("tools", "expected the tool %q to be offered, the request offers [%s]", name, strings.Join(names, ", "))
		}
	}
	return nil
}

func describeResults(m *trajectory.Message) string {
	if m == nil {
		return "no user message at all"
	}
	var ids []string
	for _, b := range m.Content {
		if b.Type == trajectory.BlockToolResult {
			ids = append(ids, b.ToolUseID)
		}
	}
	if len(ids) == 0 {
		return "no tool_result"
	}
	return "tool_results for " + strings.Join(ids, ", ")
}

func messageText(m *trajectory.Message) string {
	var b strings.Builder
	for _, c := range m.Content {
		switch c.Type {
		case trajectory.BlockText:
			b.WriteString(c.Text)
		case trajectory.BlockToolResult:
			b.WriteString(c.Content)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// estimateTokens guesses a request's input tokens at four bytes a token:
// good enough for budgets and counters in tests, and cheap.
func estimateTokens(req *llm.Request) int64 {
	n := len(req.System)
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			n += 8 + len(b.Text) + len(b.Content) + len(b.Input) + len(b.PartialInput) + len(b.Name)
		}
	}
	return int64(n/4 + 1)
}

// ParseScript parses a script; name is used in error messages (the file path).
func ParseScript(data []byte, name string) (*Script, error) {
	return ParseScriptWith(data, name, ScriptOptions{})
}

// ParseScriptWith parses a script with routing options.
func ParseScriptWith(data []byte, name string, opts ScriptOptions) (*Script, error) {
	p := &parser{file: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, p.yamlError(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &ScriptError{File: name, Line: 1, Msg: "the script is empty; it needs at least `turns:` with one turn (see `retrace mock serve --help`)"}
	}
	if opts.MaxConversations < 0 {
		return nil, &ScriptError{File: name, Msg: "the bound on conversations must not be negative"}
	}
	if opts.Route < RouteNone || opts.Route > RoutePrompt {
		return nil, &ScriptError{File: name, Msg: fmt.Sprintf("unknown conversation route %s; use one of %s", opts.Route, strings.Join(Routes, ", "))}
	}
	s := &Script{name: name, model: "mock-1", opts: opts}
	root := doc.Content[0]
	fields, err := p.fields(root, "the script", "model", "repeat", "turns", "conversations")
	if err != nil {
		return nil, err
	}
	var turnsNode, convsNode *yaml.Node
	for _, f := range fields {
		switch f.key {
		case "model":
			if s.model, err = p.str(f.val, "model"); err != nil {
				return nil, err
			}
		case "repeat":
			if s.repeat, err = p.boolean(f.val, "repeat"); err != nil {
				return nil, err
			}
		case "turns":
			turnsNode = f.val
		case "conversations":
			convsNode = f.val
		}
	}
	switch {
	case turnsNode != nil && convsNode != nil:
		return nil, p.errf(convsNode, "the script has both `turns:` and `conversations:`; put the turns in a conversation or drop `conversations:`")
	case convsNode != nil:
		if opts.Route != RouteNone {
			return nil, p.errf(convsNode, "a script with `conversations:` routes requests by each conversation's `match:`; drop --route %s", opts.Route)
		}
		return p.conversations(s, convsNode)
	}
	if turnsNode == nil || turnsNode.Kind != yaml.SequenceNode || len(turnsNode.Content) == 0 {
		at := root
		if turnsNode != nil {
			at = turnsNode
		}
		return nil, p.errf(at, "`turns` must be a list with at least one turn, e.g. `turns: [{content: [{text: Done.}]}]` (or use `conversations:`)")
	}
	c := conversation{line: turnsNode.Line}
	if c.turns, err = p.turns(turnsNode); err != nil {
		return nil, err
	}
	s.convs = []conversation{c}
	return s, nil
}

// turns parses a list of turns.
func (p *parser) turns(n *yaml.Node) ([]turn, error) {
	out := make([]turn, 0, len(n.Content))
	for i, tn := range n.Content {
		t, err := p.turn(tn, i+1)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// conversations parses the `conversations:` list: each item has a name,
// a match and its own turns.
func (p *parser) conversations(s *Script, n *yaml.Node) (*Script, error) {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return nil, p.errf(n, "`conversations` must be a list with at least one conversation, e.g. `conversations: [{name: main, match: {header: main}, turns: [{content: [{text: Done.}]}]}]`")
	}
	s.routed = true
	names := map[string]int{}
	matchers := map[matcher]int{}
	for i, cn := range n.Content {
		c := conversation{line: cn.Line, name: fmt.Sprintf("%d", i+1)}
		what := fmt.Sprintf("conversation %d", i+1)
		fields, err := p.fields(cn, what, "name", "match", "turns")
		if err != nil {
			return nil, err
		}
		var matchNode, turnsNode *yaml.Node
		for _, f := range fields {
			switch f.key {
			case "name":
				if c.name, err = p.str(f.val, what+" name"); err != nil {
					return nil, err
				}
				if c.name == "" {
					return nil, p.errf(f.val, "%s name must not be empty", what)
				}
				if line, dup := names[c.name]; dup {
					return nil, p.errf(f.val, "%s: the name %q is already used by the conversation at line %d; names must be unique", what, c.name, line)
				}
				names[c.name] = f.val.Line
				what = "conversation " + c.name
			case "match":
				matchNode = f.val
			case "turns":
				turnsNode = f.val
			}
		}
		if matchNode == nil {
			return nil, p.errf(cn, "%s needs a `match:` saying which requests are its own: {header: VALUE} (the %s request header), {system_contains: TEXT} or {first_user_contains: TEXT}", what, ConversationHeader)
		}
		if c.match, err = p.matcher(matchNode, what); err != nil {
			return nil, err
		}
		if line, dup := matchers[c.match]; dup {
			return nil, p.errf(matchNode, "%s matches exactly as the conversation at line %d, so it would never get a request; make its match differ", what, line)
		}
		matchers[c.match] = matchNode.Line
		if turnsNode == nil || turnsNode.Kind != yaml.SequenceNode || len(turnsNode.Content) == 0 {
			at := cn
			if turnsNode != nil {
				at = turnsNode
			}
			return nil, p.errf(at, "%s: `turns` must be a list with at least one turn", what)
		}
		p.where, p.conv = what+" ", i+1
		if c.turns, err = p.turns(turnsNode); err != nil {
			return nil, err
		}
		p.where, p.conv = "", 0
		s.convs = append(s.convs, c)
	}
	return s, nil
}

func (p *parser) matcher(n *yaml.Node, what string) (matcher, error) {
	var m matcher
	fields, err := p.fields(n, what+" match", "header", "system_contains", "first_user_contains")
	if err != nil {
		return m, err
	}
	for _, f := range fields {
		var v string
		if v, err = p.str(f.val, what+" match."+f.key); err != nil {
			return m, err
		}
		if v == "" {
			return m, p.errf(f.val, "%s match.%s must not be empty (an empty text matches every request)", what, f.key)
		}
		switch f.key {
		case "header":
			m.header, m.hasHeader = v, true
		case "system_contains":
			m.systemContains = v
		case "first_user_contains":
			m.firstUserContains = v
		}
	}
	if m == (matcher{}) {
		return m, p.errf(n, "%s match needs at least one of header, system_contains, first_user_contains", what)
	}
	return m, nil
}

type parser struct {
	file string
	// where prefixes the turn names of errors inside a conversation
	// ("conversation main "), and conv numbers it (from 1) in default
	// tool_use ids, so that two conversations never share an id.
	where string
	conv  int
}

type field struct {
	key string
	val *yaml.Node
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (p *parser) yamlError(err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &ScriptError{File: p.file, Line: line, Msg: "not valid YAML: " + m[2]}
	}
	return &ScriptError{File: p.file, Msg: "not valid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) error {
	return &ScriptError{File: p.file, Line: n.Line, Msg: fmt.Sprintf(format, args...)}
}

// fields returns the key/value pairs of a mapping, rejecting unknown and
// repeated keys so a typo never silently drops a check.
func (p *parser) fields(n *yaml.Node, what string, known ...string) ([]field, error) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, "%s must be a mapping of keys (%s)", what, strings.Join(known, ", "))
	}
	var out []field
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !slices.Contains(known, k.Value) {
			return nil, p.errf(k, "unknown key %q in %s; the known keys are %s", k.Value, what, strings.Join(known, ", "))
		}
		if seen[k.Value] {
			return nil, p.errf(k, "key %q appears twice in %s; keep one", k.Value, what)
		}
		seen[k.Value] = true
		out = append(out, field{key: k.Value, val: resolve(v)})
	}
	return out, nil
}

func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func (p *parser) str(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errf(n, "%s must be a string", what)
	}
	return n.Value, nil
}

func (p *parser) boolean(n *yaml.Node, what string) (bool, error) {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
		return false, p.errf(n, "%s must be true or false, not %q", what, n.Value)
	}
	return b, nil
}

func (p *parser) integer(n *yaml.Node, what string) (int64, error) {
	var v int64
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
		return 0, p.errf(n, "%s must be a whole number, not %q", what, n.Value)
	}
	if v < 0 {
		return 0, p.errf(n, "%s must not be negative (got %d)", what, v)
	}
	return v, nil
}

func (p *parser) duration(n *yaml.Node, what string) (time.Duration, error) {
	d, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return 0, p.errf(n, "%s must be a duration such as 1s or 250ms, not %q", what, n.Value)
	}
	if d < 0 {
		return 0, p.errf(n, "%s must not be negative (got %s)", what, n.Value)
	}
	return d, nil
}

// stopReasons are the Anthropic stop reasons a script may name; the
// OpenAI endpoints translate them (tool_use → tool_calls, ...).
var stopReasons = []string{"end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal", "model_context_window_exceeded"}

func (p *parser) turn(n *yaml.Node, no int) (turn, error) {
	what := fmt.Sprintf("%sturn %d", p.where, no)
	t := turn{line: n.Line}
	fields, err := p.fields(n, what, "expect", "content", "stop_reason", "usage", "fault")
	if err != nil {
		return t, err
	}
	var stopNode *yaml.Node
	for _, f := range fields {
		switch f.key {
		case "expect":
			if t.expect, err = p.expect(f.val, what); err != nil {
				return t, err
			}
		case "content":
			if t.resp.Content, err = p.content(f.val, no); err != nil {
				return t, err
			}
		case "stop_reason":
			stopNode = f.val
			if t.resp.StopReasonRaw, err = p.str(f.val, what+" stop_reason"); err != nil {
				return t, err
			}
			if !slices.Contains(stopReasons, t.resp.StopReasonRaw) {
				return t, p.errf(f.val, "%s: stop_reason %q is not one the API sends; use one of %s (a null stop reason is `fault: {missing_stop_reason: true}`)", what, t.resp.StopReasonRaw, strings.Join(stopReasons, ", "))
			}
		case "usage":
			if t.resp.Usage, err = p.usage(f.val, what); err != nil {
				return t, err
			}
			t.usageScript = true
		case "fault":
			if t.fault, err = p.fault(f.val, what); err != nil {
				return t, err
			}
		}
	}
	if t.resp.Content == nil {
		t.resp.Content = []trajectory.ContentBlock{}
	}
	hasToolUse := false
	for _, b := range t.resp.Content {
		t.outBytes += len(b.Text) + len(b.Input) + len(b.Name)
		hasToolUse = hasToolUse || b.Type == trajectory.BlockToolUse
	}
	f := &t.fault
	switch {
	case f.MissingStopReason && stopNode != nil:
		return t, p.errf(stopNode, "%s sets stop_reason and fault missing_stop_reason; keep one", what)
	case f.MaxTokensInToolUse && stopNode != nil && t.resp.StopReasonRaw != "max_tokens":
		return t, p.errf(stopNode, "%s: fault max_tokens_in_tool_use stops with max_tokens; remove stop_reason %q", what, t.resp.StopReasonRaw)
	case f.MaxTokensInToolUse && !hasToolUse:
		return t, p.errf(n, "%s: fault max_tokens_in_tool_use needs a tool_use in content to cut", what)
	}
	switch {
	case f.MissingStopReason:
		t.resp.StopReasonRaw = ""
	case f.MaxTokensInToolUse:
		t.resp.Content = cutLastToolUse(t.resp.Content)
		t.resp.StopReasonRaw = "max_tokens"
	case stopNode == nil && hasToolUse:
		t.resp.StopReasonRaw = "tool_use"
	case stopNode == nil:
		t.resp.StopReasonRaw = "end_turn"
	}
	t.resp.StopReason = llm.NormalizeStopReason(t.resp.StopReasonRaw)
	return t, nil
}

// cutLastToolUse keeps the blocks up to the last tool_use and leaves that
// one with half of its input, as a reply cut off by max_tokens has.
func cutLastToolUse(blocks []trajectory.ContentBlock) []trajectory.ContentBlock {
	last := -1
	for i, b := range blocks {
		if b.Type == trajectory.BlockToolUse {
			last = i
		}
	}
	out := slices.Clone(blocks[:last+1])
	in := string(out[last].Input)
	cut := len(in) / 2
	for cut > 1 && !utf8.RuneStart(in[cut]) {
		cut--
	}
	out[last].PartialInput = in[:max(cut, 1)]
	out[last].Input = nil
	return out
}

func (p *parser) expect(n *yaml.Node, what string) (expectation, error) {
	var e expectation
	fields, err := p.fields(n, what+" expect", "tool_results", "last_user_contains", "system_contains", "tools")
	if err != nil {
		return e, err
	}
	for _, f := range fields {
		switch f.key {
		case "tool_results":
			if f.val.Kind != yaml.SequenceNode {
				return e, p.errf(f.val, "%s expect.tool_results must be a list such as [{tool_use_id: toolu_1, is_error: false}]", what)
			}
			for _, rn := range f.val.Content {
				rf, err := p.fields(rn, what+" expect.tool_results item", "tool_use_id", "is_error")
				if err != nil {
					return e, err
				}
				var r expectedResult
				for _, x := range rf {
					switch x.key {
					case "tool_use_id":
						if r.id, err = p.str(x.val, "tool_use_id"); err != nil {
							return e, err
						}
					case "is_error":
						b, err := p.boolean(x.val, "is_error")
						if err != nil {
							return e, err
						}
						r.isError = &b
					}
				}
				if r.id == "" {
					return e, p.errf(rn, "%s expect.tool_results item needs a tool_use_id", what)
				}
				e.toolResults = append(e.toolResults, r)
			}
		case "last_user_contains":
			if e.lastUserContains, err = p.str(f.val, "last_user_contains"); err != nil {
				return e, err
			}
		case "system_contains":
			if e.systemContains, err = p.str(f.val, "system_contains"); err != nil {
				return e, err
			}
		case "tools":
			if f.val.Kind != yaml.SequenceNode {
				return e, p.errf(f.val, "%s expect.tools must be a list of tool names", what)
			}
			for _, tn := range f.val.Content {
				name, err := p.str(tn, "a tool name")
				if err != nil {
					return e, err
				}
				e.tools = append(e.tools, name)
			}
		}
	}
	return e, nil
}

func (p *parser) content(n *yaml.Node, no int) ([]trajectory.ContentBlock, error) {
	what := fmt.Sprintf("%sturn %d content", p.where, no)
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "%s must be a list of blocks such as [{text: Hello}]", what)
	}
	out := []trajectory.ContentBlock{}
	ids := map[string]bool{}
	for i, bn := range n.Content {
		fields, err := p.fields(bn, what+" block", "text", "tool_use", "thinking")
		if err != nil {
			return nil, err
		}
		if len(fields) != 1 {
			return nil, p.errf(bn, "%s block %d must have exactly one of text, tool_use, thinking", what, i+1)
		}
		f := fields[0]
		switch f.key {
		case "text":
			s, err := p.str(f.val, "text")
			if err != nil {
				return nil, err
			}
			out = append(out, trajectory.ContentBlock{Type: trajectory.BlockText, Text: s})
		case "thinking":
			s, err := p.str(f.val, "thinking")
			if err != nil {
				return nil, err
			}
			out = append(out, trajectory.ContentBlock{Type: trajectory.BlockThinking, Text: s})
		case "tool_use":
			b, err := p.toolUse(f.val, no, i+1)
			if err != nil {
				return nil, err
			}
			if ids[b.ID] {
				return nil, p.errf(f.val, "%s: tool_use id %q is used twice in one reply; ids must be unique", what, b.ID)
			}
			ids[b.ID] = true
			out = append(out, b)
		}
	}
	return out, nil
}

func (p *parser) toolUse(n *yaml.Node, turnNo, blockNo int) (trajectory.ContentBlock, error) {
	what := fmt.Sprintf("%sturn %d tool_use", p.where, turnNo)
	b := trajectory.ContentBlock{Type: trajectory.BlockToolUse}
	fields, err := p.fields(n, what, "id", "name", "input")
	if err != nil {
		return b, err
	}
	b.Input = json.RawMessage(`{}`)
	for _, f := range fields {
		switch f.key {
		case "id":
			if b.ID, err = p.str(f.val, what+" id"); err != nil {
				return b, err
			}
		case "name":
			if b.Name, err = p.str(f.val, what+" name"); err != nil {
				return b, err
			}
		case "input":
			if f.val.Kind != yaml.MappingNode {
				return b, p.errf(f.val, "%s input must be a mapping (the tool's arguments), e.g. {file_path: README.md}", what)
			}
			raw, err := p.toJSON(nil, f.val, 0)
			if err != nil {
				return b, err
			}
			b.Input = raw
		}
	}
	if b.Name == "" {
		return b, p.errf(n, "%s needs a name (the tool to call)", what)
	}
	if b.ID == "" {
		b.ID = fmt.Sprintf("toolu_mock_%d_%d", turnNo, blockNo)
		if p.conv > 0 {
			b.ID = fmt.Sprintf("toolu_mock_c%d_%d_%d", p.conv, turnNo, blockNo)
		}
	}
	return b, nil
}

// maxInputDepth and maxInputBytes bound a tool input, so that an alias
// cycle or an alias bomb in a script is an error, not a crash.
const (
	maxInputDepth = 64
	maxInputBytes = 8 << 20
)

// toJSON converts a YAML value to JSON, keeping the key order of mappings
// so the tool input reads as written.
func (p *parser) toJSON(dst []byte, n *yaml.Node, depth int) ([]byte, error) {
	n = resolve(n)
	if depth > maxInputDepth || len(dst) > maxInputBytes {
		return nil, p.errf(n, "tool input is nested deeper than %d levels or larger than %d bytes (an alias that refers to itself?)", maxInputDepth, maxInputBytes)
	}
	switch n.Kind {
	case yaml.MappingNode:
		dst = append(dst, '{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				dst = append(dst, ',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			dst = append(append(dst, k...), ':')
			var err error
			if dst, err = p.toJSON(dst, n.Content[i+1], depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case yaml.SequenceNode:
		dst = append(dst, '[')
		for i, c := range n.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = p.toJSON(dst, c, depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case yaml.ScalarNode:
		var v any
		switch n.Tag {
		case "!!null":
			return append(dst, "null"...), nil
		case "!!bool", "!!int", "!!float":
			if err := n.Decode(&v); err != nil {
				return nil, p.errf(n, "cannot read %q: %v", n.Value, err)
			}
		default:
			v = n.Value
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, p.errf(n, "%q cannot be written as JSON (%v); quote it as a string", n.Value, err)
		}
		return append(dst, b...), nil
	}
	return nil, p.errf(n, "this value cannot be written as JSON")
}

func (p *parser) usage(n *yaml.Node, what string) (trajectory.Usage, error) {
	var u trajectory.Usage
	fields, err := p.fields(n, what+" usage", "input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens")
	if err != nil {
		return u, err
	}
	for _, f := range fields {
		v, err := p.integer(f.val, what+" usage."+f.key)
		if err != nil {
			return u, err
		}
		switch f.key {
		case "input_tokens":
			u.InputTokens = v
		case "output_tokens":
			u.OutputTokens = v
		case "cache_read_tokens":
			u.CacheReadTokens = v
		case "cache_creation_tokens":
			u.CacheCreationTokens = v
		}
	}
	return u, nil
}

func (p *parser) fault(n *yaml.Node, what string) (Fault, error) {
	var f Fault
	w := what + " fault"
	fields, err := p.fields(n, w, "status", "retry_after", "times", "max_tokens_in_tool_use", "missing_stop_reason", "stall", "malformed_sse")
	if err != nil {
		return f, err
	}
	var timesNode, retryNode *yaml.Node
	for _, fl := range fields {
		switch fl.key {
		case "status":
			v, err := p.integer(fl.val, w+" status")
			if err != nil {
				return f, err
			}
			if v < 400 || v > 599 {
				return f, p.errf(fl.val, "%s status %d is not an HTTP error; use 429 (rate limited), 500, 503 or 529 (overloaded)", w, v)
			}
			f.Status = int(v)
		case "retry_after":
			retryNode = fl.val
			if f.RetryAfter, err = p.duration(fl.val, w+" retry_after"); err != nil {
				return f, err
			}
		case "times":
			timesNode = fl.val
			v, err := p.integer(fl.val, w+" times")
			if err != nil {
				return f, err
			}
			if v < 1 || v > 1000 {
				return f, p.errf(fl.val, "%s times must be between 1 and 1000 (the attempts that fail before one succeeds)", w)
			}
			f.Times = int(v)
		case "max_tokens_in_tool_use":
			if f.MaxTokensInToolUse, err = p.boolean(fl.val, w+" max_tokens_in_tool_use"); err != nil {
				return f, err
			}
		case "missing_stop_reason":
			if f.MissingStopReason, err = p.boolean(fl.val, w+" missing_stop_reason"); err != nil {
				return f, err
			}
		case "stall":
			if f.Stall, err = p.duration(fl.val, w+" stall"); err != nil {
				return f, err
			}
			if f.Stall == 0 {
				return f, p.errf(fl.val, "%s stall must be longer than zero", w)
			}
		case "malformed_sse":
			if f.MalformedSSE, err = p.boolean(fl.val, w+" malformed_sse"); err != nil {
				return f, err
			}
		}
	}
	if f.Status == 0 && (timesNode != nil || retryNode != nil) {
		at := timesNode
		if at == nil {
			at = retryNode
		}
		return f, p.errf(at, "%s: times and retry_after apply to a status fault; add status (e.g. 529)", w)
	}
	if f.Status != 0 && f.Times == 0 {
		f.Times = 1
	}
	if f.MaxTokensInToolUse && f.MissingStopReason {
		return f, p.errf(n, "%s: max_tokens_in_tool_use and missing_stop_reason both set the stop reason; keep one", w)
	}
	return f, nil
}
