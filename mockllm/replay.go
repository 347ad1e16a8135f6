package mockllm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

// Replay is a model that answers each request with a model_response of a
// recorded trajectory, picked by its Mode: in order (ModeOrdered, per
// conversation when it routes by prompt), or by what the request asks
// (ModeMatch). A request it cannot answer fails with a *MissError, wrapped
// in an *llm.Error of kind replay_miss, that wraps llm.ErrReplayMiss: a
// replay never falls back to a live call and never makes up an answer. It
// is safe for concurrent use. Its state is a cursor per recorded
// conversation and a used mark per recorded response, so it is bounded by
// the recording.
type Replay struct {
	model string
	opts  ReplayOptions
	turns []recordedTurn
	// convs are the recorded conversations under RoutePrompt (ordered) and
	// the labels of Verify's report; one for RouteNone.
	convs  []*replayConv
	byKey  map[string]*replayConv
	single bool // one conversation, no labels in messages
	// byRequest indexes ModeMatch's turns by matchKey, in recording
	// order, so a match costs a map lookup however long the recording.
	byRequest map[string][]int
	anyRaw    bool // some turn could not be rebuilt and matches by raw hashes

	// normCache maps a message's raw hash to its normalised hash: an
	// agent resends its whole history each turn, and the regular
	// expressions of Normalize are the cost of a match. It is cleared when
	// it reaches maxNormCache entries, which bounds it.
	cacheMu   sync.Mutex
	normCache map[string]string

	mu       sync.Mutex
	requests int // requests asked so far
	used     []bool
	problems []error
	more     int
}

// ReplayOptions choose how a Replay picks its responses.
type ReplayOptions struct {
	Mode Mode
	// Route groups requests into conversations for ModeOrdered: RouteNone
	// (one sequence) or RoutePrompt (per system prompt and first user
	// message, as recorded). A recording does not keep the
	// ConversationHeader, so RouteHeader is refused; ModeMatch needs no
	// route and refuses any but RouteNone.
	Route Route
}

// recordedTurn is one recorded response and what is known of the request
// it answered.
type recordedTurn struct {
	resp llm.Response
	// hasReq is false for a response with no model_request before it.
	hasReq bool
	// rebuilt is set when the request's full system prompt and messages
	// were rebuilt from the recording and checked against its hashes;
	// then norm* hold their normalised hashes, else raw* their recorded
	// hashes and a match compares those exactly.
	rebuilt    bool
	toolsHash  string
	normSystem string
	normMsgs   []string
	// answered is where the request's last assistant message is (-1 when
	// it has none) and said what it says: the recorded reply to the
	// request made of the messages before it.
	answered  int
	said      string
	rawSystem string
	rawMsgs   []string
	conv      *replayConv
}

// replayConv is one recorded conversation.
type replayConv struct {
	label string
	turns []int // indices in Replay.turns, in order
	next  int   // ModeOrdered: turns answered
}

// ErrMispaired means a recording's responses do not answer the requests
// recorded before them, so it cannot be replayed by request.
var ErrMispaired = errors.New("the recording pairs responses with the wrong requests")

// MissError is a request a Replay has no recorded response for. Msg says
// why: the recording ran out, no recorded request matches (naming the
// closest one and the first message that differs), or every match was
// already used.
type MissError struct {
	// Request is the request's number, counted from 1 over the replay.
	Request int
	// Conversation labels the conversation the request was routed to, ""
	// when none.
	Conversation string
	Mode         Mode
	Msg          string
}

// Error describes the miss.
func (e *MissError) Error() string {
	if e.Conversation != "" {
		return fmt.Sprintf("replay (%s), conversation %s, request %d: %s", e.Mode, e.Conversation, e.Request, e.Msg)
	}
	return fmt.Sprintf("replay (%s) request %d: %s", e.Mode, e.Request, e.Msg)
}

// Unwrap returns llm.ErrReplayMiss.
func (e *MissError) Unwrap() error { return llm.ErrReplayMiss }

