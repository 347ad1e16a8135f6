package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// probeTool is a real tool that reports each start on a channel, so the
// provider below can see whether a call is running while it is still
// "writing" its reply. With block set, a call waits for its context.
type probeTool struct {
	name    string
	safe    bool
	block   bool
	sleep   time.Duration // how long a call takes
	runs    atomic.Int32
	started chan string
}

func newProbe(name string, safe bool) *probeTool {
	return &probeTool{name: name, safe: safe, started: make(chan string, 64)}
}

type probeInput struct {
	Key string `json:"key"`
}

func (p *probeTool) Spec() tools.Spec {
	return tools.Spec{Name: p.name, Description: "A test tool that reports when it starts.", Schema: tools.SchemaFor[probeInput](),
		ReadOnly: p.safe, Display: trajectory.DisplayFull, Source: trajectory.ToolBuiltin}
}
func (p *probeTool) ConcurrencySafe(json.RawMessage) bool { return p.safe }
func (p *probeTool) Run(ctx context.Context, _ *tools.Env, input json.RawMessage) (tools.Result, error) {
	var in probeInput
	if err := json.Unmarshal(input, &in); err != nil {
		return tools.Result{}, err
	}
	p.runs.Add(1)
	select {
	case p.started <- in.Key:
	default: // a benchmark does not read the starts
	}
	if p.sleep > 0 {
		time.Sleep(p.sleep)
	}
	if p.block {
		<-ctx.Done()
		return tools.Result{}, ctx.Err()
	}
	return tools.Result{Output: "probed " + in.Key}, nil
}

// pacedTurn is one scripted streamed reply.
type pacedTurn struct {
	content []trajectory.ContentBlock
	stop    trajectory.StopReason
	// events, when set, are sent instead of one event per content block
	// (to repeat a tool_use, as a re-sent stream would).
	events []llm.StreamEvent
	// waitStarts is how many tool starts the provider waits for, up to
	// patience, after its events and before it ends the reply: it sees
	// whether the calls run while the reply is still open.
	waitStarts int
	// hang keeps the reply open until the request is cancelled.
	hang bool
}

// pacedProvider is a scripted streaming model for the loop tests. It
// answers turn by turn, and records for each turn whether the calls it
// waited for started before it ended the reply.
type pacedProvider struct {
	turns    []pacedTurn
	probe    *probeTool
	patience time.Duration
	// gap is the model's time to write each event (a benchmark's pace).
	gap     time.Duration
	mu      sync.Mutex
	n       int
	overlap []bool
}

func (p *pacedProvider) Name() string { return "mock" }
func (p *pacedProvider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return p.Stream(ctx, req, func(llm.StreamEvent) {})
}

func (p *pacedProvider) Stream(ctx context.Context, _ llm.Request, onEvent func(llm.StreamEvent)) (llm.Response, error) {
	p.mu.Lock()
	if p.n >= len(p.turns) {
		p.mu.Unlock()
		return llm.Response{}, &llm.Error{Kind: trajectory.ModelBadRequest, Err: fmt.Errorf("out of turns")}
	}
	turn := p.turns[p.n]
	p.n++
	p.mu.Unlock()
	events := turn.events
	if events == nil {
		for i := range turn.content {
			b := turn.content[i]
			switch b.Type {
			case trajectory.BlockText:
				events = append(events, llm.StreamEvent{TextDelta: b.Text})
			case trajectory.BlockToolUse:
				if len(b.Input) > 0 {
					events = append(events, llm.StreamEvent{ToolUse: &b})
				}
			}
		}
	}
	for _, ev := range events {
		if p.gap > 0 {
			time.Sleep(p.gap)
		}
		onEvent(ev)
	}
	if turn.waitStarts > 0 {
		overlapped := true
		timer := time.NewTimer(p.patience)
	wait:
		for range turn.waitStarts {
			select {
			case <-p.probe.started:
			case <-timer.C:
				overlapped = false
				break wait
			}
		}
		timer.Stop()
		p.mu.Lock()
		p.overlap = append(p.overlap, overlapped)
		p.mu.Unlock()
	}
	if turn.hang {
		<-ctx.Done()
		return llm.Response{}, &llm.Error{Kind: trajectory.ModelAborted, Err: ctx.Err()}
	}
	stop := turn.stop
	if stop == "" {
		stop = trajectory.StopEndTurn
		for _, b := range turn.content {
			if b.Type == trajectory.BlockToolUse {
				stop = trajectory.StopToolUse
			}
		}
	}
	return llm.Response{Content: turn.content, StopReason: stop, StopReasonRaw: string(stop), Model: "mock-1"}, nil
}

