package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

// droppedOutput replaces a tool result's content when compaction drops it.
const droppedOutput = "[output removed to save context; re-run the tool if needed]"

// summaryInstruction is appended to the summary request: the model is asked
// for the summary as text, with no tool call, so that the request is
// answered in one reply.
const summaryInstruction = "<harness-reminder>The conversation is about to be shortened to fit the context window. " +
	"Write a summary of everything above that lets you continue the work without it: the user's requests in their own words, " +
	"what you found, the files you read and changed and how, the commands you ran and their results, the errors met and how they were fixed, " +
	"and what remains to be done. Reply with the summary as text only; do not call any tool.</harness-reminder>"

// summaryOpen and summaryClose label the summary in the shortened history,
// so that the model reads it as the harness's, not as the user's words.
const (
	summaryOpen  = "<harness-summary>\nEarlier turns of this conversation were replaced by this summary, written by you, to save context:\n\n"
	summaryClose = "\n</harness-summary>"
)

// contextSize is the size of the context the next request would send, and
// how it was measured: the usage the API reported for the last reply plus
// the estimate of the messages added after that reply, or, when no reply
// reported usage since the history last changed shape, the estimate of
// the whole history.
func (s *session) contextSize() (int64, trajectory.TokenMeasure) {
	if s.lastUsage != nil && s.usageMark <= len(s.history) {
		if reported := totalTokens(*s.lastUsage); reported > 0 {
			added := int64(0)
			if s.usageMark+1 < len(s.history) {
				// The reply itself is counted in its output tokens.
				added = estimateTokens(s.history[s.usageMark+1:])
			}
			return reported + added, trajectory.MeasuredUsage
		}
	}
	return estimateTokens(s.history), trajectory.MeasuredEstimate
}

// compact relieves context pressure before a request ("used /
// window > threshold: compact first, do not just die"). It drops the
// content of the oldest tool results until the context is at half the
// threshold; under the summarize strategy, when that is not enough, it asks
// the model for a summary of the older turns and replaces them with it.
// Each step that changed the history is recorded, and the deferred tools
// are announced again: their announcements in the history may be gone.
func (s *session) compact(ctx context.Context) {
	threshold, window, source := s.cfg.Limits.compactAt(s.model, s.cfg.Models)
	before, measure := s.contextSize()
	if before <= threshold {
		return
	}
	base := trajectory.Compaction{MeasuredBy: measure, ThresholdTokens: threshold, ContextWindow: window, WindowSource: source}
	size, compacted := before, false
	if after, dropped := s.dropOutputs(before, threshold/2); dropped > 0 {
		ev := base
		ev.Strategy, ev.ResultsDropped = trajectory.CompactDrop, dropped
		ev.MessagesBefore, ev.MessagesAfter = len(s.history), len(s.history)
		ev.TokensBefore, ev.TokensAfter = before, after
		s.emit(&ev)
		size, compacted = after, true
	}
	if s.cfg.Limits.Compaction == trajectory.CompactSummarize && size > threshold {
		if ev, ok := s.summarize(ctx, size); ok {
			ev.MeasuredBy, ev.ThresholdTokens, ev.ContextWindow, ev.WindowSource = measure, threshold, window, source
			s.emit(ev)
			compacted = true
		}
	}
	if !compacted {
		return
	}
	// The reported usage measured a history that is gone.
	s.lastUsage = nil
	if deferred := s.reg.Deferred(); len(deferred) > 0 {
		var names []string
		for _, t := range deferred {
			if n := t.Spec().Name; s.offered == nil || s.offered(n) {
				names = append(names, n)
			}
		}
		if len(names) > 0 {
			s.rem.add(kindDeferredTools, fmt.Sprintf("%s:%d:%d", kindDeferredTools, s.turn, before),
				"Earlier messages were shortened to save context. These tools are available but not loaded; load one with tool_search (select:NAME) before calling it: "+strings.Join(names, ", ")+".")
		}
	}
}