// NewReplay returns an ordered Replay over the model_response events of
// events: the n-th request gets the n-th response.
func NewReplay(events []trajectory.Event) *Replay {
	r, _ := NewReplayWith(events, ReplayOptions{}) // ordered and unrouted never fails
	return r
}

// NewReplayWith returns a Replay over the model_response events of events
// with the given mode and route. Each response is paired with the
// model_request just before it, whose system prompt and messages are
// rebuilt from the recording (a model_request keeps the messages added
// since the previous request and the hash of every message).
func NewReplayWith(events []trajectory.Event, opts ReplayOptions) (*Replay, error) {
	switch {
	case opts.Mode != ModeOrdered && opts.Mode != ModeMatch:
		return nil, fmt.Errorf("unknown replay mode %s", opts.Mode)
	case opts.Route == RouteHeader:
		return nil, fmt.Errorf("a recording does not keep the %s header, so it cannot be routed by header; route it by prompt, or replay with mode match", ConversationHeader)
	case opts.Route != RouteNone && opts.Route != RoutePrompt:
		return nil, fmt.Errorf("unknown conversation route %s", opts.Route)
	case opts.Mode == ModeMatch && opts.Route != RouteNone:
		return nil, errors.New("mode match finds each request's recorded counterpart by what it asks, however conversations interleave; it takes no route")
	}
	r := &Replay{model: "replay", opts: opts, byKey: map[string]*replayConv{}}
	var (
		prev       rebuilt
		conv       trajectory.Conversation // full message lists, v1 and v2
		pending    *recordedTurn
		pendingKey string
	)
	for _, ev := range events {
		switch p := ev.Payload.(type) {
		case *trajectory.SessionStart:
			// The sessions of one recording (a main agent's and its
			// subagents') may be given together: each rebuilds its
			// requests from its own first one.
			if r.model == "replay" {
				r.model = p.Model
			}
			prev, pending, conv = rebuilt{}, nil, trajectory.Conversation{}
		case *trajectory.ModelRequest:
			// A broken chain (err) means the prefix cannot be trusted, so
			// the request is not rebuilt, as for any hash disagreement.
			full, err := conv.Next(p)
			t, next, key := r.rebuildRequest(p, full, err == nil, prev)
			prev = next
			pending, pendingKey = &t, key
		case *trajectory.ModelResponse:
			t := recordedTurn{}
			key := ""
			if pending != nil {
				t, key = *pending, pendingKey
			}
			pending = nil
			t.resp = llm.Response{Content: p.Content, StopReason: p.StopReason, StopReasonRaw: p.StopReasonRaw, Usage: p.Usage}
			if opts.Route == RoutePrompt && key == "" {
				return nil, fmt.Errorf("recorded response %d cannot be routed by prompt: its request is missing or could not be rebuilt from the recording; replay it with mode match or without a route", len(r.turns)+1)
			}
			r.turns = append(r.turns, t)
			r.addToConv(key, len(r.turns)-1)
		}
	}
	r.single = len(r.convs) <= 1
	r.used = make([]bool, len(r.turns))
	if opts.Mode == ModeMatch || opts.Route == RoutePrompt {
		if err := r.checkPairing(); err != nil {
			return nil, err
		}
	}
	if opts.Mode == ModeMatch {
		r.byRequest = map[string][]int{}
		for i := range r.turns {
			t := &r.turns[i]
			switch {
			case !t.hasReq:
				continue
			case t.rebuilt:
				k := matchKey("norm", t.normSystem, t.toolsHash, t.normMsgs)
				r.byRequest[k] = append(r.byRequest[k], i)
			default:
				r.anyRaw = true
				k := matchKey("raw", t.rawSystem, t.toolsHash, t.rawMsgs)
				r.byRequest[k] = append(r.byRequest[k], i)
			}
		}
	}
	return r, nil
}