func probeUse(id, tool, key string) trajectory.ContentBlock {
	return trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: id, Name: tool, Input: json.RawMessage(`{"key":"` + key + `"}`)}
}

func text(s string) trajectory.ContentBlock {
	return trajectory.ContentBlock{Type: trajectory.BlockText, Text: s}
}

// runPaced runs one streamed session over the provider and returns its
// validated events.
func runPaced(t *testing.T, p *pacedProvider, ctx context.Context, edit func(*Config)) (Result, []trajectory.Event) {
	t.Helper()
	var buf bytes.Buffer
	rec := recorder.New(&buf, recorder.Options{})
	cfg := baseConfig(t, t.TempDir(), nil, rec, p.probe)
	cfg.Provider = p
	cfg.Stream = true
	if edit != nil {
		edit(&cfg)
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	validate(t, buf.Bytes())
	return res, decode(t, buf.Bytes())
}

func TestStreamedCallsStartBeforeTheReplyEndsAndBatchedOnesDoNot(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch_tools=%v", batch), func(t *testing.T) {
			probe := newProbe("probe", true)
			// With batch tools the provider would wait forever for calls
			// that start only after the reply; its patience ends the wait.
			patience := 10 * time.Second
			if batch {
				patience = 200 * time.Millisecond
			}
			p := &pacedProvider{probe: probe, patience: patience, turns: []pacedTurn{
				{content: []trajectory.ContentBlock{text("Reading three files."), probeUse("toolu_1", "probe", "a"), probeUse("toolu_2", "probe", "b"), probeUse("toolu_3", "probe", "c")}, waitStarts: 3},
				{content: []trajectory.ContentBlock{text("Done.")}},
			}}
			res, evs := runPaced(t, p, t.Context(), func(c *Config) { c.BatchTools = batch })
			if res.Reason != trajectory.EndTurn || res.ToolCalls != 3 {
				t.Fatalf("ended %s with %d calls, want end_turn with 3", res.Reason, res.ToolCalls)
			}
			if got := p.overlap[0]; got == batch {
				t.Fatalf("calls ran while the reply was open: %v, want %v", got, !batch)
			}
			for _, c := range payloads[*trajectory.ToolCall](evs) {
				if (c.StreamOffsetMs != nil) == batch {
					t.Errorf("tool_call %s stream_offset_ms %v with batch_tools %v", c.ToolUseID, c.StreamOffsetMs, batch)
				}
			}
			var order []string
			for _, r := range payloads[*trajectory.ToolResult](evs) {
				order = append(order, r.ToolUseID)
			}
			if strings.Join(order, ",") != "toolu_1,toolu_2,toolu_3" {
				t.Fatalf("results in order %v, want call order", order)
			}
			if n := probe.runs.Load(); n != 3 {
				t.Fatalf("the tool ran %d times, want 3", n)
			}
		})
	}
}

func TestAReplyThatRepeatsAToolUseRunsItOnce(t *testing.T) {
	probe := newProbe("probe", false)
	u := probeUse("toolu_1", "probe", "a")
	p := &pacedProvider{probe: probe, patience: 10 * time.Second, turns: []pacedTurn{
		{content: []trajectory.ContentBlock{u}, events: []llm.StreamEvent{{ToolUse: &u}, {ToolUse: &u}}, waitStarts: 1},
		{content: []trajectory.ContentBlock{text("Done.")}},
	}}
	res, evs := runPaced(t, p, t.Context(), nil)
	if n := probe.runs.Load(); n != 1 || res.ToolCalls != 1 || len(payloads[*trajectory.ToolCall](evs)) != 1 {
		t.Fatalf("the repeated call ran %d times (%d tool_calls), want once", n, res.ToolCalls)
	}
}

