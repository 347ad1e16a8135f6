package executor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/hooks"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/trajectory"
)

// gateTool is a real tool whose calls block until the test opens their
// gate, so a test can hold calls in the executing state and look at the
// scheduler without timing anything.
type gateTool struct {
	name  string
	safe  bool
	mu    sync.Mutex
	gates map[string]chan struct{}
	runs  atomic.Int32
	order []string
}

type gateInput struct {
	Key string `json:"key"`
}

func newGate(name string, safe bool) *gateTool {
	return &gateTool{name: name, safe: safe, gates: map[string]chan struct{}{}}
}

func (g *gateTool) gate(key string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.gates[key]
	if !ok {
		c = make(chan struct{})
		g.gates[key] = c
	}
	return c
}

func (g *gateTool) open(key string) { close(g.gate(key)) }

func (g *gateTool) Spec() tools.Spec {
	return tools.Spec{Name: g.name, Description: "A test tool that waits for its gate.", Schema: tools.SchemaFor[gateInput](),
		ReadOnly: g.safe, Display: trajectory.DisplayFull, Source: trajectory.ToolBuiltin}
}

func (g *gateTool) ConcurrencySafe(json.RawMessage) bool { return g.safe }

func (g *gateTool) Run(ctx context.Context, _ *tools.Env, input json.RawMessage) (tools.Result, error) {
	var in gateInput
	if err := json.Unmarshal(input, &in); err != nil {
		return tools.Result{}, err
	}
	g.runs.Add(1)
	g.mu.Lock()
	g.order = append(g.order, in.Key)
	g.mu.Unlock()
	select {
	case <-g.gate(in.Key):
		return tools.Result{Output: "done " + in.Key}, nil
	case <-ctx.Done():
		return tools.Result{}, ctx.Err()
	}
}

func gateUse(id, tool, key string) trajectory.ContentBlock {
	return use(id, tool, `{"key":"`+key+`"}`)
}

// streamTurn records the model_request of a streamed turn and returns
// its scheduler; respond records the model_response once the "reply" is
// complete, as the loop does.
func (h *harness) streamTurn() *Stream {
	h.turn++
	h.rec.Emit(h.turn, &trajectory.ModelRequest{SystemHash: trajectory.Hash(nil), ToolsHash: trajectory.Hash(nil), ToolNames: []string{},
		MessageHashes: []string{trajectory.Hash([]byte{byte(h.turn)})}, PrefixHash: trajectory.PrefixHashOf([]string{trajectory.Hash([]byte{byte(h.turn)})}),
		NewMessages: []trajectory.Message{}, Stream: true})
	return h.ex.NewStream(context.Background(), h.turn, time.Now())
}

func (h *harness) respond(st *Stream, uses ...trajectory.ContentBlock) {
	st.Received()
	h.rec.Emit(h.turn, &trajectory.ModelResponse{Content: uses, StopReason: trajectory.StopToolUse, Usage: trajectory.Usage{}})
}

// waitFor polls the scheduler until cond holds; the calls it waits for
// are held by gates, so this is waiting for goroutines, not for time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestStreamStartsSafeCallsTogetherAndAnUnsafeOneAloneInOrder(t *testing.T) {
	reader, writer := newGate("peek", true), newGate("poke", false)
	h := newHarness(t, harnessOpts{extra: []tools.Tool{reader, writer}, perm: permission.Config{Allow: []string{"peek", "poke"}}})
	st := h.streamTurn()
	uses := []trajectory.ContentBlock{gateUse("toolu_1", "peek", "r1"), gateUse("toolu_2", "peek", "r2"),
		gateUse("toolu_3", "poke", "w"), gateUse("toolu_4", "peek", "r3")}
	for _, u := range uses {
		if !st.Offer(u) {
			t.Fatalf("offer of %s refused", u.ID)
		}
	}
	want := []CallState{StateExecuting, StateExecuting, StateQueued, StateQueued}
	if got := st.States(); !slices.Equal(got, want) {
		t.Fatalf("states after the offers = %v, want %v: two safe calls run together, the unsafe one waits, the safe one after it does not overtake it", got, want)
	}
	reader.open("r1")
	reader.open("r2")
	waitFor(t, "the unsafe call runs alone", func() bool { return st.States()[2] == StateExecuting })
	if got := st.States(); got[3] != StateQueued {
		t.Fatalf("the safe call after the unsafe one is %v while it runs, want queued", got[3])
	}
	writer.open("w")
	waitFor(t, "the last call runs", func() bool { return st.States()[3] != StateQueued })
	reader.open("r3")
	h.respond(st, uses...)
	res := st.Collect(uses)
	for i, r := range res {
		if r.ToolUseID != uses[i].ID || r.IsError {
			t.Fatalf("result %d = %+v, want a success for %s", i, r, uses[i].ID)
		}
		h.calls++
	}
	if got := st.States(); !slices.Equal(got, []CallState{StateYielded, StateYielded, StateYielded, StateYielded}) {
		t.Fatalf("states after Collect = %v, want all yielded", got)
	}
	evs := h.events()
	calls := payloads[*trajectory.ToolCall](evs)
	for i, c := range calls {
		if c.StreamOffsetMs == nil {
			t.Errorf("tool_call %s has no stream_offset_ms though it started before the response was complete", c.ToolUseID)
		}
		if wantBatch := []int{0, 0, 1, 2}[i]; c.Batch != wantBatch || c.Index != i {
			t.Errorf("tool_call %d: index %d batch %d, want index %d batch %d (safe calls batched together, an unsafe one alone)", i, c.Index, c.Batch, i, wantBatch)
		}
	}
}

