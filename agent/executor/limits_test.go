package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/trajectory"
)

// The cap of Config.MaxConcurrent (RETRACE_TOOL_MAX_CONCURRENT on the
// command line) is measured with a real tool that counts how many of its
// calls run at once. The second case is the control: the same six calls
// with room for all of them do overlap more than twice, so a cap that was
// ignored would show in the first case.
func TestTheConcurrencyCapBoundsAParallelBatch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cap      int
		atMost   int32
		atLeast  int32
		parallel bool
	}{
		{"A cap of 2 never lets more than 2 of 6 safe calls run at once, and 2 do run together.", 2, 2, 2, true},
		{"A cap of 6 lets more than 2 of the same 6 calls overlap, so the count sees a missing cap.", 6, 6, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var inFlight, maxSeen atomic.Int32
			nap := &fakeTool{name: "nap", safe: true, inFlight: &inFlight, maxSeen: &maxSeen}
			h := newHarness(t, harnessOpts{extra: []tools.Tool{nap}, perm: permission.Config{Allow: []string{"nap"}}, maxConcurrent: tc.cap})
			var uses []trajectory.ContentBlock
			for i := range 6 {
				uses = append(uses, use(fmt.Sprintf("toolu_%d", i), "nap", `{"sleep_ms":150,"say":"ok"}`))
			}
			res := h.turnWith(context.Background(), uses...)
			evs := h.events()
			for i, r := range res {
				if r.IsError || r.Content != "ok" {
					t.Fatalf("result %d = %+v, want ok", i, r)
				}
			}
			if batches := payloads[*trajectory.ToolCall](evs); batches[0].Batch != batches[5].Batch || !batches[0].ConcurrencySafe {
				t.Fatalf("the six calls were not one safe batch: %+v", batches)
			}
			if got := maxSeen.Load(); got > tc.atMost || got < tc.atLeast {
				t.Fatalf("at most %d calls ran at once with a cap of %d, want between %d and %d", got, tc.cap, tc.atLeast, tc.atMost)
			}
		})
	}
}

// The streamed scheduler holds the same cap: with calls held open by
// their gates, a third safe call waits queued until one of two finishes.
func TestTheConcurrencyCapBoundsAStreamedTurn(t *testing.T) {
	peek := newGate("peek", true)
	h := newHarness(t, harnessOpts{extra: []tools.Tool{peek}, perm: permission.Config{Allow: []string{"peek"}}, maxConcurrent: 2})
	st := h.streamTurn()
	uses := []trajectory.ContentBlock{gateUse("toolu_1", "peek", "a"), gateUse("toolu_2", "peek", "b"), gateUse("toolu_3", "peek", "c")}
	for _, u := range uses {
		if !st.Offer(u) {
			t.Fatalf("offer of %s refused", u.ID)
		}
	}
	if got, want := st.States(), []CallState{StateExecuting, StateExecuting, StateQueued}; !slices.Equal(got, want) {
		t.Fatalf("states with a cap of 2 = %v, want %v", got, want)
	}
	peek.open("a")
	waitFor(t, "the third call starts once the first is done", func() bool { return st.States()[2] != StateQueued })
	peek.open("b")
	peek.open("c")
	h.respond(st, uses...)
	for i, r := range st.Collect(uses) {
		if r.IsError {
			t.Fatalf("result %d = %+v", i, r)
		}
		h.calls++
	}
	h.events()
}

// A tool that outlives Config.Timeout gets the timeout failure kind and a
// result the model can act on; the next call of the turn and the next
// turn still run. The control case is the same tool finishing inside the
// timeout, which must succeed.
func TestACallPastItsTimeoutFailsAsATimeoutAndTheSessionGoesOn(t *testing.T) {
	nap := &fakeTool{name: "nap", safe: false}
	h := newHarness(t, harnessOpts{extra: []tools.Tool{nap}, perm: permission.Config{Allow: []string{"nap", "Bash(touch:*)", "Bash(sleep:*)"}},
		timeout: 300 * time.Millisecond})
	start := time.Now()
	res := h.turnWith(context.Background(),
		use("toolu_1", "nap", `{"sleep_ms":20000,"say":"late"}`),
		use("toolu_2", "bash", `{"command":"sleep 20"}`),
		use("toolu_3", "nap", `{"sleep_ms":10,"say":"in time"}`))
	next := h.turnWith(context.Background(), use("toolu_4", "bash", `{"command":"touch after"}`))
	took := time.Since(start)
	evs := h.events()
	for _, id := range []string{"toolu_1", "toolu_2"} {
		if f := failureOf(t, evs, id); f.FailureKind != trajectory.FailureTimeout {
			t.Errorf("%s failure = %+v, want kind timeout", id, f)
		}
	}
	if !res[0].IsError || !strings.Contains(res[0].Content, "Timed out after") {
		t.Errorf("the timed-out result = %q, want the timeout text", res[0].Content)
	}
	if res[2].IsError || res[2].Content != "in time" {
		t.Errorf("the call inside the timeout = %+v, want its output", res[2])
	}
	if next[0].IsError {
		t.Errorf("the next turn's call failed: %q", next[0].Content)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "after")); err != nil {
		t.Errorf("the next turn's command did not run: %v", err)
	}
	// Both sleeps were cut: a generous bound, far below their 40 s.
	if took > 15*time.Second {
		t.Errorf("the turn took %s; the timeout did not stop the calls", took)
	}
}

// The schema-not-sent hint: a deferred tool that is loaded but whose
// schema was not in the request that produced the call gets, on a
// validation failure, the note that its parameters were guessed; when the
// schema was sent, or the input is valid, there is no such note.
func TestAValidationFailureOfAToolWhoseSchemaWasNotSentSaysSo(t *testing.T) {
	const hint = "the parameters of web_fetch were not sent to you"
	for _, tc := range []struct {
		name     string
		sent     bool
		input    string
		wantErr  bool
		wantHint bool
	}{
		{"A bad input to a tool whose schema was not sent gets the hint.", false, `{"sleep_ms":"soon"}`, true, true},
		{"A bad input to a tool whose schema was sent gets no hint.", true, `{"sleep_ms":"soon"}`, true, false},
		{"A good input to a tool whose schema was not sent gets no hint.", false, `{"say":"hi"}`, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deferred := &deferredTool{fakeTool{name: "web_fetch", safe: true}}
			var asked []string
			h := newHarness(t, harnessOpts{extra: []tools.Tool{deferred}, perm: permission.Config{Allow: []string{"web_fetch"}},
				schemaSent: func(name string) bool { asked = append(asked, name); return tc.sent }})
			h.ex.reg.Activate("web_fetch")
			res := h.turnWith(context.Background(), use("toolu_1", "web_fetch", tc.input))
			evs := h.events()
			if res[0].IsError != tc.wantErr {
				t.Fatalf("result = %+v, want is_error %v", res[0], tc.wantErr)
			}
			if tc.wantErr {
				if f := failureOf(t, evs, "toolu_1"); f.FailureKind != trajectory.FailureInvalidInput {
					t.Fatalf("failure = %+v, want invalid_input", f)
				}
				if !strings.Contains(res[0].Content, "sleep_ms") {
					t.Errorf("the message %q does not name the field", res[0].Content)
				}
			}
			if got := strings.Contains(res[0].Content, hint); got != tc.wantHint {
				t.Fatalf("hint present %v, want %v, in %q", got, tc.wantHint, res[0].Content)
			}
			if tc.wantErr && !slices.Contains(asked, "web_fetch") {
				t.Fatalf("SchemaSent was asked about %v, not web_fetch", asked)
			}
		})
	}
}