func TestARefusedReplyKeepsTheRealResultOfACallThatAlreadyRan(t *testing.T) {
	probe := newProbe("probe", true)
	p := &pacedProvider{probe: probe, patience: 10 * time.Second, turns: []pacedTurn{
		{content: []trajectory.ContentBlock{probeUse("toolu_1", "probe", "a"), probeUse("toolu_2", "probe", "b")}, stop: trajectory.StopRefusal, waitStarts: 2},
	}}
	res, evs := runPaced(t, p, t.Context(), nil)
	if res.Reason != trajectory.EndRefused {
		t.Fatalf("ended %s, want refused", res.Reason)
	}
	for _, r := range payloads[*trajectory.ToolResult](evs) {
		if r.IsError || !strings.HasPrefix(r.Text, "probed") {
			t.Fatalf("tool_result %+v: a call that ran must keep its real result, not \"Not run\"", r)
		}
	}
}

func TestCancellingWhileAStreamedCallRunsLeavesAValidTrajectory(t *testing.T) {
	probe := newProbe("probe", false)
	probe.block = true
	ctx, cancel := context.WithCancel(t.Context())
	p := &pacedProvider{probe: probe, patience: 10 * time.Second, turns: []pacedTurn{
		{content: []trajectory.ContentBlock{probeUse("toolu_1", "probe", "a"), probeUse("toolu_2", "probe", "b")}, waitStarts: 1, hang: true},
	}}
	go func() {
		// The provider consumed the first start; cancel once it has.
		for {
			p.mu.Lock()
			done := len(p.overlap) > 0
			p.mu.Unlock()
			if done {
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	res, evs := runPaced(t, p, ctx, nil)
	if res.Reason != trajectory.EndAborted {
		t.Fatalf("ended %s, want aborted", res.Reason)
	}
	if n := probe.runs.Load(); n != 1 {
		t.Fatalf("%d calls ran, want only the first (the second waited behind it)", n)
	}
	codes := map[string]string{}
	for _, f := range payloads[*trajectory.ToolFailure](evs) {
		codes[f.ToolUseID] = string(f.FailureKind) + "/" + f.ErrorCode
	}
	// The queued call is abandoned when the failed reply stops the
	// scheduler, or, when the running call ends first, taken up and
	// closed unrun by the pipeline's own abort check: never run either way.
	if q := codes["toolu_2"]; codes["toolu_1"] != "aborted/user_abort" || (q != "aborted/stream_abandoned" && q != "aborted/user_abort") {
		t.Fatalf("failures %v, want the running call aborted by the user and the queued one closed unrun", codes)
	}
}

// sseServer is a real HTTP server speaking Anthropic's SSE: each request
// gets the next reply; a reply ending in cut is cut there (the connection
// is dropped without the stream's end).
type sseServer struct {
	mu       sync.Mutex
	replies  [][]string
	requests int
}

const cut = "<cut>"

func (s *sseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n := s.requests
	s.requests++
	s.mu.Unlock()
	if n >= len(s.replies) {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"out of replies"}}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, ev := range s.replies[n] {
		if ev == cut {
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		var typ struct{ Type string }
		json.Unmarshal([]byte(ev), &typ)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ.Type, ev)
		w.(http.Flusher).Flush()
	}
}

func sseToolUse(id, key string, partial bool) []string {
	input := `{\"key\":\"` + key + `\"}`
	if partial {
		input = `{\"key\":`
	}
	return []string{
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"` + id + `","name":"probe","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"` + input + `"}}`,
	}
}

var sseToolEnd = []string{
	`{"type":"content_block_stop","index":0}`,
	`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}`,
	`{"type":"message_stop"}`,
}

var sseDone = []string{
	`{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Done."}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`,
	`{"type":"message_stop"}`,
}

// runSSE runs a streamed session with the real Anthropic client against
// srv and returns the result, the events and the tool's run count.
func runSSE(t *testing.T, srv *sseServer) (Result, []trajectory.Event, int) {
	t.Helper()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	probe := newProbe("probe", false)
	retries := &Retries{}
	provider, err := llm.NewAnthropic(llm.Options{Model: "m", APIKey: "test-key", BaseURL: hs.URL, MaxRetries: 2, OnRetry: retries.OnRetry})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rec := recorder.New(&buf, recorder.Options{})
	cfg := baseConfig(t, t.TempDir(), nil, rec, probe)
	cfg.Provider, cfg.Stream, cfg.Retries = provider, true, retries
	res, evs := runRecorded(t, cfg, rec, &buf)
	return res, evs, int(probe.runs.Load())
}

func TestAStreamCutAfterACallStartedIsNotRetriedSoTheCallNeverRunsTwice(t *testing.T) {
	// The first reply delivers a complete tool_use, then the connection
	// drops. A retry would send the call again (with a new id, which no
	// matching could catch): the client refuses to retry once a call was
	// handed on, and the session ends on the error.
	srv := &sseServer{replies: [][]string{
		append(append(sseToolUse("toolu_1", "a", false), `{"type":"content_block_stop","index":0}`), cut),
		append(sseToolUse("toolu_2", "a", false), sseToolEnd...),
		sseDone,
	}}
	res, evs, runs := runSSE(t, srv)
	if srv.requests != 1 {
		t.Fatalf("the server saw %d requests, want 1: a stream that handed on a call must not be retried", srv.requests)
	}
	if runs != 1 || res.Reason != trajectory.EndError || res.ErrorCode != "model_connection" {
		t.Fatalf("tool ran %d times, session ended %s/%s; want once, error/model_connection", runs, res.Reason, res.ErrorCode)
	}
	calls := payloads[*trajectory.ToolCall](evs)
	if len(calls) != 1 || calls[0].StreamOffsetMs == nil {
		t.Fatalf("tool_calls %+v, want one started while the reply streamed", calls)
	}
}

func TestAStreamCutInsideAToolUseNeverStartsItAndIsRetried(t *testing.T) {
	// The first reply is cut in the middle of the tool_use's input: the
	// call is incomplete, so nothing starts and nothing was handed on;
	// the retry's call runs once.
	srv := &sseServer{replies: [][]string{
		append(sseToolUse("toolu_1", "a", true), cut),
		append(sseToolUse("toolu_2", "b", false), sseToolEnd...),
		sseDone,
	}}
	res, evs, runs := runSSE(t, srv)
	if srv.requests != 3 || runs != 1 || res.Reason != trajectory.EndTurn {
		t.Fatalf("%d requests, tool ran %d times, ended %s; want 3 requests, one run, end_turn", srv.requests, runs, res.Reason)
	}
	calls := payloads[*trajectory.ToolCall](evs)
	if len(calls) != 1 || calls[0].ToolUseID != "toolu_2" {
		t.Fatalf("tool_calls %+v, want only the retried reply's toolu_2", calls)
	}
}

func TestACallHeldBackByTheEmptyInputDefenseKeepsLaterCallsFromStartingEarly(t *testing.T) {
	// The empty read is not run (the defense asks again); the probe after
	// it must not start before the reply ends, or it would overtake a
	// call whose fate the loop decides on the whole reply.
	probe := newProbe("probe", true)
	empty := trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: "toolu_1", Name: "read", Input: json.RawMessage(`{}`)}
	p := &pacedProvider{probe: probe, patience: 200 * time.Millisecond, turns: []pacedTurn{
		{content: []trajectory.ContentBlock{empty, probeUse("toolu_2", "probe", "a")}, waitStarts: 1},
		{content: []trajectory.ContentBlock{text("Done.")}},
	}}
	_, evs := runPaced(t, p, t.Context(), nil)
	if p.overlap[0] {
		t.Fatal("the call after a held-back one started while the reply streamed")
	}
	calls := payloads[*trajectory.ToolCall](evs)
	if len(calls) != 1 || calls[0].ToolUseID != "toolu_2" || calls[0].StreamOffsetMs != nil || calls[0].Index != 0 {
		t.Fatalf("tool_calls %+v, want only toolu_2, index 0, started after the reply", calls)
	}
	if got := joined(triggers(evs, trajectory.DefenseEmptyInputRetry)); got != "retry" {
		t.Fatalf("empty_input_retry actions %q, want retry", got)
	}
}