// checkPairing refuses a recording in which a response does not answer
// the request recorded just before it, which is what a recording of
// concurrent conversations made by one Transcript looks like: a later
// request that extends a recorded request carries, as its next assistant
// message, the reply that request really got. Serving a response to the
// wrong request would be a made-up answer, so the replay fails closed.
func (r *Replay) checkPairing() error {
	byRequest := map[string][]int{}
	for i := range r.turns {
		if t := &r.turns[i]; t.rebuilt {
			k := strings.Join(t.normMsgs, ",")
			byRequest[k] = append(byRequest[k], i)
		}
	}
	for j := range r.turns {
		later := &r.turns[j]
		if !later.rebuilt || later.answered < 0 {
			continue
		}
		for _, i := range byRequest[strings.Join(later.normMsgs[:later.answered], ",")] {
			if got := replySummary(r.turns[i].resp.Content); got != later.said {
				return fmt.Errorf("%w: recorded response %d does not answer the request recorded before it: the conversation goes on with the reply %s, the response is %s; "+
					"the recording interleaves concurrent conversations in one session, so record them one at a time (or one session each) to replay them by request",
					ErrMispaired, i+1, clip(later.said, 80), clip(got, 80))
			}
		}
	}
	return nil
}

// replySummary is what a reply says, as compared by checkPairing: its
// text and its tool_use ids, which an agent sends back unchanged.
func replySummary(blocks []trajectory.ContentBlock) string {
	var b strings.Builder
	for _, c := range blocks {
		switch c.Type {
		case trajectory.BlockText:
			b.WriteString("text " + strconv.Quote(c.Text) + " ")
		case trajectory.BlockToolUse:
			b.WriteString("tool_use " + c.ID + " ")
		}
	}
	return strings.TrimSpace(b.String())
}

// matchKey identifies what a request asks: its system prompt, tools and
// messages, by hash; kind keeps normalised and raw hashes apart.
func matchKey(kind, system, tools string, msgs []string) string {
	return kind + "\x00" + system + "\x00" + tools + "\x00" + strings.Join(msgs, ",")
}

// addToConv files turn i under its conversation: by prompt key when the
// replay routes or matches (for the report), else all in one.
func (r *Replay) addToConv(key string, i int) {
	if r.opts.Route == RouteNone && r.opts.Mode == ModeOrdered {
		key = ""
	}
	c, ok := r.byKey[key]
	if !ok {
		c = &replayConv{label: strconv.Itoa(len(r.convs) + 1)}
		r.byKey[key] = c
		r.convs = append(r.convs, c)
	}
	c.turns = append(c.turns, i)
	r.turns[i].conv = c
}

// rebuilt is the previous request as rebuilt, from which the next one is.
type rebuilt struct {
	system string
	msgs   []trajectory.Message
	norm   []string // normalised hashes of msgs
	raw    []string // the recorded hashes of msgs
	ok     bool
}

// rebuildRequest rebuilds a recorded request's system prompt and messages
// from the previous request's and checks them against the recorded
// hashes: full is the request's full message-hash list (from a
// trajectory.Conversation; chained is false when its chain broke), the shared
// prefix is the previous request's (its hashes must agree), the rest are
// the event's new messages, hashed here. It returns the turn's request
// part, the rebuilt request to rebuild the next one from, and the
// request's prompt key ("" when it could not be rebuilt).
func (r *Replay) rebuildRequest(p *trajectory.ModelRequest, full []string, chained bool, prev rebuilt) (recordedTurn, rebuilt, string) {
	t := recordedTurn{hasReq: true, toolsHash: p.ToolsHash, rawSystem: p.SystemHash, rawMsgs: full}
	system := p.System
	if system == "" && trajectory.Hash([]byte(prev.system)) == p.SystemHash {
		system = prev.system // the recorder leaves out a system prompt that did not change
	}
	fail := rebuilt{system: system}
	shared := len(full) - len(p.NewMessages)
	if !chained || shared < 0 || (shared > 0 && !prev.ok) || shared > len(prev.msgs) || trajectory.Hash([]byte(system)) != p.SystemHash {
		return t, fail, ""
	}
	if !slices.Equal(full[:shared], prev.raw[:shared]) {
		return t, fail, ""
	}
	norm, raw := r.hashMessages(p.NewMessages)
	if !slices.Equal(raw, full[shared:]) {
		return t, fail, ""
	}
	next := rebuilt{system: system, raw: full, ok: true}
	next.msgs = append(slices.Clip(prev.msgs[:shared]), p.NewMessages...)
	next.norm = append(slices.Clip(prev.norm[:shared]), norm...)
	t.rebuilt = true
	t.normSystem = trajectory.Hash([]byte(Normalize(system)))
	t.normMsgs = next.norm
	t.answered = -1
	for i := len(next.msgs) - 1; i >= 0; i-- {
		if next.msgs[i].Role == trajectory.RoleAssistant {
			t.answered, t.said = i, replySummary(next.msgs[i].Content)
			break
		}
	}
	return t, next, PromptKey(&llm.Request{System: system, Messages: next.msgs})
}