func TestStreamHandsResultsOutInCallOrderWhenALaterCallFinishesFirst(t *testing.T) {
	g := newGate("peek", true)
	h := newHarness(t, harnessOpts{extra: []tools.Tool{g}, perm: permission.Config{Allow: []string{"peek"}}})
	st := h.streamTurn()
	uses := []trajectory.ContentBlock{gateUse("toolu_1", "peek", "slow"), gateUse("toolu_2", "peek", "fast")}
	st.Offer(uses[0])
	st.Offer(uses[1])
	g.open("fast")
	waitFor(t, "the second call completes", func() bool { return st.States()[1] == StateCompleted })
	if s := st.States()[0]; s != StateExecuting {
		t.Fatalf("first call is %v, want executing", s)
	}
	g.open("slow")
	h.respond(st, uses...)
	res := st.Collect(uses)
	h.calls += 2
	if res[0].ToolUseID != "toolu_1" || res[1].ToolUseID != "toolu_2" || res[0].Content != "done slow" {
		t.Fatalf("results %+v are not in call order", res)
	}
	evs := h.events()
	var order []string
	for _, r := range payloads[*trajectory.ToolResult](evs) {
		order = append(order, r.ToolUseID)
	}
	if !slices.Equal(order, []string{"toolu_1", "toolu_2"}) {
		t.Fatalf("tool_result events in order %v, want the calls' order", order)
	}
}

func TestStreamNeverRunsARepeatedToolUseTwice(t *testing.T) {
	g := newGate("peek", true)
	h := newHarness(t, harnessOpts{extra: []tools.Tool{g}, perm: permission.Config{Allow: []string{"peek"}}})
	st := h.streamTurn()
	u := gateUse("toolu_1", "peek", "once")
	if !st.Offer(u) {
		t.Fatal("first offer refused")
	}
	if st.Offer(u) {
		t.Fatal("a repeated tool_use id was taken again")
	}
	g.open("once")
	h.respond(st, u)
	res := st.Collect([]trajectory.ContentBlock{u})
	h.calls++
	if n := g.runs.Load(); n != 1 || len(res) != 1 {
		t.Fatalf("the tool ran %d times with %d results, want once", n, len(res))
	}
	if n := len(payloads[*trajectory.ToolCall](h.events())); n != 1 {
		t.Fatalf("%d tool_call events, want 1", n)
	}
}

func TestStreamNeverTakesACutOffToolUse(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	st := h.streamTurn()
	cut := trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: "toolu_1", Name: "write", PartialInput: `{"file_path":"x.txt","cont`}
	if st.Offer(cut) {
		t.Fatal("a tool_use without complete input was taken")
	}
	if st.Offered("toolu_1") {
		t.Fatal("the cut tool_use is recorded as offered")
	}
	st.Abandon("the reply failed")
	h.rec.Emit(h.turn, &trajectory.ModelError{ErrorKind: trajectory.ModelConnection, Attempt: 1})
	if evs := h.events(); len(payloads[*trajectory.ToolCall](evs)) != 0 {
		t.Fatal("a tool_call was recorded for a cut-off tool_use")
	}
	if _, err := os.Stat(filepath.Join(h.ws, "x.txt")); err == nil {
		t.Fatal("the cut-off write ran")
	}
}

