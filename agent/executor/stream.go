package executor

import (
	"context"
	"sync"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// CallState is where a call of a streamed turn is in the scheduler: one of
// four states.
type CallState int

// The four states. Completed and yielded are both final: a call may
// complete before an earlier one, but its result is handed out (yielded)
// only in call order, because all results go back in one message.
const (
	// StateQueued: the tool_use is complete and waits for the start
	// condition (a non-safe call before it, or running calls it may not
	// join).
	StateQueued CallState = iota
	// StateExecuting: the call is in the pipeline.
	StateExecuting
	// StateCompleted: the call has its result, not yet collected.
	StateCompleted
	// StateYielded: the result was collected for the model.
	StateYielded
)

// String names the state.
func (s CallState) String() string {
	switch s {
	case StateQueued:
		return "queued"
	case StateExecuting:
		return "executing"
	case StateCompleted:
		return "completed"
	case StateYielded:
		return "yielded"
	}
	return "unknown"
}

// AbandonedCode is the error_code of the tool_failure of a call whose
// tool_use was complete but which had not started when the scheduler was
// told to stop (the reply failed, or the turn ends without running its
// calls): it never ran.
const AbandonedCode = "stream_abandoned"

// Stream schedules the calls of one streamed assistant turn as their
// tool_use blocks complete, while the model is still writing.
// It decides only when each call starts; every call goes through the same
// pipeline as Execute's (call.run: hooks, permission, validation,
// snapshot, the tool, shaping, the single exit), so streaming changes
// timing and never what a call does.
//
// The start condition: a call starts when nothing is running,
// or when it and every running call are concurrency-safe and fewer than
// MaxConcurrent run. Calls start strictly in their order — a call never
// overtakes a queued one — which makes the schedule the incremental form
// of the partition into batches: [read a, edit a, read a] still runs as three
// windows in that order. Context modifiers are applied, in call order,
// whenever the running set empties (the end of a window), as Execute
// applies them at the end of a batch.
//
// A Stream serves one turn: Offer during the reply, Received when the
// reply is complete, then Collect (run what is left and hand out the
// results in order) or Abandon (start nothing more). All methods are
// safe to call from the goroutine that reads the reply while calls run.
type Stream struct {
	t     *turn
	start time.Time // when the request was sent: stream_offset_ms counts from here

	mu        sync.Mutex
	calls     []*call
	states    []CallState
	byID      map[string]int
	next      int // the first call not yet taken off the queue
	running   int
	unsafe    bool // a non-safe call is running
	window    []*call
	streaming bool // the reply has not completed: a start now is recorded with its offset
	stopped   bool // Abandon was called: nothing starts any more
	batch     int
	last      *call // the call announced last, for batchOf
	wg        sync.WaitGroup
}

// NewStream returns the scheduler of one streamed turn. requestStart is
// when the model request was sent; ctx is the caller's (a user abort
// cancels it). Like Execute, it must not overlap another turn.
func (ex *Executor) NewStream(ctx context.Context, turnNumber int, requestStart time.Time) *Stream {
	t := &turn{ex: ex, number: turnNumber, ctx: ctx, bashCancel: map[*call]context.CancelCauseFunc{}}
	return &Stream{t: t, start: requestStart, byID: map[string]int{}, streaming: true}
}

// Offer hands the scheduler a tool_use block whose input is complete
// (llm.StreamEvent.ToolUse); it starts at once when the start condition
// holds, else it is queued. A block whose id was offered before — a
// reply that repeats a call after a retry — is matched to the first and
// never runs twice; Offer then reports false. A block with no input (cut
// off) is never taken: only a complete tool_use may start.
func (s *Stream) Offer(u trajectory.ContentBlock) bool {
	if len(u.Input) == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	if _, dup := s.byID[u.ID]; dup {
		return false
	}
	s.queue(u)
	s.pump()
	return true
}

// Offered reports whether a call with this id was offered.
func (s *Stream) Offered(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.byID[id]
	return ok
}

// Received tells the scheduler that the reply is complete: calls that
// start from now on are recorded without stream_offset_ms, because their
// tool_call follows the model_response.
func (s *Stream) Received() {
	s.mu.Lock()
	s.streaming = false
	s.mu.Unlock()
}

// queue adds a call in the queued state; s.mu is held.
func (s *Stream) queue(u trajectory.ContentBlock) *call {
	c := s.t.ex.newCall(s.t, len(s.calls), u)
	// A hook may turn a safe call into an unsafe one; such a call takes
	// the turn's lock exclusively, as it does in a batch.
	c.exclusive = &s.t.streamLock
	s.byID[c.id] = len(s.calls)
	s.calls = append(s.calls, c)
	s.states = append(s.states, StateQueued)
	s.wg.Add(1)
	return c
}

// canStart says whether a call may start now; s.mu is held.
func (s *Stream) canStart(c *call) bool {
	if s.running == 0 {
		return true
	}
	return c.safe && !s.unsafe && s.running < s.t.ex.cfg.MaxConcurrent
}

// pump starts the queued calls, in order, while the head of the queue
// may start; s.mu is held.
func (s *Stream) pump() {
	for !s.stopped && s.next < len(s.calls) && s.canStart(s.calls[s.next]) {
		i := s.next
		s.next++
		s.launch(i)
	}
}

// batchOf numbers a call's partition batch with partition's rule
// (joinsBatch): calls leave the queue in order, so the call announced
// before this one is the one before it. s.mu is held.
func (s *Stream) batchOf(c *call) int {
	if s.last != nil && !joinsBatch(s.last, c) {
		s.batch++
	}
	s.last = c
	return s.batch
}

// announce records the tool_call of a call leaving the queue. While the
// reply streams it carries stream_offset_ms, which is what tells a reader
// that this tool_call precedes its model_response. s.mu is held.
func (s *Stream) announce(c *call) {
	ev := &trajectory.ToolCall{ToolRef: c.ref(), Input: c.rawInput, Index: c.index, Batch: s.batchOf(c), ConcurrencySafe: c.safe}
	if s.streaming {
		ms := max(0, trajectory.Millis(time.Since(s.start)))
		ev.StreamOffsetMs = &ms
	}
	s.t.ex.cfg.Sink.Emit(s.t.number, ev)
}

// launch moves call i from queued to executing; s.mu is held.
func (s *Stream) launch(i int) {
	c := s.calls[i]
	s.announce(c)
	s.states[i] = StateExecuting
	s.running++
	if !c.safe {
		s.unsafe = true
	}
	s.window = append(s.window, c)
	go func() {
		c.run()
		s.complete(i)
	}()
}

// complete moves call i to completed, closes the window when it was the
// last one running, and starts what may start now.
func (s *Stream) complete(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls[i]
	s.states[i] = StateCompleted
	s.running--
	if !c.safe {
		s.unsafe = false
	}
	if s.running == 0 {
		s.closeWindow()
	}
	s.pump()
	s.wg.Done()
}

// closeWindow applies the modifiers of the calls that ran together, in
// call order, once none of them runs; s.mu is held.
func (s *Stream) closeWindow() {
	for _, c := range s.window {
		if c.modify != nil {
			c.modify(s.t.ex.cfg.Env)
		}
	}
	s.window = s.window[:0]
}

// Collect runs the calls of the turn that are still to run and returns one
// tool_result block per use, in the uses' order, emitting the tool_result
// events in that order, as Execute does. uses is the turn's final list of
// calls: those offered during the reply are matched by id and never run
// again; the others are queued now, in order. Collect waits for every
// call, including an offered one that uses leaves out (it ran; its result
// is not returned).
func (s *Stream) Collect(uses []trajectory.ContentBlock) []trajectory.ContentBlock {
	s.mu.Lock()
	s.streaming = false
	idx := make([]int, len(uses))
	for k, u := range uses {
		if i, ok := s.byID[u.ID]; ok {
			idx[k] = i
			continue
		}
		if s.stopped {
			// Collect after Abandon: the call is abandoned like the queue.
			c := s.queue(u)
			s.next = len(s.calls)
			s.abandon(len(s.calls)-1, c, "the turn stopped before it could start")
			idx[k] = len(s.calls) - 1
			continue
		}
		s.queue(u)
		idx[k] = len(s.calls) - 1
	}
	s.pump()
	s.mu.Unlock()
	s.wg.Wait()

	s.mu.Lock()
	defer s.mu.Unlock()
	results := make([]trajectory.ContentBlock, len(uses))
	for k, i := range idx {
		results[k] = s.yield(i)
	}
	return results
}

// yield hands out the result of call i and emits its tool_result; s.mu is held.
func (s *Stream) yield(i int) trajectory.ContentBlock {
	c := s.calls[i]
	s.states[i] = StateYielded
	s.t.ex.cfg.Sink.Emit(s.t.number, &trajectory.ToolResult{ToolRef: c.ref(), Text: c.text, IsError: c.isError, Display: c.display})
	return c.modelResult()
}

// Abandon stops the turn's scheduling: the queued calls never start and
// are closed as not run (tool_call, then tool_failure aborted with
// AbandonedCode, then tool_end), the running ones are waited for. why
// ends the sentence "Not run: ..." the model would read. It returns the
// offered calls' results by id, without emitting tool_result events: the
// caller emits them when a model_response holds the tool_uses, and not
// at all when the reply failed. A second Abandon returns the same results.
func (s *Stream) Abandon(why string) map[string]trajectory.ContentBlock {
	s.mu.Lock()
	if !s.stopped {
		s.stopped = true
		for s.next < len(s.calls) {
			i := s.next
			s.next++
			s.abandon(i, s.calls[i], why)
		}
	}
	s.mu.Unlock()
	s.wg.Wait()

	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]trajectory.ContentBlock, len(s.calls))
	for _, c := range s.calls {
		out[c.id] = c.modelResult()
	}
	return out
}

// abandon closes queued call i as never run; s.mu is held.
func (s *Stream) abandon(i int, c *call, why string) {
	s.announce(c)
	c.finish(outcome{kind: trajectory.FailureAborted, code: AbandonedCode, text: "Not run: " + why + "."})
	s.states[i] = StateCompleted
	s.wg.Done()
}

// Settle ends a turn whose reply was received but whose calls are not
// all to run (the session stops: a refusal, a cut-off reply): like Abandon
// it starts nothing more and waits for the running calls, then it emits
// the tool_result of every offered call, in call order, since the
// model_response holds their tool_uses. It returns the uses that were
// never offered, which the caller answers itself.
func (s *Stream) Settle(why string, uses []trajectory.ContentBlock) []trajectory.ContentBlock {
	s.Abandon(why)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.calls {
		if s.states[i] != StateYielded {
			s.yield(i)
		}
	}
	var rest []trajectory.ContentBlock
	for _, u := range uses {
		if _, ok := s.byID[u.ID]; !ok {
			rest = append(rest, u)
		}
	}
	return rest
}

// States returns each offered call's state, in call order.
func (s *Stream) States() []CallState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CallState(nil), s.states...)
}