// dropOutputs replaces the content of the oldest tool results with a
// placeholder until the context, of size tokens, is at target; it returns
// the size after (tokens less the estimated size of what was removed) and
// how many results it dropped. The last message holds the results the
// model has not seen yet, which are never dropped.
func (s *session) dropOutputs(size, target int64) (int64, int) {
	dropped := 0
	for i := 0; i < len(s.history)-1 && size > target; i++ {
		m := &s.history[i]
		if m.Role != trajectory.RoleUser {
			continue
		}
		// The previous request shares the blocks; it must keep its
		// content, or the next model_request would not show the change.
		m.Content = slices.Clone(m.Content)
		for j := range m.Content {
			b := &m.Content[j]
			if b.Type != trajectory.BlockToolResult || len(b.Content) <= len(droppedOutput) {
				continue
			}
			size -= int64(len(b.Content)-len(droppedOutput)) / 4
			b.Content = droppedOutput
			dropped++
		}
	}
	return max(size, 0), dropped
}

// summarize asks the model, in a request of its own, for a summary of the
// history before its last assistant message, and replaces those messages
// with the summary. The request and its reply are recorded as a turn like
// any other (so every model call has its model_request and counts against
// the limits), and the compaction event names that turn. It gives up,
// leaving the history as it is, when there are too few turns to
// summarise, when the turn limit leaves no room for the request after it,
// or when the reply holds no text.
func (s *session) summarize(ctx context.Context, size int64) (*trajectory.Compaction, bool) {
	k := -1
	for i := len(s.history) - 1; i > 0; i-- {
		if s.history[i].Role == trajectory.RoleAssistant {
			k = i
			break
		}
	}
	// At least one exchange before the kept tail, or there is nothing to
	// summarise.
	if k < 2 {
		return nil, false
	}
	if m := s.cfg.Limits.MaxTurns; m > 0 && s.turn-s.promptTurn+2 > m {
		return nil, false
	}
	older := slices.Clone(s.history[:k])
	last := &older[len(older)-1]
	last.Content = append(slices.Clone(last.Content), trajectory.ContentBlock{Type: trajectory.BlockText, Text: summaryInstruction})
	// The same system prompt and tools as the session's requests: a tool
	// history needs its tools declared (Anthropic refuses tool_use blocks
	// without them), and the shared prefix keeps the prompt cache warm.
	req := llm.Request{Model: s.cfg.Model, System: s.system, Tools: toolDefs(s.reg, s.offered), Messages: older, MaxTokens: s.cfg.Limits.MaxTokens}
	s.turn++
	turn := s.turn
	resp, err := s.send(ctx, req)
	if err != nil {
		return nil, false
	}
	var texts []string
	for _, b := range resp.Content {
		if b.Type == trajectory.BlockText && strings.TrimSpace(b.Text) != "" {
			texts = append(texts, b.Text)
		}
	}
	// A summary request runs no tools; every tool_use still gets its answer.
	s.notRun(resp.ToolUses(), "a summary request runs no tools")
	if len(texts) == 0 {
		return nil, false
	}
	messagesBefore, estimateBefore := len(s.history), estimateTokens(s.history)
	summary := trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText,
		Text: summaryOpen + strings.Join(texts, "\n") + summaryClose}}}
	s.history = append([]trajectory.Message{summary}, s.history[k:]...)
	after := max(size-(estimateBefore-estimateTokens(s.history)), 0)
	return &trajectory.Compaction{Strategy: trajectory.CompactSummarize, MessagesBefore: messagesBefore, MessagesAfter: len(s.history),
		TokensBefore: size, TokensAfter: after, SummaryTurn: turn}, true
}

// estimateTokens is the history's size at four bytes a token.
func estimateTokens(history []trajectory.Message) int64 {
	b, err := json.Marshal(history)
	if err != nil {
		return 0
	}
	return int64(len(b)) / 4
}