// LoadReplay reads a trajectory file and returns an ordered Replay over
// it. A line that does not decode is an error: a replay of a damaged file
// would answer with the wrong turns.
func LoadReplay(path string) (*Replay, error) {
	return LoadReplayWith(path, ReplayOptions{})
}

// LoadReplayWith reads a trajectory file and returns a Replay over it
// with the given mode and route.
func LoadReplayWith(path string, opts ReplayOptions) (*Replay, error) {
	events, err := trajectory.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read trajectory to replay: %w", err)
	}
	return NewReplayWith(events, opts)
}

// Name implements llm.Provider.
func (r *Replay) Name() string { return "replay" }

// Model returns the model recorded in the trajectory's session_start.
func (r *Replay) Model() string { return r.model }

// Len returns the number of recorded responses.
func (r *Replay) Len() int { return len(r.turns) }

// Used returns how many recorded responses have been served.
func (r *Replay) Used() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, u := range r.used {
		if u {
			n++
		}
	}
	return n
}

// Next implements Source.
func (r *Replay) Next(_ context.Context, req *llm.Request) (Reply, error) {
	// The normalised hashes are computed before the lock: they are the
	// cost of a match, and need no shared state.
	var sys, tools string
	var msgs, raw []string
	if r.opts.Mode == ModeMatch {
		sys, tools = trajectory.Hash([]byte(Normalize(req.System))), llm.ToolsHash(req.Tools)
		msgs, raw = r.hashMessages(req.Messages)
	}
	key := ""
	if r.opts.Route == RoutePrompt {
		key = PromptKey(req)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	var i int
	var miss *MissError
	if r.opts.Mode == ModeMatch {
		i, miss = r.match(req, sys, tools, msgs, raw)
	} else {
		i, miss = r.ordered(key, req)
	}
	if miss != nil {
		miss.Request, miss.Mode = r.requests, r.opts.Mode
		err := &llm.Error{Kind: trajectory.ModelReplayMiss, Err: miss}
		r.problem(err)
		return Reply{}, err
	}
	r.used[i] = true
	t := &r.turns[i]
	resp := t.resp
	resp.Model = cmpOr(req.Model, r.model)
	rep := Reply{Turn: i + 1, Response: resp}
	if !r.single {
		rep.Conversation = t.conv.label
	}
	return rep, nil
}

// ordered picks the next response of the request's conversation.
func (r *Replay) ordered(key string, req *llm.Request) (int, *MissError) {
	c, ok := r.byKey[key]
	if !ok && r.opts.Route == RouteNone {
		return 0, &MissError{Msg: "the recording holds no responses"}
	}
	if !ok {
		return 0, &MissError{Msg: fmt.Sprintf("no recorded conversation has this system prompt and first user message (%q); the recording holds %d conversations",
			clip(firstUserText(req), 80), len(r.convs))}
	}
	label := ""
	if !r.single {
		label = c.label
	}
	if c.next >= len(c.turns) {
		c.next++
		return 0, &MissError{Conversation: label, Msg: fmt.Sprintf("request %d of this conversation has no recorded response (the recording holds %d)", c.next, len(c.turns))}
	}
	i := c.turns[c.next]
	c.next++
	return i, nil
}

// match picks the first unused recorded response whose request asked
// what req asks; on a miss it names the closest recorded request.
func (r *Replay) match(req *llm.Request, sys, tools string, msgs, rawMsgs []string) (int, *MissError) {
	rawSys := trajectory.Hash([]byte(req.System))
	usedMatches := 0
	for _, k := range []string{matchKey("norm", sys, tools, msgs), matchKey("raw", rawSys, tools, rawMsgs)} {
		for _, i := range r.byRequest[k] {
			if !r.used[i] {
				return i, nil
			}
			usedMatches++
		}
		if !r.anyRaw {
			break
		}
	}
	if usedMatches > 0 {
		return 0, &MissError{Msg: fmt.Sprintf("the recorded request it matches was already answered (%d times recorded, all used); the agent asks the same again", usedMatches)}
	}
	// A miss: find the recorded request sharing the longest message
	// prefix, to say where this one differs. This scan is paid only on
	// a miss.
	best, bestShared := -1, -1
	for i := range r.turns {
		t := &r.turns[i]
		if !t.hasReq || t.toolsHash != tools {
			continue
		}
		wantSys, wantMsgs, gotSys, gotMsgs := t.normSystem, t.normMsgs, sys, msgs
		if !t.rebuilt {
			wantSys, wantMsgs, gotSys, gotMsgs = t.rawSystem, t.rawMsgs, rawSys, rawMsgs
		}
		if wantSys != gotSys {
			continue
		}
		shared := 0
		for shared < len(wantMsgs) && shared < len(gotMsgs) && wantMsgs[shared] == gotMsgs[shared] {
			shared++
		}
		if shared > bestShared {
			best, bestShared = i, shared
		}
	}
	if best < 0 {
		return 0, &MissError{Msg: fmt.Sprintf("no recorded request has this system prompt and these tools (%d messages, first user message %q)", len(req.Messages), clip(firstUserText(req), 80))}
	}
	t := &r.turns[best]
	recorded := len(t.rawMsgs)
	diff := fmt.Sprintf("messages[%d] differs", bestShared)
	switch {
	case bestShared == recorded:
		diff = fmt.Sprintf("it has %d messages where the recorded one has %d", len(req.Messages), recorded)
	case bestShared == len(req.Messages):
		diff = fmt.Sprintf("it has %d messages where the recorded one has %d", len(req.Messages), recorded)
	}
	return 0, &MissError{Msg: fmt.Sprintf("no recorded request asks the same after normalisation; the closest is recorded response %d, which shares the first %d messages: %s", best+1, bestShared, diff)}
}

// maxNormCache bounds Replay.normCache.
const maxNormCache = 1 << 16

// hashMessages returns the normalised and the raw hash of each message.
func (r *Replay) hashMessages(msgs []trajectory.Message) (norm, raw []string) {
	norm, raw = make([]string, len(msgs)), make([]string, len(msgs))
	for i, m := range msgs {
		b, _ := json.Marshal(m) // a Message always marshals
		raw[i] = trajectory.Hash(b)
		r.cacheMu.Lock()
		n, ok := r.normCache[raw[i]]
		r.cacheMu.Unlock()
		if !ok {
			n = trajectory.Hash([]byte(Normalize(string(b))))
			r.cacheMu.Lock()
			if r.normCache == nil || len(r.normCache) >= maxNormCache {
				r.normCache = map[string]string{}
			}
			r.normCache[raw[i]] = n
			r.cacheMu.Unlock()
		}
		norm[i] = n
	}
	return norm, raw
}

// problem keeps err for Verify, or counts it past maxProblems.
func (r *Replay) problem(err error) {
	if len(r.problems) < maxProblems {
		r.problems = append(r.problems, err)
		return
	}
	r.more++
}

// Verify reports what went wrong over the replay's life: every miss, and
// the recorded responses never served, per recorded conversation.
func (r *Replay) Verify() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := slices.Clone(r.problems)
	if r.more > 0 {
		errs = append(errs, fmt.Errorf("replay: %d more requests missed like the ones above", r.more))
	}
	for _, c := range r.convs {
		unused := 0
		first := -1
		for _, i := range c.turns {
			if !r.used[i] {
				unused++
				if first < 0 {
					first = i
				}
			}
		}
		if unused == 0 {
			continue
		}
		where := "replay: "
		if !r.single {
			where = "replay: conversation " + c.label + ": "
		}
		errs = append(errs, fmt.Errorf("%s%d of %d recorded responses were used; recorded response %d was never requested",
			where, len(c.turns)-unused, len(c.turns), first+1))
	}
	return errors.Join(errs...)
}