func TestAFailedReplyAbandonsQueuedCallsAndKeepsTheRunningOnesResults(t *testing.T) {
	reader, writer := newGate("peek", true), newGate("poke", false)
	h := newHarness(t, harnessOpts{extra: []tools.Tool{reader, writer}, perm: permission.Config{Allow: []string{"peek", "poke"}}})
	st := h.streamTurn()
	st.Offer(gateUse("toolu_1", "peek", "r"))
	st.Offer(gateUse("toolu_2", "poke", "w"))
	// The reply fails while the read still runs: the queued write must
	// never start, even once the read is done. The read is let finish
	// only after Abandon closed the write; were it done first, the write
	// would rightly start (nothing had failed yet).
	abandoned := make(chan map[string]trajectory.ContentBlock)
	go func() { abandoned <- st.Abandon("the model's reply failed before this call could start") }()
	for deadline := time.Now().Add(10 * time.Second); st.States()[1] != StateCompleted; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Abandon did not close the queued call: states %v", st.States())
		}
	}
	reader.open("r")
	res := <-abandoned
	h.rec.Emit(h.turn, &trajectory.ModelError{ErrorKind: trajectory.ModelConnection, Attempt: 1})
	if writer.runs.Load() != 0 {
		t.Fatal("the queued call ran after the reply failed")
	}
	if r := res["toolu_1"]; r.IsError || r.Content != "done r" {
		t.Fatalf("running call's result %+v, want its real output", r)
	}
	if r := res["toolu_2"]; !r.IsError || !strings.Contains(r.Content, "Not run") {
		t.Fatalf("queued call's result %+v, want a synthetic not-run error", r)
	}
	h.calls = 2 // session_end counts both tool_calls; the harness counts failures from the events
	evs := h.events()
	if f := failureOf(t, evs, "toolu_2"); f.FailureKind != trajectory.FailureAborted || f.ErrorCode != AbandonedCode {
		t.Fatalf("abandoned call's failure %+v, want aborted/%s", f, AbandonedCode)
	}
	if n := len(payloads[*trajectory.ToolResult](evs)); n != 0 {
		t.Fatalf("%d tool_result events for a reply that has no model_response", n)
	}
}

func TestStreamedCallsFireEachHookOnce(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "hooks.log")
	script := filepath.Join(dir, "log.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho \"$1\" >> "+log+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	g := newGate("peek", true)
	h := newHarness(t, harnessOpts{extra: []tools.Tool{g}, perm: permission.Config{Allow: []string{"peek"}},
		hooks: []hooks.Config{{Name: "pre", Event: "PreToolUse", Matcher: "peek", Command: script + " pre"},
			{Name: "post", Event: "PostToolUse", Matcher: "peek", Command: script + " post"}}})
	st := h.streamTurn()
	uses := []trajectory.ContentBlock{gateUse("toolu_1", "peek", "a"), gateUse("toolu_2", "peek", "b")}
	for _, u := range uses {
		st.Offer(u)
	}
	g.open("a")
	g.open("b")
	h.respond(st, uses...)
	st.Collect(uses)
	h.calls += 2
	evs := h.events()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	slices.Sort(lines)
	if !slices.Equal(lines, []string{"post", "post", "pre", "pre"}) {
		t.Fatalf("hook runs %v, want each hook once per call", lines)
	}
	if n := len(payloads[*trajectory.HookRun](evs)); n != 4 {
		t.Fatalf("%d hook_run events, want 4", n)
	}
}

func TestCallsStartedAfterTheReplyCarryNoStreamOffset(t *testing.T) {
	writer := newGate("poke", false)
	h := newHarness(t, harnessOpts{extra: []tools.Tool{writer}, perm: permission.Config{Allow: []string{"poke"}}})
	st := h.streamTurn()
	uses := []trajectory.ContentBlock{gateUse("toolu_1", "poke", "a"), gateUse("toolu_2", "poke", "b")}
	st.Offer(uses[0])
	h.respond(st, uses...)
	writer.open("a")
	writer.open("b")
	st.Collect(uses)
	h.calls += 2
	calls := payloads[*trajectory.ToolCall](h.events())
	if calls[0].StreamOffsetMs == nil || calls[1].StreamOffsetMs != nil {
		t.Fatalf("offsets %v %v: want one on the call started while streaming and none on the call started after the response", calls[0].StreamOffsetMs, calls[1].StreamOffsetMs)
	}
}
