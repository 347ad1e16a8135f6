package agent

import (
	"context"
	"time"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

// Streaming tool execution. When the session streams and
// Config.BatchTools is off, each tool_use the provider reports complete
// is offered to the turn's executor.Stream while the model is still
// writing, so a call may run hidden behind the rest of the reply. The
// scheduler only times the calls; they go through the executor's one
// pipeline. The loop keeps every decision it makes on the whole reply:
// a call starts early only when handle would certainly run it (complete
// input, not an empty-input call the defense holds back), and once one
// block is held back no later block starts early, so the early calls are
// always the first calls handle runs, in order.

// streamTools reports whether this session starts calls during the reply.
func (s *session) streamTools() bool { return s.cfg.Stream && !s.cfg.BatchTools }

// beginStream returns the onEvent of a streamed request: it passes every
// event on to Config.OnStream and offers the complete tool_use blocks to
// a new executor.Stream for this turn.
func (s *session) beginStream(ctx context.Context, requestStart time.Time) func(llm.StreamEvent) {
	user := s.cfg.OnStream
	if !s.streamTools() {
		s.stream = nil
		if user == nil {
			return func(llm.StreamEvent) {}
		}
		return user
	}
	s.stream = s.ex.NewStream(ctx, s.turn, requestStart)
	held := false
	return func(ev llm.StreamEvent) {
		if ev.ToolUse != nil && !held {
			if s.startsEarly(*ev.ToolUse) {
				// A repeated id (a reply that repeats a call) is matched
				// to the first offer and not run again.
				s.stream.Offer(*ev.ToolUse)
			} else {
				held = true
			}
		}
		if user != nil {
			user(ev)
		}
	}
}

// startsEarly reports whether handle is sure to run the block, so that it
// may start before the reply is complete. It mirrors handle's checks on
// one block: a block without input was cut off and never runs, and
// an empty input to a tool with required parameters is held back by the
// empty-input defense.
func (s *session) startsEarly(b trajectory.ContentBlock) bool {
	if len(b.Input) == 0 {
		return false
	}
	if t, ok := s.reg.Lookup(b.Name); ok && isEmptyObject(b.Input) && hasRequired(t) && s.def.on(trajectory.DefenseEmptyInputRetry) {
		return false
	}
	return true
}

// streamReceived tells the turn's scheduler that the reply is complete,
// before its model_response is recorded.
func (s *session) streamReceived() {
	if s.stream != nil {
		s.stream.Received()
	}
}

// streamFailed stops the turn's scheduler when the reply failed: calls
// already running finish and are recorded, queued ones are recorded as
// abandoned, nothing more starts. No tool_result is recorded, because no
// model_response holds the tool_uses.
func (s *session) streamFailed(ctx context.Context) {
	if s.stream == nil {
		return
	}
	why := "the model's reply failed before this call could start"
	if ctx.Err() != nil {
		why = "the user interrupted the turn before this call started"
	}
	s.stream.Abandon(why)
	s.stream = nil
}

// execute runs the turn's calls: through the stream's scheduler when the
// reply was streamed (matching the calls it already started), else as one
// batch.
func (s *session) execute(ctx context.Context, run []trajectory.ContentBlock) []trajectory.ContentBlock {
	if st := s.stream; st != nil {
		s.stream = nil
		return st.Collect(run)
	}
	return s.ex.Execute(ctx, s.turn, run)
}

// settleStream answers the calls the stream started when the turn ends
// without running its calls, and returns the uses it did not start.
func (s *session) settleStream(uses []trajectory.ContentBlock, why string) []trajectory.ContentBlock {
	st := s.stream
	if st == nil {
		return uses
	}
	s.stream = nil
	return st.Settle(why, uses)
}