// Complete implements llm.Provider.
func (r *Replay) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return serveInProcess(ctx, r, &req, nil)
}

// Stream implements llm.Provider.
func (r *Replay) Stream(ctx context.Context, req llm.Request, onEvent func(llm.StreamEvent)) (llm.Response, error) {
	return serveInProcess(ctx, r, &req, onEvent)
}

// serveInProcess answers req from src the way a provider client would
// report it: faults become *llm.Error values, a stall waits for the
// context, and tool_use blocks are reported once complete.
func serveInProcess(ctx context.Context, src Source, req *llm.Request, onEvent func(llm.StreamEvent)) (llm.Response, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return llm.Response{}, &llm.Error{Kind: trajectory.ModelAborted, Err: err}
	}
	rep, err := src.Next(ctx, req)
	if err != nil {
		return llm.Response{}, err
	}
	f := rep.Fault
	if f.Status != 0 {
		return llm.Response{}, &llm.Error{Kind: kindForStatus(f.Status), StatusCode: f.Status, RetryAfter: f.RetryAfter,
			Err: fmt.Errorf("mock turn %d: injected HTTP %d", rep.Turn, f.Status)}
	}
	resp := rep.Response
	emitted := false
	stall := func() error {
		if f.Stall == 0 {
			return nil
		}
		t := time.NewTimer(f.Stall)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return &llm.Error{Kind: trajectory.ModelAborted, Err: ctx.Err()}
		case <-t.C:
			return nil
		}
	}
	if onEvent == nil {
		if err := stall(); err != nil {
			return llm.Response{}, err
		}
	}
	for i := range resp.Content {
		b := &resp.Content[i]
		if onEvent != nil {
			switch {
			case b.Type == trajectory.BlockText:
				onEvent(llm.StreamEvent{TextDelta: b.Text})
			case b.Type == trajectory.BlockToolUse && len(b.Input) > 0:
				onEvent(llm.StreamEvent{ToolUse: b})
			}
		}
		if !emitted && onEvent != nil {
			emitted = true
			if err := stall(); err != nil {
				return llm.Response{}, err
			}
		}
		if f.MalformedSSE {
			return llm.Response{}, &llm.Error{Kind: trajectory.ModelInvalidResponse,
				Err: fmt.Errorf("mock turn %d: injected malformed stream frame", rep.Turn)}
		}
	}
	if f.MalformedSSE {
		return llm.Response{}, &llm.Error{Kind: trajectory.ModelInvalidResponse,
			Err: fmt.Errorf("mock turn %d: injected malformed reply", rep.Turn)}
	}
	resp.Content = append([]trajectory.ContentBlock(nil), resp.Content...)
	resp.Duration = time.Since(start)
	return resp, nil
}

// kindForStatus classifies an HTTP status the way the real clients do.
func kindForStatus(status int) trajectory.ModelErrorKind {
	switch {
	case status == http.StatusTooManyRequests:
		return trajectory.ModelRateLimited
	case status == 529:
		return trajectory.ModelOverloaded
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return trajectory.ModelAuth
	case status >= 500:
		return trajectory.ModelServerError
	}
	return trajectory.ModelBadRequest
}
